package sluice.testkit

import java.io.{BufferedReader, File, InputStream, InputStreamReader, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}
import java.util.Base64
import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.Using

import com.fasterxml.jackson.core.JsonFactory
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.{BeforeAndAfterAll, Suite}

/**
 * A record to produce. `None` and null header values are Kafka nulls; bytes are sent as they are.
 */
final case class ProducedRecord(
    key: Option[Array[Byte]] = None,
    value: Option[Array[Byte]] = None,
    partition: Option[Int] = None,
    timestamp: Option[Long] = None,
    headers: Seq[(String, Array[Byte])] = Nil)

object ProducedRecord {
  private def utf8(s: String): Array[Byte] =
    if (s == null) null else s.getBytes(StandardCharsets.UTF_8)

  /** A record with a UTF-8 key and value, partitioned by the key. */
  def of(key: String, value: String): ProducedRecord = text(Option(key), Option(value))

  /** A record with UTF-8 text; header values may be null. */
  def text(
      key: Option[String] = None,
      value: Option[String] = None,
      partition: Option[Int] = None,
      timestamp: Option[Long] = None,
      headers: Seq[(String, String)] = Nil): ProducedRecord =
    ProducedRecord(
      key.map(utf8),
      value.map(utf8),
      partition,
      timestamp,
      headers.map { case (k, v) => k -> utf8(v) })
}

/** A record read back by [[EmbeddedKafka.consume]]. */
final case class ConsumedRecord(
    partition: Int,
    offset: Long,
    timestamp: Long,
    key: Option[Array[Byte]],
    value: Option[Array[Byte]],
    headers: Seq[(String, Array[Byte])]) {
  def keyString: Option[String] = key.map(new String(_, StandardCharsets.UTF_8))
  def valueString: Option[String] = value.map(new String(_, StandardCharsets.UTF_8))
  def headerStrings: Seq[(String, String)] =
    headers.map { case (k, v) =>
      k -> (if (v == null) null else new String(v, StandardCharsets.UTF_8))
    }
}

/**
 * A real single-node Kafka broker (KRaft) in a child JVM (`sluice.testkit.KafkaBrokerMain` of the
 * `testkit` project), driven over its stdin/stdout. It listens on 127.0.0.1 only, keeps its data
 * in a temporary directory and stops when [[stop]] is called or this JVM exits.
 *
 * The broker's classpath is read from the file named by the system property
 * `sluice.brokerClasspathFile` (set by build.sbt for forked tests), or taken from the environment
 * variable `SLUICE_BROKER_CLASSPATH`.
 */
final class EmbeddedKafka(
    startTimeoutMs: Long = 60000,
    commandTimeoutMs: Long = 120000,
    jvmOptions: Seq[String] = EmbeddedKafka.DefaultJvmOptions,
    /** The main class and its arguments: another process speaking the same protocol (a cluster). */
    main: Seq[String] = Seq(EmbeddedKafka.MainClass)) {
  import EmbeddedKafka._

  private var process: Process = _
  private var stdin: PrintStream = _
  @volatile private var bootstrap: String = _
  private var workDir: Path = _
  private var fileCounter = 0
  private val stdout = new LinkedBlockingQueue[Option[String]]()
  private val stderrTail = mutable.Queue.empty[String]
  private var shutdownHook: Thread = _

  /** Milliseconds from launching the broker's JVM until it accepted clients. */
  @volatile var startupMillis: Long = -1

  /** Starts the broker and waits until clients can use it. */
  def start(): this.type = synchronized {
    require(process == null, "this EmbeddedKafka is already started")
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    val command = Seq(java) ++ jvmOptions ++ Seq("-cp", brokerClasspath()) ++ main
    shutdownHook = new Thread(() => stop(), "sluice-embedded-kafka-stop")
    Runtime.getRuntime.addShutdownHook(shutdownHook)
    val began = System.nanoTime()
    var ready: String = null
    var attempt = 1
    while (ready == null) {
      try ready = launch(command)
      catch {
        // The broker picks free ports, which another process may take before it binds them.
        case _: IllegalStateException
            if attempt < StartAttempts && exitCode.contains(ExitPortInUse) =>
          process = null
          attempt += 1
        case e: Throwable =>
          stop()
          throw e
      }
    }
    bootstrap = ready.stripPrefix(ReadyPrefix).trim
    startupMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began)
    workDir = Files.createTempDirectory("sluice-kafka-io-")
    this
  }

  /** Starts the broker's JVM; returns its ready line. */
  private def launch(command: Seq[String]): String = {
    stdout.clear()
    stderrTail.synchronized(stderrTail.clear())
    process = new ProcessBuilder(command.asJava).start()
    stdin = new PrintStream(process.getOutputStream, true, StandardCharsets.UTF_8)
    pump(process.getInputStream, "stdout") { line => stdout.put(Some(line)) } { stdout.put(None) }
    pump(process.getErrorStream, "stderr") { line =>
      stderrTail.synchronized {
        stderrTail.enqueue(line)
        if (stderrTail.size > StderrTailLines) stderrTail.dequeue()
      }
    } {}
    // one deadline for the whole start: a broker printing other lines must not extend it
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(startTimeoutMs)
    def next() = nextLine(
      math.max(1L, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())),
      "to start",
      reportedMs = startTimeoutMs)
    var line = next()
    while (!line.startsWith(ReadyPrefix)) line = next()
    line
  }

  private def exitCode: Option[Int] =
    Option(process).filter(_.waitFor(5, TimeUnit.SECONDS)).map(_.exitValue())

  /** `127.0.0.1:PORT`, for `kafka.bootstrap.servers`. */
  def bootstrapServers: String = {
    val b = bootstrap
    if (b == null)
      throw new IllegalStateException("the broker is not running: call start() first")
    b
  }

  /**
   * Creates a topic with replication factor 1 and the given topic configs (e.g. retention.ms).
   */
  def createTopic(
      name: String,
      partitions: Int = 1,
      config: Map[String, String] = Map.empty): Unit = {
    val pairs = config.map { case (k, v) => s"$k=$v" }
    pairs.foreach(p =>
      require(!p.exists(_.isWhitespace), s"topic configs must not contain whitespace: $p"))
    command(Seq("create-topic", word(name), partitions.toString) ++ pairs: _*)
  }

  /** Grows a topic to `total` partitions. */
  def addPartitions(name: String, total: Int): Unit =
    command("add-partitions", word(name), total.toString)

  /** Deletes a topic and waits until the broker no longer lists it. */
  def deleteTopic(name: String): Unit = command("delete-topic", word(name))

  /** Writes the records (acks=all, in order); returns how many were written. */
  def produce(topic: String, records: Iterable[ProducedRecord]): Int = {
    val file = ioFile("produce")
    try {
      Using.resource(Files.newBufferedWriter(file, StandardCharsets.UTF_8)) { writer =>
        val gen = jsonFactory.createGenerator(writer)
        gen.setRootValueSeparator(null)
        records.foreach { r =>
          gen.writeStartObject()
          r.key.foreach(k => gen.writeStringField("key_b64", b64(k)))
          r.value.foreach(v => gen.writeStringField("value_b64", b64(v)))
          r.partition.foreach(p => gen.writeNumberField("partition", p))
          r.timestamp.foreach(t => gen.writeNumberField("timestamp", t))
          if (r.headers.nonEmpty) {
            gen.writeArrayFieldStart("headers")
            r.headers.foreach { case (k, v) =>
              gen.writeStartArray()
              gen.writeString(k)
              if (v == null) gen.writeNull()
              else {
                gen.writeStartObject()
                gen.writeStringField("b64", b64(v))
                gen.writeEndObject()
              }
              gen.writeEndArray()
            }
            gen.writeEndArray()
          }
          gen.writeEndObject()
          gen.writeRaw('\n')
        }
        gen.close()
      }
      command("produce", word(topic), file.toString).toInt
    } finally Files.deleteIfExists(file)
  }

  /**
   * Every record of the topic up to its current end, by partition, then offset (committed only).
   */
  def consume(topic: String): Seq[ConsumedRecord] = {
    val file = ioFile("consume")
    try {
      command("consume", word(topic), file.toString)
      Using.resource(Files.newBufferedReader(file, StandardCharsets.UTF_8)) { reader =>
        Iterator
          .continually(reader.readLine())
          .takeWhile(_ != null)
          .filter(_.trim.nonEmpty)
          .map(parse)
          .toVector
      }
    } finally Files.deleteIfExists(file)
  }

  /**
   * Deletes a partition's records before an offset (like retention); returns the new start
   * offset.
   */
  def deleteRecords(topic: String, partition: Int, beforeOffset: Long): Long =
    command("delete-records", word(topic), partition.toString, beforeOffset.toString).toLong

  /** The offset after the last record of each partition. */
  def endOffsets(topic: String): Map[Int, Long] = offsets(command("end-offsets", word(topic)))

  /** The first offset still stored in each partition. */
  def startOffsets(topic: String): Map[Int, Long] = offsets(command("start-offsets", word(topic)))

  /** Stops the broker, deleting its data; does nothing if it is not running. */
  def stop(): Unit = synchronized {
    if (process != null) {
      try {
        if (process.isAlive) {
          stdin.println("stop")
          stdin.close()
        }
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
          process.destroy()
          if (!process.waitFor(15, TimeUnit.SECONDS) && !process
              .destroyForcibly()
              .waitFor(15, TimeUnit.SECONDS))
            System.err.println(
              "sluice EmbeddedKafka: the broker process did not exit within 60 s of 'stop'; left behind")
        }
      } finally {
        process = null
        bootstrap = null
        if (workDir != null) {
          workDir.toFile.listFiles().foreach(_.delete())
          Files.deleteIfExists(workDir)
          workDir = null
        }
        if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
          try Runtime.getRuntime.removeShutdownHook(shutdownHook)
          catch { case _: IllegalStateException => () } // the JVM is already shutting down
        }
        shutdownHook = null
      }
    }
  }

  /**
   * Sends one command; returns the text after `OK`, throws [[KafkaCommandException]] on `ERR`.
   */
  def command(words: String*): String = synchronized {
    if (process == null)
      throw new IllegalStateException("the broker is not running: call start() first")
    val line = words.mkString(" ")
    stdin.println(line)
    if (stdin.checkError()) throw new IllegalStateException(s"the broker is gone$stderrText")
    val answer = nextLine(commandTimeoutMs, s"to answer '${words.head}'")
    if (answer == "OK") ""
    else if (answer.startsWith("OK ")) answer.substring(3)
    else if (answer.startsWith("ERR "))
      // A timeout's cause is in the broker's log (retries, leader changes); plain refusals are not.
      throw new KafkaCommandException(
        s"$line: ${answer.substring(4)}${if (answer.contains("Timeout")) stderrText else ""}")
    else throw new IllegalStateException(s"$line: unexpected answer '$answer'")
  }

  /** The broker's next line within `timeoutMs`; `reportedMs` is the limit a failure names (what was allowed in all). */
  private def nextLine(timeoutMs: Long, what: String, reportedMs: Long = -1): String =
    stdout.poll(timeoutMs, TimeUnit.MILLISECONDS) match {
      case null =>
        throw new IllegalStateException(
          s"the Kafka broker took longer than ${if (reportedMs > 0) reportedMs else timeoutMs} ms $what$stderrText")
      case None =>
        stdout.put(None)
        val code =
          if (process != null && process.waitFor(5, TimeUnit.SECONDS))
            process.exitValue().toString
          else "?"
        throw new IllegalStateException(
          s"the Kafka broker exited (code $code) before ${what.stripPrefix("to ")}$stderrText")
      case Some(line) => line
    }

  private def stderrText: String = {
    Thread.sleep(100) // lets the stderr reader catch up with a dying process
    val tail = stderrTail.synchronized(stderrTail.mkString("\n"))
    if (tail.isEmpty) "" else s"\n--- broker stderr (last lines) ---\n$tail"
  }

  private def ioFile(kind: String): Path = synchronized {
    if (workDir == null)
      throw new IllegalStateException("the broker is not running: call start() first")
    fileCounter += 1
    workDir.resolve(s"$kind-$fileCounter.jsonl")
  }
}

/**
 * The broker rejected a command; the message names Kafka's exception (e.g. TopicExistsException).
 */
final class KafkaCommandException(message: String) extends RuntimeException(message)

object EmbeddedKafka {
  val ClasspathFileProperty = "sluice.brokerClasspathFile"
  val ClasspathEnv = "SLUICE_BROKER_CLASSPATH"

  /**
   * A small heap; serial GC and the C1 compiler only, which start faster and leave more of a
   * 2-core machine to Spark than the defaults.
   */
  val DefaultJvmOptions: Seq[String] =
    Seq("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

  private[testkit] val MainClass = "sluice.testkit.KafkaBrokerMain"
  private val ReadyPrefix = "SLUICE_KAFKA_READY bootstrap="
  private val StderrTailLines = 60
  private val StartAttempts = 3
  private val ExitPortInUse = 3 // KafkaBrokerMain's exit code when a port was taken
  private val jsonFactory = new JsonFactory()
  private val mapper = new ObjectMapper()

  /**
   * The broker's classpath, from `-Dsluice.brokerClasspathFile` or `$SLUICE_BROKER_CLASSPATH`.
   */
  def brokerClasspath(): String = {
    val fromFile =
      Option(System.getProperty(ClasspathFileProperty)).map(new File(_)).filter(_.isFile).map {
        f =>
          new String(Files.readAllBytes(f.toPath), StandardCharsets.UTF_8).trim
      }
    fromFile.orElse(sys.env.get(ClasspathEnv).map(_.trim)).filter(_.nonEmpty).getOrElse {
      throw new IllegalStateException(
        "The embedded Kafka broker's classpath was not found (system property " +
          s"$ClasspathFileProperty=${System.getProperty(ClasspathFileProperty)}, " +
          s"environment variable $ClasspathEnv unset): " +
          "run `build/sbt testkit/writeBrokerClasspath` (or `make build`) first.")
    }
  }

  private def word(s: String): String = {
    require(
      s.nonEmpty && !s.exists(_.isWhitespace),
      s"topic names must be non-empty and without whitespace: '$s'")
    s
  }

  private def b64(bytes: Array[Byte]): String = Base64.getEncoder.encodeToString(bytes)

  private def offsets(answer: String): Map[Int, Long] =
    answer
      .split(",")
      .filter(_.nonEmpty)
      .map { item =>
        val Array(p, o) = item.split("=", 2)
        p.stripPrefix("p").toInt -> o.toLong
      }
      .toMap

  private def bytesField(node: JsonNode, field: String): Option[Array[Byte]] = {
    val b64Node = node.get(field + "_b64")
    if (b64Node != null && !b64Node.isNull) Some(Base64.getDecoder.decode(b64Node.textValue()))
    else
      Option(node.get(field))
        .filter(!_.isNull)
        .map(_.textValue().getBytes(StandardCharsets.UTF_8))
  }

  private def parse(line: String): ConsumedRecord = {
    val node = mapper.readTree(line)
    val headers = Option(node.get("headers")).toSeq.flatMap(_.elements().asScala).map { pair =>
      val v = pair.get(1)
      val bytes =
        if (v.isNull) null
        else if (v.isObject) Base64.getDecoder.decode(v.get("b64").textValue())
        else v.textValue().getBytes(StandardCharsets.UTF_8)
      pair.get(0).textValue() -> bytes
    }
    ConsumedRecord(
      partition = node.get("partition").intValue(),
      offset = node.get("offset").longValue(),
      timestamp = node.get("timestamp").longValue(),
      key = bytesField(node, "key"),
      value = bytesField(node, "value"),
      headers = headers)
  }

  private def pump(in: InputStream, name: String)(onLine: String => Unit)(
      onEnd: => Unit): Unit = {
    val t = new Thread(
      () => {
        val reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
        try Iterator.continually(reader.readLine()).takeWhile(_ != null).foreach(onLine)
        catch { case _: java.io.IOException => () }
        finally onEnd
      },
      s"sluice-embedded-kafka-$name")
    t.setDaemon(true)
    t.start()
  }
}

/**
 * Gives the suite the test JVM's one [[EmbeddedKafka]]: started by the first suite that needs it
 * and stopped when the JVM exits (its shutdown hook), so a test run starts a broker per test JVM
 * instead of one per suite. Suites share it the way the Python suites share theirs: every topic
 * name is unique within a test JVM (the broker refuses to create one twice, and it creates none on
 * its own, so a clash fails loudly). Mix into an `AnyFunSuite`; combines with `SparkSuiteBase`.
 */
trait KafkaSuiteBase extends BeforeAndAfterAll { self: Suite =>
  @transient protected var kafka: EmbeddedKafka = _

  override protected def beforeAll(): Unit = {
    kafka = SharedKafka.broker
    super.beforeAll()
  }

  /** A Kafka source of `topic` on the shared broker from its earliest offsets, with `options`. */
  protected def earliestSource(
      topic: String,
      options: (String, String)*): sluice.connector.kafka.KafkaSource = {
    import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
    val b = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
    options.foldLeft(b) { case (acc, (k, v)) => acc.option(k, v) }.build()
  }
}

/** The test JVM's broker (see [[KafkaSuiteBase]]). */
object SharedKafka {
  lazy val broker: EmbeddedKafka = new EmbeddedKafka().start()
}

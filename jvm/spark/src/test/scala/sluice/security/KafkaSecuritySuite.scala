package sluice.security

import java.io.{ByteArrayOutputStream, PrintWriter, StringWriter}
import java.nio.file.{Files, Path}
import java.util.concurrent.TimeUnit

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.logging.log4j.{Level, LogManager}
import org.apache.logging.log4j.core.{LogEvent, LoggerContext}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property
import org.apache.spark.sluicetest.EventLogCapture
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Slow, Sluice, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.hybrid.HybridSource
import sluice.spark.RealTimeSink
import sluice.testkit.{KafkaCluster, ProducedRecord, SharedKafkaCluster}

/**
 * Sluice against the secured test cluster (SASL_SSL with SCRAM-SHA-512, mutual TLS, ACLs): it
 * reads what Spark's own Kafka source reads with the same settings in every execution mode;
 * wrong credentials, an untrusted certificate and missing ACLs fail fast, naming the cause and
 * the option to fix; and no password reaches a log line, an error, a checkpoint, the progress,
 * the event log, `explain()` or the SQL tab's plans, in the failures included.
 *
 * The tests run in order: the last one checks everything the others produced (logs are
 * captured and the event log written from the suite's start).
 */
class KafkaSecuritySuite extends AnyFunSuite with SparkSuiteBase {
  private lazy val cluster: KafkaCluster = SharedKafkaCluster.cluster

  private val topic = "sec-events"
  private val describeOnly = "sec-describe-only"
  private val hidden = "sec-hidden"
  private val records = 40

  // everything a password must not reach, gathered as the tests run
  private val logLines = mutable.ArrayBuffer.empty[String]
  private val errors = mutable.ArrayBuffer.empty[String]
  private val explained = mutable.ArrayBuffer.empty[String]
  private val progress = mutable.ArrayBuffer.empty[String]
  private val checkpoints = mutable.ArrayBuffer.empty[Path]
  private var eventLog: EventLogCapture = _

  private lazy val appender =
    new AbstractAppender("security-capture", null, null, true, Property.EMPTY_ARRAY) {
      override def append(event: LogEvent): Unit = logLines.synchronized {
        logLines += event.getMessage.getFormattedMessage
        Option(event.getThrown).foreach(t => logLines += stackTrace(t))
      }
    }
  private var previousLevel: Level = _

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")
    // the SQL tab's store: created when first used, it must see the queries from the start
    spark.asInstanceOf[org.apache.spark.sql.classic.SparkSession].sharedState.statusStore
    eventLog = new EventLogCapture(spark.sparkContext, tempDir("eventlog"))
    val ctx = LogManager.getContext(false).asInstanceOf[LoggerContext]
    val root = ctx.getConfiguration.getRootLogger
    previousLevel = root.getLevel
    appender.start()
    root.addAppender(appender, Level.INFO, null)
    root.setLevel(Level.INFO)
    ctx.updateLoggers()

    val base = 1700000000000L
    def produce(t: String, n: Int): Unit = {
      cluster.kafka.createTopic(t, partitions = 2)
      cluster.kafka.produce(
        t,
        (0 until n).map(i =>
          ProducedRecord.text(
            key = Some(s"k$i"),
            value = Some(s"""{"id":${100 + i}}"""),
            partition = Some(i % 2),
            timestamp = Some(base + i * 1000L))))
    }
    produce(topic, records)
    produce(describeOnly, 4)
    produce(hidden, 4)
    cluster.grant("reader", topic, "READ", "DESCRIBE")
    cluster.grant("reader", describeOnly, "DESCRIBE")
  }

  override protected def afterAll(): Unit = {
    try stopCapture()
    finally super.afterAll()
  }

  private var captured: Option[(String, String)] = None

  /** Stops the log capture and the event log (once); returns (logs, event log). */
  private def stopCapture(): (String, String) = synchronized {
    captured.getOrElse {
      val ctx = LogManager.getContext(false).asInstanceOf[LoggerContext]
      val root = ctx.getConfiguration.getRootLogger
      root.removeAppender(appender.getName)
      root.setLevel(previousLevel)
      ctx.updateLoggers()
      val events = eventLog.stop()
      val result = (logLines.synchronized(logLines.mkString("\n")), events)
      captured = Some(result)
      result
    }
  }

  private def stackTrace(t: Throwable): String = {
    val w = new StringWriter()
    t.printStackTrace(new PrintWriter(w))
    w.toString
  }

  /** The two ways to authenticate, as `kafka.*` options of `reader`. */
  private def scram(user: String = "reader", password: Option[String] = None) =
    prefixed(cluster.scramProperties(user, password))
  private def tls(user: String = "reader", untrusted: Boolean = false) =
    prefixed(
      cluster
        .tlsProperties(user, if (untrusted) cluster.untrustedTruststore else cluster.truststore))
  private def prefixed(props: Map[String, String]) = props.map { case (k, v) => s"kafka.$k" -> v }

  /** `t`'s JSON values as a hybrid's Kafka member, from its earliest offsets, over `auth`. */
  private def securedJson(
      auth: Map[String, String],
      schema: String,
      t: String = topic): KafkaSource =
    (auth - "kafka.bootstrap.servers")
      .foldLeft(
        KafkaSource
          .builder()
          .bootstrapServers(auth("kafka.bootstrap.servers"))
          .topics(t)
          .startingOffsets(OffsetsInitializer.earliest())
          .option("format", "json")
          .option("schema", schema)) { case (b, (k, v)) => b.option(k, v) }
      .build()
  private lazy val auths = Seq("SASL_SSL/SCRAM-SHA-512" -> scram(), "mutual TLS" -> tls())

  private def sluice(auth: Map[String, String], t: String = topic): Map[String, String] =
    auth ++ Map("source" -> "kafka", "subscribe" -> t, "startingOffsets" -> "earliest")

  /** What a batch read of Kafka needs in Sluice (not in Spark): where it ends. */
  private val bounded = "endingOffsets" -> "latest"

  /** (partition, offset, key, value, timestamp) of raw Kafka rows, in order. */
  private def kafkaRows(rows: Seq[Row]): Seq[(Int, Long, String, String, Long)] =
    rows
      .map(r =>
        (
          r.getAs[Int]("partition"),
          r.getAs[Long]("offset"),
          new String(r.getAs[Array[Byte]]("key"), "UTF-8"),
          new String(r.getAs[Array[Byte]]("value"), "UTF-8"),
          r.getAs[java.sql.Timestamp]("timestamp").getTime))
      .sortBy(r => (r._1, r._2))

  private def explainOf(show: => Unit): Unit = {
    val out = new ByteArrayOutputStream()
    Console.withOut(out)(show)
    explained += out.toString("UTF-8")
  }

  private def observe(q: StreamingQuery, ckpt: Path): Unit = {
    progress ++= q.recentProgress.map(_.json)
    checkpoints += ckpt
  }

  /** Runs `df` with `Trigger.AvailableNow` into a memory table; returns its rows. */
  private def availableNow(df: DataFrame, name: String): Seq[Row] = {
    val ckpt = tempDir("ckpt")
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", ckpt.toString)
      .start()
    try {
      awaitEnd(q)
      assert(q.exception.isEmpty, q.exception)
      explainOf(q.explain(true))
      observe(q, ckpt)
      spark.table(name).collect().toSeq
    } finally q.stop()
  }

  /** Runs `df` in real-time mode or continuous processing until `n` rows arrived. */
  private def longRunning(df: DataFrame, sink: String, realTime: Boolean, n: Int): Seq[Row] = {
    val ckpt = tempDir("ckpt")
    val writer = df.writeStream
      .foreach(RealTimeSink.writer(sink))
      .option("checkpointLocation", ckpt.toString)
    val q =
      if (realTime) writer.outputMode("update").trigger(Trigger.RealTime("5 seconds")).start()
      else writer.trigger(Trigger.Continuous("1 second")).start()
    try {
      val rows = RealTimeSink.await(sink, s"$n rows", q)(_.size >= n)
      explainOf(q.explain(true))
      rows
    } finally {
      q.stop()
      observe(q, ckpt)
    }
  }

  test(
    "Sluice reads what Spark's kafka source reads over SASL_SSL/SCRAM and mutual TLS, in every mode",
    Slow) {
    auths.foreach { case (name, auth) =>
      val key = name.filter(_.isLetter).toLowerCase
      val spark0 = spark.read
        .format("kafka")
        .options(auth)
        .option("subscribe", topic)
        .load()
      val expected = kafkaRows(spark0.collect().toSeq)
      assert(expected.size == records, s"$name: Spark's kafka source read ${expected.size}")

      val batch = spark.read.format("sluice").options(sluice(auth) + bounded).load()
      explainOf(batch.explain(true))
      assert(kafkaRows(batch.collect().toSeq) == expected, s"$name: batch read")

      val theirsStream = availableNow(
        spark.readStream
          .format("kafka")
          .options(auth)
          .option("subscribe", topic)
          .option("startingOffsets", "earliest")
          .load(),
        s"sec_spark_$key")
      assert(kafkaRows(theirsStream) == expected, s"$name: Spark's micro-batch")
      val micro = availableNow(
        spark.readStream.format("sluice").options(sluice(auth)).load(),
        s"sec_micro_$key")
      assert(kafkaRows(micro) == expected, s"$name: micro-batch")

      val stream = spark.readStream.format("sluice").options(sluice(auth)).load()
      val realTime = longRunning(stream, s"sec-rt-$key", realTime = true, records)
      assert(kafkaRows(realTime) == expected, s"$name: real-time mode")
      val continuous =
        longRunning(stream, s"sec-cont-$key", realTime = false, records)
      assert(kafkaRows(continuous) == expected, s"$name: continuous processing")

      // files (ids 0..9), then Kafka (ids 100..139) over the secured listener
      val dir = tempDir("history")
      Files.write(
        dir.resolve("a.json"),
        (0 until 10).map(i => s"""{"id":$i}""").mkString("\n").getBytes("UTF-8"))
      val live = securedJson(auth, "id BIGINT")
      val hybrid = HybridSource
        .builder(
          FileSource.builder().path(dir.toString).format("json").schema("id BIGINT").build())
        .addSource(live)
        .build()
      val ids = availableNow(Sluice.fromSource(spark, hybrid).select("id"), s"sec_hybrid_$key")
        .map(_.getLong(0))
      assert(ids.sorted == ((0L until 10L) ++ (100L until 100L + records)), s"$name: hybrid")
    }
  }

  /** A small backfill for the failing hybrids: one JSON file of ids 0 and 1. */
  private lazy val backfill: Path = {
    val dir = tempDir("failing-history")
    Files.write(dir.resolve("a.json"), "{\"id\":0}\n{\"id\":1}".getBytes("UTF-8"))
    dir
  }

  /**
   * Reading topic `t` over `auth` fails in a batch read, a micro-batch query, a real-time query,
   * a continuous query and a micro-batch hybrid whose Kafka source (after a small file backfill)
   * is the refused one: their errors, and how long each took to fail.
   */
  private def failure(auth: Map[String, String], t: String): Seq[(String, Throwable, Long)] = {
    val options = sluice(auth, t)
    def timed[T](body: => T): (T, Long) = {
      val t0 = System.nanoTime()
      val r = body
      (r, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
    }
    val (batchError, batchMs) = timed(intercept[Throwable] {
      val df = spark.read.format("sluice").options(options + bounded).load()
      explainOf(df.explain(true))
      df.collect()
    })
    def stream(mode: String): (String, Throwable, Long) = {
      val ckpt = tempDir("ckpt")
      val (error, ms) = timed {
        val df =
          if (mode == "hybrid") {
            val files =
              FileSource.builder().path(backfill.toString).format("json").schema("id BIGINT")
            val hybrid = HybridSource
              .builder(files.build())
              .addSource(securedJson(auth, "id BIGINT", t))
              .build()
            Sluice.fromSource(spark, hybrid)
          } else spark.readStream.format("sluice").options(options).load()
        val writer = df.writeStream.option("checkpointLocation", ckpt.toString)
        val q = mode match {
          case "micro-batch" | "hybrid" =>
            writer.format("noop").trigger(Trigger.AvailableNow()).start()
          case "real-time" =>
            writer
              .foreach(RealTimeSink.writer("sec-failing"))
              .outputMode("update")
              .trigger(Trigger.RealTime("5 seconds"))
              .start()
          case _ =>
            writer
              .foreach(RealTimeSink.writer("sec-failing"))
              .trigger(Trigger.Continuous("1 second"))
              .start()
        }
        try {
          try awaitEnd(q)
          catch { case _: org.apache.spark.sql.streaming.StreamingQueryException => () }
          q.exception.getOrElse(fail(s"the $mode query ended without an error"))
        } finally {
          observe(q, ckpt)
          q.stop()
        }
      }
      (mode, error, ms)
    }
    ("batch read", batchError, batchMs) +:
      Seq("micro-batch", "real-time", "continuous", "hybrid").map(stream)
  }

  /** The whole chain of causes' messages: what a user sees printed. */
  private def messages(t: Throwable): String =
    Iterator.iterate(t)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")

  test(
    "wrong credentials, an untrusted certificate and missing ACLs fail fast, naming the " +
      "option, in every mode",
    Slow) {
    // the driver refuses all but READ at its first look-up (the store passwords: when it
    // creates its Admin client); READ is refused to the tasks
    val wrong = "not-the-password"
    val cases = Seq(
      (
        "a wrong SCRAM password",
        scram(password = Some(wrong)),
        topic,
        Seq("Authentication failed", "kafka.sasl.jaas.config"),
        Nil),
      (
        "a trust store without the brokers' authority",
        tls(untrusted = true),
        topic,
        Seq("The brokers' certificate is not trusted", "kafka.ssl.truststore.location"),
        Nil),
      (
        "no client certificate where the brokers require one",
        tls().filter { case (k, _) => !k.startsWith("kafka.ssl.key") },
        topic,
        Seq("has none", "kafka.ssl.keystore.location"),
        Nil),
      (
        "a wrong key store password",
        tls() + ("kafka.ssl.keystore.password" -> wrong),
        topic,
        Seq("could not open the key store", "kafka.ssl.keystore.password"),
        Seq("kafka.ssl.truststore.password")),
      (
        "a wrong key password",
        tls() + ("kafka.ssl.key.password" -> wrong),
        topic,
        Seq("could not read the private key", "kafka.ssl.key.password"),
        Seq("kafka.ssl.truststore.password", "could not open the key store")),
      (
        "a wrong trust store password",
        scram() + ("kafka.ssl.truststore.password" -> wrong),
        topic,
        Seq("could not open the trust store", "kafka.ssl.truststore.password"),
        Seq("kafka.ssl.keystore.password")),
      (
        "a user without DESCRIBE on the topic",
        scram(),
        hidden,
        Seq(s"DESCRIBE on '$hidden', needed to find its partitions", "kafka.sasl.jaas.config"),
        Nil),
      (
        "a user without READ on the topic",
        tls(),
        describeOnly,
        Seq(
          s"READ on '$describeOnly', needed to fetch its records",
          "kafka.ssl.keystore.location"),
        Nil))
    cases.foreach { case (what, auth, t, expected, absent) =>
      failure(auth, t).foreach { case (mode, e, millis) =>
        errors += stackTrace(e)
        val text = messages(e)
        expected.foreach { word =>
          // case-sensitive: every ACL message says "Grant READ and DESCRIBE", and the topic
          // names hold those words too, so only the exact clause tells READ from DESCRIBE
          assert(text.contains(word), s"$what, $mode: '$word' not in:\n$text")
        }
        absent.foreach { word =>
          assert(!text.contains(word), s"$what, $mode: '$word' in:\n$text")
        }
        // well within the read timeout (kafkaConsumer.pollTimeoutMs, 120 s) and Admin's 60 s
        assert(millis < 30000, s"$what, $mode: took $millis ms to fail")
        info(s"$what, $mode: failed in $millis ms")
      }
    }
  }

  // TLS against the PLAINTEXT port is not among them: the brokers drop the connection, which
  // Kafka's clients retry as a broker unreachable, so it fails only after the 60 s look-up limit
  // (the message then names kafka.security.protocol); KafkaAccessErrorsSuite has the handshake
  // errors that need a certificate made for it
  test("a SASL mechanism the brokers lack names kafka.sasl.mechanism, fast") {
    val cases = Seq(
      (
        "SASL mechanism PLAIN, which the brokers do not enable",
        sluice(scram() + ("kafka.sasl.mechanism" -> "PLAIN")),
        Seq("SASL mechanism PLAIN of kafka.sasl.mechanism", "SCRAM-SHA-512")))
    cases.foreach { case (what, options, expected) =>
      val t0 = System.nanoTime()
      val e = intercept[Throwable] {
        spark.read.format("sluice").options(options + bounded).load().collect()
      }
      val millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)
      errors += stackTrace(e)
      val text = messages(e)
      expected.foreach { word =>
        assert(text.contains(word), s"$what: '$word' not in:\n$text")
      }
      assert(millis < 30000, s"$what: took $millis ms to fail")
      info(s"$what: failed in $millis ms")
    }
  }

  test(
    "a hybrid started at the files' end, by a reader without DESCRIBE_CONFIGS: the retention " +
      "check names the missing ACL, still looks for records gone, and the switch reads them all",
    Slow) {
    // reader has READ and DESCRIBE on the topic, not DESCRIBE_CONFIGS (retention.ms)
    val base = 1700000000000L
    // this query's lines only: the refused hybrids before could not check the retention at all
    val logStart = logLines.synchronized(logLines.size)
    val dir = tempDir("history-at-end")
    Files.write(
      dir.resolve("a.json"),
      (0 until 10)
        .map(i => s"""{"id":$i,"ts":${base + 10000L + i * 1000L}}""")
        .mkString("\n")
        .getBytes("UTF-8"))
    val auth = scram()
    val live = securedJson(auth, "id BIGINT, ts BIGINT")
    val hybrid = HybridSource
      .builder(
        FileSource
          .builder()
          .path(dir.toString)
          .format("json")
          .schema("id BIGINT, ts BIGINT")
          .timestampColumn("ts")
          .build())
      // the files end at base + 19 s: Kafka starts at its first record at or after base + 18 s
      .addSourceStartingAtPreviousEnd(live, 1000L)
      .build()
    val ids = availableNow(Sluice.fromSource(spark, hybrid).select("id"), "sec_hybrid_at_end")
      .map(_.getLong(0))
    assert(ids.sorted == ((0L until 10L) ++ (118L until 100L + records)))
    val retentionLines =
      logLines.synchronized(logLines.drop(logStart).filter(_.contains("retention")).toSeq)
    val partial =
      retentionLines.filter(_.contains("retention check of source 1 (kafka) is partial"))
    assert(partial.size == 1, retentionLines.mkString("\n"))
    Seq(
      "DESCRIBE_CONFIGS on 'sec-events'",
      "user 'reader'",
      "--operation DescribeConfigs --topic sec-events",
      "no retentionHeadroomMs",
      "failOnDataLoss").foreach { word =>
      assert(partial.head.contains(word), s"'$word' not in: ${partial.head}")
    }
    // not a failed check explained as a missing DESCRIBE
    assert(
      !retentionLines.exists(_.contains("could not check the retention")),
      retentionLines.mkString("\n"))
  }

  test(
    "no password or key store password reaches a log, error, checkpoint, progress, event log, explain or SQL tab",
    Slow) {
    val (logs, events) = stopCapture()
    val sqlTab = spark
      .asInstanceOf[org.apache.spark.sql.classic.SparkSession]
      .sharedState
      .statusStore
      .executionsList()
      .map(e => s"${e.description}\n${e.physicalPlanDescription}")
      .mkString("\n")
    val checkpointFiles = checkpoints.toSeq.flatMap { dir =>
      Files
        .walk(dir)
        .iterator()
        .asScala
        .filter(Files.isRegularFile(_))
        .map(p => new String(Files.readAllBytes(p), "ISO-8859-1"))
    }
    val places = Seq(
      "the driver's and executors' log" -> logs,
      "the errors" -> errors.mkString("\n"),
      "the checkpoints (offsets, sources, commits, metadata)" -> checkpointFiles.mkString("\n"),
      "the progress" -> progress.mkString("\n"),
      "the event log" -> events,
      "explain()" -> explained.mkString("\n"),
      "the SQL tab's plans" -> sqlTab)
    // each place holds what it is checked for, or the check would prove nothing
    Seq(
      "the driver's and executors' log" -> "ConsumerConfig values",
      "the errors" -> "kafka.sasl.jaas.config",
      "the checkpoints (offsets, sources, commits, metadata)" -> topic,
      "the progress" -> "numInputRows",
      "the event log" -> "SparkListenerSQLExecutionStart",
      "explain()" -> "Physical Plan",
      "the SQL tab's plans" -> "MicroBatchScan").foreach { case (where, marker) =>
      assert(places.toMap.apply(where).contains(marker), s"$where lacks '$marker'")
    }
    val secrets = Seq(
      "reader's SCRAM password" -> cluster.user("reader").scramPassword,
      "reader's key store password" -> cluster.user("reader").keystorePassword,
      "the trust store password" -> cluster.truststore.password,
      "the untrusted trust store's password" -> cluster.untrustedTruststore.password,
      "the wrong password tried" -> "not-the-password")
    for ((where, text) <- places; (secret, value) <- secrets)
      assert(!text.contains(value), s"$secret leaked into $where")
  }
}

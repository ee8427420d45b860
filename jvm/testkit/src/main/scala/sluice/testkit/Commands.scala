package sluice.testkit

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.time.Duration
import java.util.{Collections, Properties}
import java.util.concurrent.{ExecutionException, TimeUnit}
import java.util.concurrent.atomic.AtomicReference

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.kafka.clients.admin.{Admin, NewPartitions, NewTopic, OffsetSpec, RecordsToDelete}
import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.clients.producer.{Callback, KafkaProducer, ProducerConfig, ProducerRecord, RecordMetadata}
import org.apache.kafka.common.{KafkaException, TopicPartition}
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException
import org.apache.kafka.common.serialization.{ByteArrayDeserializer, ByteArraySerializer}

/**
 * The commands of the stdin protocol, run against one broker. Each returns the text after `OK`
 * (possibly empty) or throws; [[CommandLoop]] turns exceptions into `ERR` lines.
 */
final class Commands(
    bootstrapServers: String,
    replicationFactor: Short = 1,
    awaitOnEveryNode: (String, Int) => Unit = (_, _) => ())
    extends AutoCloseable {
  private val timeoutMs = 30000L
  private lazy val admin: Admin = Admin.create(Broker.adminProps(bootstrapServers))
  private var producerOpt: Option[KafkaProducer[Array[Byte], Array[Byte]]] = None

  private def producer: KafkaProducer[Array[Byte], Array[Byte]] = producerOpt.getOrElse {
    val p = new Properties()
    p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    p.setProperty(ProducerConfig.ACKS_CONFIG, "all")
    // Not idempotent: on a loaded test machine, the idempotent producer's sequence numbers went
    // out of step with the broker's (OUT_OF_ORDER_SEQUENCE_NUMBER retried until the batch expired).
    // One request in flight keeps the order through retries instead. A retry duplicates a batch
    // only if the request timed out after the broker appended it: the request timeout is longer
    // than any command may take, so retries answer refusals (no leader yet), which appended nothing.
    // On the 3-node cluster one more answer follows an append: NOT_ENOUGH_REPLICAS_AFTER_APPEND
    // (in-sync replicas went below the minimum during the write, as around a node's kill or
    // stop), and its retry writes the batch twice: the likely source of the duplicates the chaos
    // runs found in their topics, which is why they compare their sinks with what the topic
    // holds (chaos/broker_faults.py `against_topic`).
    p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")
    p.setProperty(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1")
    p.setProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "150000")
    p.setProperty(ProducerConfig.LINGER_MS_CONFIG, "5")
    p.setProperty(ProducerConfig.BATCH_SIZE_CONFIG, (256 * 1024).toString)
    p.setProperty(ProducerConfig.BUFFER_MEMORY_CONFIG, (64L * 1024 * 1024).toString)
    p.setProperty(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, (8 * 1024 * 1024).toString)
    p.setProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "160000")
    p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000")
    val created = new KafkaProducer[Array[Byte], Array[Byte]](
      p,
      new ByteArraySerializer,
      new ByteArraySerializer)
    producerOpt = Some(created)
    created
  }

  /** Runs one command line; returns the text after `OK`. */
  def run(line: String): String = {
    val trimmed = line.trim
    val (name, rest) = trimmed.span(!_.isWhitespace)
    val args = rest.trim.split("\\s+").filter(_.nonEmpty).toSeq
    name match {
      case "create-topic" =>
        if (args.size < 2) usage("create-topic <name> <partitions> [key=value ...]")
        createTopic(args(0), int(args(1), "partitions"), args.drop(2))
      case "add-partitions" =>
        if (args.size != 2) usage("add-partitions <name> <total>")
        addPartitions(args(0), int(args(1), "total"))
      case "delete-topic" =>
        if (args.size != 1) usage("delete-topic <name>")
        deleteTopic(args(0))
      case "produce" =>
        if (args.size < 2) usage("produce <topic> <path-to-jsonl-file>")
        produce(args(0), afterFirstWord(rest))
      case "consume" =>
        if (args.size < 2) usage("consume <topic> <path-out-jsonl>")
        consume(args(0), afterFirstWord(rest))
      case "delete-records" =>
        if (args.size != 3) usage("delete-records <topic> <partition> <beforeOffset>")
        deleteRecords(args(0), int(args(1), "partition"), long(args(2), "beforeOffset"))
      case "end-offsets" =>
        if (args.size != 1) usage("end-offsets <topic>")
        offsets(args(0), OffsetSpec.latest())
      case "start-offsets" =>
        if (args.size != 1) usage("start-offsets <topic>")
        offsets(args(0), OffsetSpec.earliest())
      case "produce-generated" =>
        if (args.size != 4)
          usage("produce-generated <topic> <count> <valueBytes> <baseTimestampMs>")
        BenchLoad
          .produce(
            producer,
            args(0),
            partitionsOf(args(0)).size,
            long(args(1), "count"),
            int(args(2), "valueBytes"),
            long(args(3), "baseTimestampMs"))
          .toString
      case "produce-steady" =>
        if (args.size != 4)
          usage("produce-steady <topic> <recordsPerSecond> <seconds> <timestampShiftMs>")
        SteadyLoad.start(
          producer,
          args(0),
          partitionsOf(args(0)).size,
          int(args(1), "recordsPerSecond"),
          int(args(2), "seconds"),
          long(args(3), "timestampShiftMs"))
        "started"
      case "consume-count" =>
        if (args.size != 1) usage("consume-count <topic>")
        val (records, millis) = BenchLoad.consumeAll(bootstrapServers, partitionsOf(args(0)))
        s"$records $millis"
      case "request-counts" =>
        if (args.nonEmpty) usage("request-counts")
        Commands.requestCounts().map { case (request, n) => s"$request=$n" }.mkString(" ")
      case "ping" => ""
      case "" => throw new IllegalArgumentException("empty command")
      case other =>
        throw new IllegalArgumentException(
          s"unknown command '$other' (commands: create-topic, add-partitions, delete-topic, " +
            "produce, consume, delete-records, end-offsets, start-offsets, produce-generated, produce-steady, " +
            "consume-count, request-counts, ping, stop)")
    }
  }

  /** A path may contain spaces: it is everything after the topic. */
  private def afterFirstWord(s: String): String = s.trim.dropWhile(!_.isWhitespace).trim

  private def usage(u: String): Nothing = throw new IllegalArgumentException(s"usage: $u")

  private def int(s: String, what: String): Int =
    s.toIntOption.getOrElse(
      throw new IllegalArgumentException(s"$what must be an integer, got '$s'"))

  private def long(s: String, what: String): Long =
    s.toLongOption.getOrElse(
      throw new IllegalArgumentException(s"$what must be an integer, got '$s'"))

  private def get[T](f: org.apache.kafka.common.KafkaFuture[T]): T =
    try f.get(timeoutMs, TimeUnit.MILLISECONDS)
    catch { case e: ExecutionException if e.getCause != null => throw e.getCause }

  private def createTopic(name: String, partitions: Int, configs: Seq[String]): String = {
    val configMap = configs.map { kv =>
      kv.split("=", 2) match {
        case Array(k, v) if k.nonEmpty => k -> v
        case _ => throw new IllegalArgumentException(s"topic config must be key=value, got '$kv'")
      }
    }.toMap
    val topic = new NewTopic(name, partitions, replicationFactor).configs(configMap.asJava)
    get(admin.createTopics(Collections.singletonList(topic)).all())
    awaitPartitions(name, partitions)
    awaitOnEveryNode(name, partitions)
    ""
  }

  private def addPartitions(name: String, total: Int): String = {
    get(
      admin
        .createPartitions(Collections.singletonMap(name, NewPartitions.increaseTo(total)))
        .all())
    awaitPartitions(name, total)
    awaitOnEveryNode(name, total)
    ""
  }

  private def deleteTopic(name: String): String = {
    get(admin.deleteTopics(Collections.singletonList(name)).all())
    // Until the broker has dropped the topic from its metadata, re-creating it would fail.
    awaitCondition(s"topic $name to disappear") {
      !get(admin.listTopics().names()).contains(name)
    }
    ""
  }

  /** Metadata reaches the broker shortly after the controller commits it; wait for that. */
  private def awaitPartitions(name: String, count: Int): Unit =
    awaitCondition(s"topic $name to have $count partitions with leaders") {
      try {
        val desc =
          get(admin.describeTopics(Collections.singletonList(name)).allTopicNames()).get(name)
        desc.partitions().size() == count && desc.partitions().asScala.forall(_.leader() != null)
      } catch { case _: UnknownTopicOrPartitionException => false }
    }

  private def awaitCondition(what: String)(cond: => Boolean): Unit = {
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    while (!cond) {
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(s"timed out waiting for $what")
      Thread.sleep(20)
    }
  }

  private def partitionsOf(topic: String): Seq[TopicPartition] = {
    // In a cluster, the broker asked may not have a topic just created yet (the one that showed it
    // to awaitPartitions did): ask again for a few seconds before calling it unknown.
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5)
    def describe(): org.apache.kafka.clients.admin.TopicDescription =
      try get(admin.describeTopics(Collections.singletonList(topic)).allTopicNames()).get(topic)
      catch {
        case _: UnknownTopicOrPartitionException if System.nanoTime() < deadline =>
          Thread.sleep(50)
          describe()
      }
    val desc = describe()
    desc
      .partitions()
      .asScala
      .map(p => new TopicPartition(topic, p.partition()))
      .toSeq
      .sortBy(_.partition())
  }

  private def listOffsets(topic: String, spec: OffsetSpec): Seq[(Int, Long)] = {
    val tps = partitionsOf(topic)
    val result = get(admin.listOffsets(tps.map(tp => tp -> spec).toMap.asJava).all()).asScala
    tps.map(tp => tp.partition() -> result(tp).offset())
  }

  private def offsets(topic: String, spec: OffsetSpec): String =
    listOffsets(topic, spec).map { case (p, o) => s"p$p=$o" }.mkString(",")

  private def deleteRecords(topic: String, partition: Int, before: Long): String = {
    val tp = new TopicPartition(topic, partition)
    val result =
      admin.deleteRecords(Collections.singletonMap(tp, RecordsToDelete.beforeOffset(before)))
    get(result.lowWatermarks().get(tp)).lowWatermark().toString
  }

  private def produce(topic: String, path: String): String = {
    // The producer would wait max.block.ms for a missing topic or partition; fail at once.
    val partitionCount = partitionsOf(topic).size
    val p = producer
    val failure = new AtomicReference[Exception]()
    val callback: Callback = (_: RecordMetadata, e: Exception) =>
      if (e != null) failure.compareAndSet(null, e)
    val reader = Files.newBufferedReader(Paths.get(path), StandardCharsets.UTF_8)
    val count =
      try {
        JsonRecords.foreachInput(reader) { r =>
          r.partition.filter(n => n < 0 || n >= partitionCount).foreach { n =>
            throw new IllegalArgumentException(
              s"partition $n does not exist: $topic has $partitionCount")
          }
          val partition: java.lang.Integer = r.partition.map(Int.box).orNull
          val timestamp: java.lang.Long = r.timestamp.map(Long.box).orNull
          val record = new ProducerRecord[Array[Byte], Array[Byte]](
            topic,
            partition,
            timestamp,
            r.key,
            r.value,
            r.headers.asJava)
          p.send(record, callback)
          if (failure.get() != null) throw failure.get()
        }
      } catch {
        case e: KafkaException =>
          failure.compareAndSet(null, e)
          -1
      } finally {
        reader.close()
        p.flush()
      }
    Option(failure.get()).foreach { e =>
      // A producer may stay unusable after a failed send: the next one starts afresh.
      producerOpt = None
      p.close(Duration.ofSeconds(5))
      throw new KafkaException(s"${CommandLoop.describe(e)} [broker: ${brokerState(topic)}]", e)
    }
    count.toString
  }

  /**
   * What a failed send may come from, as the broker sees it: each partition's leader and in-sync
   * replicas, and any log directory that went offline (e.g. a full disk).
   */
  private def brokerState(topic: String): String =
    try {
      val desc =
        get(admin.describeTopics(Collections.singletonList(topic)).allTopicNames()).get(topic)
      val partitions = desc.partitions().asScala.map { p =>
        s"p${p.partition()} leader=${Option(p.leader()).map(_.id()).getOrElse("none")} isr=${p.isr().size()}"
      }
      val dirs = get(
        admin
          .describeLogDirs(
            get(admin.describeCluster().nodes()).asScala.map(n => Int.box(n.id())).toSeq.asJava)
          .allDescriptions()).asScala.values.flatMap(_.asScala).map { case (dir, d) =>
        val error =
          Option(d.error()).map(e => s"error=${e.getClass.getSimpleName}").getOrElse("ok")
        s"$dir $error, ${Paths.get(dir).toFile.getUsableSpace >> 20} MiB free"
      }
      (partitions ++ dirs).mkString("; ")
    } catch { case NonFatal(e) => s"not known (${CommandLoop.describe(e)})" }

  /**
   * Writes every partition from its start to its current end, partition by partition, in offset
   * order.
   */
  private def consume(topic: String, path: String): String = {
    val props = new Properties()
    props.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    props.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    props.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")
    props.setProperty(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000")
    // Reading partition after partition, each fetch that waits for more data delays the answer.
    props.setProperty(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "20")
    // Aborted transactional records are not part of what a reader of the topic sees.
    props.setProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")
    val consumer =
      new KafkaConsumer[Array[Byte], Array[Byte]](
        props,
        new ByteArrayDeserializer,
        new ByteArrayDeserializer)
    val writer = Files.newBufferedWriter(Paths.get(path), StandardCharsets.UTF_8)
    val out = new JsonRecords.Output(writer)
    val timeout = Duration.ofMillis(timeoutMs)
    try {
      val tps = partitionsOf(topic)
      val ends = consumer.endOffsets(tps.asJava, timeout).asScala
      val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
      var count = 0
      tps.foreach { tp =>
        val end = ends(tp).longValue()
        consumer.assign(Collections.singletonList(tp))
        consumer.seekToBeginning(Collections.singletonList(tp))
        while (consumer.position(tp, timeout) < end) {
          if (System.nanoTime() > deadline)
            throw new IllegalStateException(s"timed out reading $tp up to offset $end")
          consumer.poll(Duration.ofMillis(200)).asScala.foreach { r =>
            if (r.offset() < end) {
              out.write(
                r.key(),
                r.value(),
                r.partition(),
                r.offset(),
                r.timestamp(),
                r.headers().asScala)
              count += 1
            }
          }
        }
      }
      count.toString
    } finally {
      out.close()
      writer.close()
      consumer.close(Duration.ofSeconds(5))
    }
  }

  override def close(): Unit = {
    producerOpt.foreach(_.close(Duration.ofSeconds(5)))
    producerOpt = None
    admin.close(Duration.ofSeconds(5))
  }
}

object Commands {

  /**
   * How many requests of each type this JVM's broker has answered since it started (Kafka's
   * `RequestsPerSec` meters, summed over their versions): what a reader costs the broker, as the
   * benchmarks' profiles compare it (bench/kafka_profile.py).
   */
  def requestCounts(): Seq[(String, Long)] = {
    val server = java.lang.management.ManagementFactory.getPlatformMBeanServer
    val meters = server
      .queryNames(
        new javax.management.ObjectName(
          "kafka.network:type=RequestMetrics,name=RequestsPerSec,*"),
        null)
      .asScala
      .toSeq
    meters
      .groupMapReduce(_.getKeyProperty("request"))(meter =>
        server.getAttribute(meter, "Count").asInstanceOf[Long])(_ + _)
      .toSeq
      .sortBy(_._1)
  }
}

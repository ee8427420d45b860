package sluice.testkit

import java.nio.charset.StandardCharsets
import java.time.Duration
import java.util.Properties

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.consumer.{ConsumerConfig, ConsumerRecord, KafkaConsumer}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.ByteArrayDeserializer
import org.scalatest.funsuite.AnyFunSuite

/**
 * The broker other suites rely on must store exactly what it is given; read back with a real
 * consumer.
 */
class EmbeddedKafkaSuite extends AnyFunSuite with KafkaSuiteBase {

  private def utf8(b: Array[Byte]): String =
    if (b == null) null else new String(b, StandardCharsets.UTF_8)

  /** Everything in the topic up to its current end offsets, by partition and offset. */
  private def readAll(topic: String): Seq[ConsumerRecord[Array[Byte], Array[Byte]]] = {
    val props = new Properties()
    props.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers)
    props.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    val consumer = new KafkaConsumer(props, new ByteArrayDeserializer, new ByteArrayDeserializer)
    try {
      val partitions = consumer
        .partitionsFor(topic)
        .asScala
        .map(p => new TopicPartition(topic, p.partition()))
        .toSeq
      consumer.assign(partitions.asJava)
      consumer.seekToBeginning(partitions.asJava)
      val ends = consumer.endOffsets(partitions.asJava).asScala
      val out = mutable.ArrayBuffer.empty[ConsumerRecord[Array[Byte], Array[Byte]]]
      val deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos
      while (partitions.exists(tp => consumer.position(tp) < ends(tp))) {
        assert(System.nanoTime() < deadline, "timed out reading the topic")
        out ++= consumer.poll(Duration.ofMillis(100)).asScala
      }
      out.sortBy(r => (r.partition(), r.offset())).toSeq
    } finally consumer.close()
  }

  // a bound on a loaded machine, not a benchmark: beside make test's other lanes on 2 cores a
  // start took 36 s once (5-10 s when quiet)
  test("starts within 60 s on 127.0.0.1") {
    assert(
      kafka.startupMillis > 0 && kafka.startupMillis < 60000,
      s"took ${kafka.startupMillis} ms")
    assert(kafka.bootstrapServers.startsWith("127.0.0.1:"))
    info(s"broker started in ${kafka.startupMillis} ms")
  }

  test("keeps keys, null values, headers, timestamps and partitions") {
    kafka.createTopic("round-trip", partitions = 3)
    val binaryKey = Array[Byte](-1, 0, 1)
    val records = Seq(
      ProducedRecord.text(
        key = Some("k0"),
        value = Some("v0"),
        partition = Some(0),
        timestamp = Some(1700000000000L),
        headers = Seq("h1" -> "x", "h2" -> null, "h1" -> "again")),
      ProducedRecord.text(
        key = Some("k1"),
        value = None,
        partition = Some(1),
        timestamp = Some(1700000000001L)),
      ProducedRecord.text(
        key = None,
        value = Some("no key"),
        partition = Some(2),
        timestamp = Some(1700000000002L)),
      ProducedRecord.text(
        key = Some("k0"),
        value = Some("second"),
        partition = Some(0),
        timestamp = Some(1700000000003L)),
      ProducedRecord(
        key = Some(binaryKey),
        value = Some("ünïcødé ✓".getBytes(StandardCharsets.UTF_8)),
        partition = Some(2),
        timestamp = Some(5L),
        headers = Seq("bin" -> Array[Byte](-128, -127))))
    assert(kafka.produce("round-trip", records) === 5)

    val read = readAll("round-trip")
    val summary = read.map { r =>
      (
        r.partition(),
        r.offset(),
        r.timestamp(),
        Option(r.key()).map(_.toSeq),
        utf8(r.value()),
        r.headers().asScala.map(h => h.key() -> Option(h.value()).map(_.toSeq)).toSeq)
    }
    def bytes(s: String) = Some(s.getBytes(StandardCharsets.UTF_8).toSeq)
    assert(
      summary === Seq(
        (
          0,
          0L,
          1700000000000L,
          bytes("k0"),
          "v0",
          Seq("h1" -> bytes("x"), "h2" -> None, "h1" -> bytes("again"))),
        (0, 1L, 1700000000003L, bytes("k0"), "second", Nil),
        (1, 0L, 1700000000001L, bytes("k1"), null, Nil),
        (2, 0L, 1700000000002L, None, "no key", Nil),
        (
          2,
          1L,
          5L,
          Some(binaryKey.toSeq),
          "ünïcødé ✓",
          Seq("bin" -> Some(Seq[Byte](-128, -127))))))
    assert(kafka.endOffsets("round-trip") === Map(0 -> 2L, 1 -> 1L, 2 -> 2L))

    // The broker's own consume command reads the same.
    val viaBroker = kafka.consume("round-trip")
    assert(viaBroker.map(r => (r.partition, r.offset, r.timestamp)) === summary.map(s =>
      (s._1, s._2, s._3)))
    assert(viaBroker.head.headerStrings === Seq("h1" -> "x", "h2" -> null, "h1" -> "again"))
    assert(viaBroker(2).value.isEmpty && viaBroker(4).key.map(_.toSeq) === Some(binaryKey.toSeq))
  }

  test("topic administration and record deletion") {
    kafka.createTopic("admin", config = Map("retention.ms" -> "3600000"))
    kafka.produce("admin", (0 until 10).map(i => ProducedRecord.text(value = Some(i.toString))))
    assert(kafka.deleteRecords("admin", 0, 4) === 4L)
    assert(kafka.startOffsets("admin") === Map(0 -> 4L))
    assert(readAll("admin").map(r => utf8(r.value())) === (4 until 10).map(_.toString))

    kafka.addPartitions("admin", 3)
    assert(kafka.endOffsets("admin") === Map(0 -> 10L, 1 -> 0L, 2 -> 0L))

    kafka.deleteTopic("admin")
    val e = intercept[KafkaCommandException](kafka.endOffsets("admin"))
    assert(e.getMessage.contains("UnknownTopicOrPartition"))
    kafka.createTopic("admin", partitions = 2)
    assert(kafka.endOffsets("admin") === Map(0 -> 0L, 1 -> 0L))
  }

  test("errors name the problem and leave the broker usable") {
    kafka.createTopic("errors")
    assert(
      intercept[KafkaCommandException](kafka.createTopic("errors")).getMessage
        .contains("TopicExists"))
    val badPartition = ProducedRecord.text(value = Some("v"), partition = Some(7))
    assert(
      intercept[KafkaCommandException](kafka.produce("errors", Seq(badPartition))).getMessage
        .contains("partition 7"))
    assert(kafka.produce("errors", Seq(ProducedRecord.of("k", "v"))) === 1)
  }
}

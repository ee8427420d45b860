package sluice.connector.kafka

import org.scalatest.funsuite.AnyFunSuite

/**
 * Splits are stored in Spark's offset log, so every version ever written must still read. The
 * fixtures are the literal texts each version wrote (see the serializer's history: version 1 in
 * the first Kafka connector, version 2 since splits carry an incarnation); a change that strands
 * them fails here.
 */
class KafkaSplitSerializerSuite extends AnyFunSuite {
  private val serializer = KafkaSplitSerializer

  private val splits = Seq(
    KafkaPartitionSplit("orders", 0, 0L, None),
    KafkaPartitionSplit("orders", 3, 10L, Some(20L)),
    KafkaPartitionSplit("my.topic_with-all-legal.chars", 7, 5L, None, incarnation = 2),
    KafkaPartitionSplit("t", 2147483647, Long.MaxValue - 1, Some(Long.MaxValue), incarnation = 1))

  test("a split reads back as it was written, at the current version") {
    assert(serializer.version == 2)
    splits.foreach { s =>
      assert(serializer.deserialize(serializer.version, serializer.serialize(s)) == s)
    }
  }

  test(
    "version 2 texts (partition:start:stop:incarnation:topic) still read, and are what is written") {
    val fixtures = Seq(
      "3:10:20:0:orders" -> KafkaPartitionSplit("orders", 3, 10L, Some(20L)),
      "0:5::2:my.topic-x" -> KafkaPartitionSplit("my.topic-x", 0, 5L, None, incarnation = 2))
    fixtures.foreach { case (text, split) =>
      assert(serializer.deserialize(2, text) == split, text)
      assert(serializer.serialize(split) == text)
    }
    assert(serializer.deserialize(2, "0:5::2:my.topic-x").splitId == "my.topic-x-0@2")
  }

  test(
    "version 1 texts (partition:start:stop:topic, before incarnations) still read, as incarnation 0") {
    val fixtures = Seq(
      "3:10:20:orders" -> KafkaPartitionSplit("orders", 3, 10L, Some(20L)),
      "0:5::my.topic-x" -> KafkaPartitionSplit("my.topic-x", 0, 5L, None))
    fixtures.foreach { case (text, split) =>
      val read = serializer.deserialize(1, text)
      assert(read == split, text)
      assert(read.incarnation == 0 && read.splitId == s"${split.topic}-${split.partition}")
    }
  }

  test("a version this build does not know is refused, saying which versions it reads") {
    val e = intercept[IllegalStateException](serializer.deserialize(3, "3:10:20:0:x:orders"))
    assert(e.getMessage.contains("a Kafka split of serializer version 3"), e.getMessage)
    assert(e.getMessage.contains("reads versions up to 2"), e.getMessage)
  }
}

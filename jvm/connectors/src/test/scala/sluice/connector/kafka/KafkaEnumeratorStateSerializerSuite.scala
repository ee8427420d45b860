package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition
import org.scalatest.funsuite.AnyFunSuite

/**
 * The enumerator's state is a hand-rolled text in Spark's offset log, so every version ever
 * written must still read. The fixtures are the literal texts each version wrote (version 1 in
 * the first Kafka connector, version 2 since topic ids and incarnations are kept); a change that
 * strands them fails here.
 */
class KafkaEnumeratorStateSerializerSuite extends AnyFunSuite {
  private val serializer = KafkaEnumeratorStateSerializer
  private def tp(topic: String, partition: Int) = new TopicPartition(topic, partition)

  private val states = Seq(
    KafkaEnumeratorState(Set.empty, initialDiscoveryDone = false),
    KafkaEnumeratorState(Set(tp("orders", 0)), initialDiscoveryDone = true),
    KafkaEnumeratorState(
      Set(tp("orders", 0), tp("orders", 1), tp("pay.ments_x-y", 12)),
      initialDiscoveryDone = true,
      topicIds =
        Map("orders" -> "Zx3kQ-1_AAAAAAAAAAAAAA", "pay.ments_x-y" -> "AAAAAAAAAAAAAAAAAAAAAQ"),
      incarnations = Map(tp("orders", 1) -> 2, tp("gone", 0) -> 1)))

  test("a state reads back as it was written, at the current version") {
    assert(serializer.version == 2)
    states.foreach { s =>
      assert(serializer.deserialize(serializer.version, serializer.serialize(s)) == s)
    }
  }

  test(
    "version 2 texts (done;p:topic,...;id:topic,...;n:p:topic,...) still read, and are what is written") {
    val fixtures = Seq(
      "false;;;" -> KafkaEnumeratorState(Set.empty, initialDiscoveryDone = false),
      "true;0:orders,1:orders;Zx3kQ-1_AAAAAAAAAAAAAA:orders;2:1:orders" -> KafkaEnumeratorState(
        Set(tp("orders", 0), tp("orders", 1)),
        initialDiscoveryDone = true,
        topicIds = Map("orders" -> "Zx3kQ-1_AAAAAAAAAAAAAA"),
        incarnations = Map(tp("orders", 1) -> 2)))
    fixtures.foreach { case (text, state) =>
      assert(serializer.deserialize(2, text) == state, text)
      assert(serializer.serialize(state) == text)
    }
  }

  test("version 1 texts (done;p:topic,..., before topic ids and incarnations) still read") {
    val fixtures = Seq(
      "false;" -> KafkaEnumeratorState(Set.empty, initialDiscoveryDone = false),
      "true;0:orders,1:orders,0:pay.ments" -> KafkaEnumeratorState(
        Set(tp("orders", 0), tp("orders", 1), tp("pay.ments", 0)),
        initialDiscoveryDone = true))
    fixtures.foreach { case (text, state) =>
      val read = serializer.deserialize(1, text)
      assert(read == state, text)
      assert(read.topicIds.isEmpty && read.incarnations.isEmpty)
    }
  }

  test("a version this build does not know is refused, saying which versions it reads") {
    val e = intercept[IllegalStateException](serializer.deserialize(3, "true;;;;"))
    assert(e.getMessage.contains("Kafka enumerator state of serializer version 3"), e.getMessage)
    assert(e.getMessage.contains("reads versions up to 2"), e.getMessage)
  }
}

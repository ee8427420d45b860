package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition
import org.scalatest.funsuite.AnyFunSuite

import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** The enumerator against a real broker, driven as planning drives it; no Spark. */
class KafkaEnumeratorSuite extends AnyFunSuite with KafkaSuiteBase {

  private def produce(topic: String, partition: Int, count: Int): Unit =
    kafka.produce(
      topic,
      (0 until count).map(i =>
        ProducedRecord.text(value = Some(s"v$i"), partition = Some(partition))))

  private def source(topic: String, options: (String, String)*): KafkaSource =
    options
      .foldLeft(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics(topic)
          // no discovery between the calls of a test unless it says so
          .option("partitionDiscoveryIntervalMs", "3600000")) { case (b, (k, v)) =>
        b.option(k, v)
      }
      .build()

  test(
    "partitions are discovered once, their start resolved when first seen; later partitions start at 0") {
    val topic = "enum-discovery"
    kafka.createTopic(topic, 2)
    produce(topic, 0, 5)
    produce(topic, 1, 3)
    val src = source(topic, "startingOffsets" -> "latest")
    val enumerator = src.createEnumerator()
    val state =
      try {
        val found = enumerator.discoverSplits()
        assert(
          found.map(s => (s.splitId, s.startPosition, s.stopPosition)).toSet == Set(
            (s"$topic-0", 5L, None),
            (s"$topic-1", 3L, None)))
        assert(enumerator.discoverSplits().isEmpty, "found twice")
        assert(!enumerator.noMoreSplits)
        enumerator.snapshotState()
      } finally enumerator.close()
    assert(state.discovered == Set(new TopicPartition(topic, 0), new TopicPartition(topic, 1)))
    assert(state.initialDiscoveryDone && state.topicIds.keySet == Set(topic))

    // a restored enumerator discovers at its first planning: only the partition added since, from 0
    kafka.addPartitions(topic, 3)
    produce(topic, 2, 4)
    val restored = src.restoreEnumerator(state)
    try {
      val added = restored.discoverSplits()
      assert(added.map(s => (s.splitId, s.startPosition)) == Seq((s"$topic-2", 0L)))
      assert(
        restored.availablePositions(added.map(s => s -> s.startPosition)) == Map(
          s"$topic-2" -> 4L))
    } finally restored.close()
  }

  test("a bounded source resolves its stops once and plans no further than them") {
    val topic = "enum-bounded"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 6)
    val enumerator = source(topic, "startingOffsets" -> "earliest", "endingOffsets" -> "latest")
      .createEnumerator()
    try {
      val Seq(split) = enumerator.discoverSplits()
      assert((split.startPosition, split.stopPosition) == (0L, Some(6L)))
      assert(enumerator.noMoreSplits)
      produce(topic, 0, 4)
      assert(
        enumerator.availablePositions(Seq(split -> split.startPosition)) == Map(
          split.splitId -> 6L))
      assert(enumerator.discoverSplits().isEmpty)
      assert(enumerator.isFinished(split, 6L) && !enumerator.isFinished(split, 5L))
    } finally enumerator.close()
  }

  test(
    "looking at the partitions' ends changes nothing; availablePositions applies what it found, and the next planning goes on in a new split") {
    val topic = "enum-shrunk"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 100)
    val enumerator = source(topic, "failOnDataLoss" -> "false").createEnumerator()
    try {
      val Seq(split) = enumerator.discoverSplits()
      // read up to offset 100, as the runtime hands it
      val read = Seq(split -> 100L)
      assert(enumerator.endsNow(read) == KafkaEnumerator.Ends(Map(split.splitId -> 100L), Nil))
      kafka.deleteTopic(topic)
      kafka.createTopic(topic, 1)
      produce(topic, 0, 10)

      val found =
        KafkaEnumerator.Ends(Map(split.splitId -> 10L), Seq(split.topicPartition -> 10L))
      assert(enumerator.endsNow(read) == found)
      assert(enumerator.endsNow(read) == found, "the first look changed what the second sees")
      assert(enumerator.discoverSplits().isEmpty, "a look alone made the enumerator go on")

      assert(enumerator.availablePositions(read) == found.available)
      // the re-created topic's id is looked at first: it is read from its beginning, once
      val Seq(next) = enumerator.discoverSplits()
      assert((next.splitId, next.startPosition, next.incarnation) == (s"$topic-0@1", 0L, 1))
      assert(enumerator.discoverSplits().isEmpty, "reset twice")
      assert(enumerator.isFinished(split, 100L) && !enumerator.isFinished(next, 0L))
      assert(enumerator.snapshotState().incarnations == Map(split.topicPartition -> 1))
    } finally enumerator.close()
  }

  test("with failOnDataLoss=true, a partition gone at planning is an error naming it") {
    val topic = "enum-gone"
    kafka.createTopic(topic, 1)
    produce(topic, 0, 3)
    val enumerator = source(topic).createEnumerator()
    try {
      val Seq(split) = enumerator.discoverSplits()
      kafka.deleteTopic(topic)
      val e = intercept[IllegalStateException](
        enumerator.availablePositions(Seq(split -> split.startPosition)))
      assert(e.getMessage.contains(s"partition $topic-0 is gone"), e.getMessage)
      assert(e.getMessage.endsWith("Set failOnDataLoss=false to go on without it."), e.getMessage)
    } finally enumerator.close()
  }
}

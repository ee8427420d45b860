package sluice.connector.kafka

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{ReaderContext, ReaderCounters, SplitRange}
import sluice.testkit.{EmbeddedKafka, KafkaSuiteBase, ProducedRecord}

/** The split reader against a real broker; no Spark. */
class KafkaSplitReaderSuite extends AnyFunSuite with KafkaSuiteBase {

  private def produce(topic: String, count: Int): Unit =
    kafka.produce(
      topic,
      (0 until count).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(0))))

  private def reader(topic: String, context: ReaderContext, failOnDataLoss: Boolean = true) =
    KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .failOnDataLoss(failOnDataLoss)
      .build()
      .createReader(context)

  /** What one read record gave: its offset and value (from the row), and the position after it. */
  private case class Read(splitId: String, offset: Long, value: String, position: Long)

  /** Fetches until `split` is reported finished (or 30 s pass); returns the records read. */
  private def readToEnd(r: KafkaSplitReader, split: String): Seq[Read] = {
    val read = mutable.Buffer[Read]()
    var finished = false
    val deadline = System.currentTimeMillis() + 30000
    while (!finished) {
      assert(System.currentTimeMillis() < deadline, s"split $split not finished within 30 s")
      val batch = r.fetch()
      var id = batch.nextSplit()
      while (id != null) {
        while (batch.nextRecord()) {
          val row = batch.row
          read += Read(id, row.getLong(4), new String(row.getBinary(1), "UTF-8"), batch.position)
        }
        id = batch.nextSplit()
      }
      finished = batch.finishedSplits.contains(split)
    }
    read.toSeq
  }

  test("reads exactly a planned range and reports the split finished at its end") {
    val topic = "reader-range"
    kafka.createTopic(topic, 1)
    produce(topic, 10)
    val context = ReaderContext()
    val r = reader(topic, context)
    try {
      val split = KafkaPartitionSplit(topic, 0, 0L, None)
      r.handleSplitsChanges(Seq(SplitRange(split, 2L, 7L)))
      val read = readToEnd(r, split.splitId)
      assert(read == (2 until 7).map(i => Read(split.splitId, i.toLong, s"v$i", i + 1L)))
      assert(context.bytesRead == 5 * 2, "bytes read: five values of two bytes, null keys")
    } finally r.close()
  }

  test(
    "brokers that stop answering are waited for until pollTimeoutMs, then named as the cause") {
    // a broker of its own: this one stops
    val own = new EmbeddedKafka().start()
    val servers = own.bootstrapServers
    val topic = "reader-broker-gone"
    val pollTimeoutMs = 2000L
    val split = KafkaPartitionSplit(topic, 0, 0L, None)
    val r =
      try {
        own.createTopic(topic, 1)
        own.produce(topic, Seq(ProducedRecord.text(value = Some("v0"), partition = Some(0))))
        val reader = KafkaSource
          .builder()
          .bootstrapServers(own.bootstrapServers)
          .topics(topic)
          .option("kafkaConsumer.pollTimeoutMs", pollTimeoutMs.toString)
          .build()
          .createReader(ReaderContext())
        // connected, with the partition's metadata: what a broker restart interrupts
        reader.handleSplitsChanges(Seq(SplitRange(split, 0L, 1L)))
        assert(readToEnd(reader, split.splitId).map(_.value) == Seq("v0"))
        reader
      } finally own.stop()
    try {
      // the next record is planned but the broker is gone: each look-up times out (after half
      // the poll timeout) and the split is waited for, until pollTimeoutMs passes without progress
      r.handleSplitsChanges(Seq(SplitRange(split, 1L, 2L)))
      val began = System.nanoTime()
      var emptyFetches = 0
      val e = intercept[IllegalStateException] {
        while (true) {
          val batch = r.fetch()
          assert(batch.nextSplit() == null && batch.finishedSplits.isEmpty)
          emptyFetches += 1
        }
      }
      val waitedMs = (System.nanoTime() - began) / 1000000
      assert(
        e.getMessage.contains(
          s"no records arrived within kafkaConsumer.pollTimeoutMs=$pollTimeoutMs ms for ${split.splitId}") &&
          e.getMessage.contains(
            s"Check that the brokers are reachable at kafka.bootstrap.servers=$servers (up, on " +
              "those hosts and ports), or raise kafkaConsumer.pollTimeoutMs"),
        e.getMessage)
      assert(waitedMs >= pollTimeoutMs, s"failed after $waitedMs ms")
      assert(emptyFetches >= 1, "the first look-up that timed out failed the task")
    } finally r.close()
  }

  test(
    "an open range (real-time, continuous) fails once the brokers gave no answer for pollTimeoutMs, counted from a resume") {
    // found by the chaos run: with the whole cluster down a continuous query waited for ever
    val own = new EmbeddedKafka().start()
    val servers = own.bootstrapServers
    val topic = "reader-open-broker-gone"
    val pollTimeoutMs = 2000L
    val split = KafkaPartitionSplit(topic, 0, 0L, None)
    val r =
      try {
        own.createTopic(topic, 1)
        own.produce(topic, Seq(ProducedRecord.text(value = Some("v0"), partition = Some(0))))
        val reader = KafkaSource
          .builder()
          .bootstrapServers(own.bootstrapServers)
          .topics(topic)
          .option("kafkaConsumer.pollTimeoutMs", pollTimeoutMs.toString)
          .build()
          .createReader(ReaderContext())
        reader.handleSplitsChanges(Seq(SplitRange(split, 0L, SplitRange.OpenEnd)))
        // an idle topic with answering brokers is waited on: a record, then nothing for longer
        // than the patience, and no failure
        var read = 0
        val quietUntil = System.nanoTime() + (pollTimeoutMs + 1500) * 1000000
        while (System.nanoTime() < quietUntil) {
          val batch = reader.fetch()
          while (batch.nextSplit() != null) while (batch.nextRecord()) read += 1
        }
        assert(read == 1)
        // paused by alignment for longer than the patience: nothing is waited for meanwhile
        reader.pauseOrResumeSplits(Seq(split), Nil)
        val pausedUntil = System.nanoTime() + (pollTimeoutMs + 500) * 1000000
        while (System.nanoTime() < pausedUntil)
          assert(reader.fetch().nextSplit() == null)
        reader
      } finally own.stop()
    try {
      // resumed with the brokers gone: its silence counts from now, not from before the pause
      r.pauseOrResumeSplits(Nil, Seq(split))
      val began = System.nanoTime()
      val e = intercept[IllegalStateException] {
        while (true) {
          val batch = r.fetch()
          assert(batch.nextSplit() == null && batch.finishedSplits.isEmpty)
        }
      }
      val waitedMs = (System.nanoTime() - began) / 1000000
      assert(
        e.getMessage.contains(
          s"the brokers gave no answer within kafkaConsumer.pollTimeoutMs=$pollTimeoutMs ms " +
            s"while reading ${split.splitId}") &&
          e.getMessage.contains(
            s"Check that the brokers are reachable at kafka.bootstrap.servers=$servers (up, on " +
              "those hosts and ports), or raise kafkaConsumer.pollTimeoutMs"),
        e.getMessage)
      // not before two look-ups went unanswered, each taking half of the patience
      assert(waitedMs >= pollTimeoutMs, s"failed after $waitedMs ms, less than the patience")
      assert(waitedMs < 30000, s"failed only after $waitedMs ms")
    } finally r.close()
  }

  test(
    "records gone by retention: an error naming the offsets, or skipped and counted (failOnDataLoss)") {
    val topic = "reader-retention"
    kafka.createTopic(topic, 1)
    produce(topic, 10)
    assert(kafka.deleteRecords(topic, 0, 5L) == 5L)
    val split = KafkaPartitionSplit(topic, 0, 0L, None)

    val failing = reader(topic, ReaderContext())
    try {
      failing.handleSplitsChanges(Seq(SplitRange(split, 0L, 10L)))
      val e = intercept[IllegalStateException](readToEnd(failing, split.splitId))
      assert(
        e.getMessage.contains(s"cannot read offsets [0, 10) of topic $topic partition 0") &&
          e.getMessage.contains("the earliest offset still in Kafka is 5"),
        e.getMessage)
    } finally failing.close()

    val context = ReaderContext()
    val skipping = reader(topic, context, failOnDataLoss = false)
    try {
      skipping.handleSplitsChanges(Seq(SplitRange(split, 0L, 10L)))
      assert(readToEnd(skipping, split.splitId).map(_.offset) == (5L until 10L))
      assert(context.countersOf(split.splitId) == Map(ReaderCounters.DataLossOffsets -> 5L))
    } finally skipping.close()
  }
}

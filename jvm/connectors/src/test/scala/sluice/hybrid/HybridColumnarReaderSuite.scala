package sluice.hybrid

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{ReaderContext, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.kafka.{KafkaPartitionSplit, KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** The hybrid's column-batch reader against a real broker, with a clock the test moves; no Spark. */
class HybridColumnarReaderSuite extends AnyFunSuite with KafkaSuiteBase {

  /** A reader context whose clock stands still until the test moves it. */
  private final class Clock extends ReaderContext {
    var now = 1000000L
    override def recordLayout: RecordLayout = RecordLayout.Full
    override def currentTimeMillis(): Long = now
    override def count(splitId: String, name: String, delta: Long): Unit = ()
  }

  test("a member's patience for records starts at its turn, not while earlier members are read") {
    val history = "hybrid-columnar-history"
    kafka.createTopic(history, 1)
    kafka.produce(
      history,
      (0 until 10).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(0))))
    val first = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(history)
      .startingOffsets(OffsetsInitializer.earliest())
      .stoppingOffsets(OffsetsInitializer.latest())
      .build()
    // the second member's brokers are down: it gets no records, and its patience is 2 s
    val second = KafkaSource
      .builder()
      .bootstrapServers("127.0.0.1:1")
      .topics("live")
      .option("kafkaConsumer.pollTimeoutMs", "2000")
      .build()
    val hybrid = HybridSource.builder(first).addSource(second).build()
    val historySplit = HybridSplit(0, KafkaPartitionSplit(history, 0, 0L, None))
    val liveSplit = HybridSplit(1, KafkaPartitionSplit("live", 0, 0L, None))
    val clock = new Clock
    val reader = hybrid.createColumnarReader(clock)
    try {
      reader.handleSplitsChanges(
        Seq(SplitRange(historySplit, 0L, 10L), SplitRange(liveSplit, 0L, 5L)))
      // the history takes a minute of the clock to read, far past the second member's patience
      var rows = 0
      var finished = Set.empty[String]
      val deadline = System.currentTimeMillis() + 30000
      while (!finished.contains(historySplit.splitId)) {
        assert(System.currentTimeMillis() < deadline, "the history was not read within 30 s")
        val fetched = reader.fetch()
        if (fetched.batch != null) {
          rows += fetched.batch.numRows
          clock.now += 60000
        }
        finished ++= fetched.finishedSplits
      }
      assert(rows == 10)
      // the second member's turn: a poll and look-ups that get no answer, and no failure yet
      val empty = reader.fetch()
      assert(empty.batch == null && empty.finishedSplits.isEmpty)
      // its patience runs out counted from its turn
      clock.now += 3000
      val e = intercept[IllegalStateException](reader.fetch())
      assert(
        e.getMessage.contains(
          s"no records arrived within kafkaConsumer.pollTimeoutMs=2000 ms for ${liveSplit.child.splitId}"),
        e.getMessage)
    } finally reader.close()
  }
}

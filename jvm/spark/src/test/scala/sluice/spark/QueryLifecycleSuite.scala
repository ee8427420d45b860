package sluice.spark

import java.time.Duration

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.alignment.AlignmentCoordinator
import sluice.connector.generator.GeneratorSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.hybrid.SourceFactories
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * The driver's registries live as long as the queries that use them: after many queries started
 * and stopped, none holds anything a stopped query put there.
 */
class QueryLifecycleSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val grouped = WatermarkStrategy
    .forMonotonousTimestamps()
    .withWatermarkAlignment("pair", Duration.ofMinutes(5))

  /** A source of one split in the alignment group; `records` bounds it, or it runs on. */
  private def member(name: String, records: Option[Long]): DataFrame = {
    val b = GeneratorSource.builder().splits(1).eventTimeStartMs(1700000000000L)
    Sluice.fromSource(
      spark,
      records.fold(b.rowsPerSecond(50))(b.recordsPerSplit).build(),
      grouped,
      name)
  }

  private def start(df: DataFrame, trigger: Trigger): StreamingQuery = df.writeStream
    .format("noop")
    .option("checkpointLocation", tempDir("lifecycle").toString)
    .trigger(trigger)
    .start()

  test("100 queries started and stopped leave every registry as it was") {
    val factories = SourceFactories.size
    // in rounds of five queries at once, to keep it quick; the first query of a few rounds is a
    // long-running one (continuous: one source, Spark has no union there) holding a live group
    (0 until 100).grouped(5).foreach { round =>
      val live = round.head % 50 == 0
      val queries = round.map { i =>
        if (live && i == round.head)
          start(member(s"live$i", None), Trigger.Continuous("200 milliseconds"))
        else
          start(member(s"a$i", Some(20)).union(member(s"b$i", Some(20))), Trigger.AvailableNow())
      }
      try {
        (if (live) queries.tail else queries).foreach { q =>
          awaitEnd(q)
          assert(q.exception.isEmpty, q.exception)
          assert(q.recentProgress.map(_.numInputRows).sum == 40L)
        }
        if (live)
          eventually("the live alignment group to hold the readers' splits", queries.head)(
            LiveAlignmentChannel.coordinator.size == 1 && AlignmentCoordinator.size == 1)
      } finally queries.foreach(_.stop())
      assert(AlignmentCoordinator.size == 0, s"alignment groups left after queries $round")
      assert(LiveAlignmentChannel.coordinator.size == 0, s"live groups left after queries $round")
    }
    assert(SourceFactories.size == factories, "queries registered source factories")
  }

  test(
    "an aligned query whose source cannot start fails when it plans, is stopped, and leaves no group or enumerator behind") {
    val topic = "lifecycle-no-start"
    kafka.createTopic(topic, 1)
    kafka.produce(topic, Seq(ProducedRecord.text(value = Some("x"), timestamp = Some(1000L))))
    def enumeratorThreads = Thread.getAllStackTraces.keySet
      .toArray(Array.empty[Thread])
      .count(t => t.isAlive && t.getName.contains("sluice-enumerator-"))
    val threadsBefore = enumeratorThreads
    // no record at or after the start timestamp: the enumerator refuses to start the source
    val late = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.timestamp(1000000L))
      .option("startingOffsetsByTimestampStrategy", "error")
      .build()
    val q = start(
      Sluice
        .fromSource(spark, late, grouped, "late")
        .select("event_time")
        .union(member("next", Some(20)).select("event_time")),
      Trigger.AvailableNow())
    try {
      val e = intercept[org.apache.spark.sql.streaming.StreamingQueryException](awaitEnd(q))
      assert(e.getMessage.contains("has a timestamp at or after 1000000"), e.getMessage)
      val causes = Iterator.iterate(e: Throwable)(_.getCause).takeWhile(_ != null).toSeq
      assert(
        causes.exists {
          case t: org.apache.spark.SparkThrowable => t.getCondition == "SLUICE_SOURCE_FAULT"
          case _ => false
        },
        causes.map(_.getClass.getName))
    } finally q.stop()
    assert(AlignmentCoordinator.size == 0, "the failed query left its alignment group")
    eventually("the enumerator's Admin client closed")(enumeratorThreads <= threadsBefore)
  }
}

package sluice.alignment

import java.time.Duration

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.functions.{col, window}
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * maxDrift "auto": the query's withWatermark delay minus the strategy's out-of-orderness, the
 * largest drift with which Spark drops no record of a lagging split. Against a real broker: a
 * partition whose records arrive late catches up with the others, counted through a windowed
 * aggregation under withWatermark.
 */
class AutoDriftSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val Minute = 60000L
  private val Hour = 60 * Minute
  private val end = 1700000000000L / Hour * Hour

  /**
   * A topic whose partitions 1-3 run half an hour ahead of partition 0, whose next half hour comes
   * later (each aligned batch advances by the drift: the spans set how many batches run).
   */
  private final class Lagging(val topic: String) {
    kafka.createTopic(topic, 4)
    private def minutes(p: Int, from: Int, until: Int) = (from until until).map(i =>
      ProducedRecord.text(
        value = Some(s"$p-$i"),
        partition = Some(p),
        timestamp = Some(end + i * Minute)))
    private val first = minutes(0, -30, 0) ++ (1 until 4).flatMap(minutes(_, -30, 30))
    private val later = minutes(0, 0, 30)
    kafka.produce(topic, first)
    def catchUp(): Unit = kafka.produce(topic, later)
    def total: Int = first.size + later.size
  }

  private def source(topic: String, strategy: WatermarkStrategy, name: String): DataFrame =
    Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .build(),
      strategy,
      name)

  private def start(
      df: DataFrame,
      table: String,
      trigger: Trigger = Trigger.ProcessingTime(0)): StreamingQuery =
    df.writeStream
      .format("memory")
      .queryName(table)
      .outputMode(OutputMode.Update())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(trigger)
      .start()

  /** Counts per 1-minute window with a 10-minute watermark delay, while partition 0 catches up. */
  private def countWhileCatchingUp(
      data: Lagging,
      strategy: WatermarkStrategy,
      table: String): StreamingQuery = {
    val q = start(
      source(data.topic, strategy, table)
        .withWatermark("event_time", "10 minutes")
        .groupBy(window(col("event_time"), "1 minute"))
        .count(),
      table)
    try {
      processAllAvailable(q)
      data.catchUp()
      processAllAvailable(q)
    } finally q.stop()
    assert(q.exception.isEmpty, q.exception)
    q
  }

  /** Rows the aggregation counted: the last count of each window, summed. */
  private def counted(table: String): Long =
    spark
      .table(table)
      .collect()
      .map(r => r.getStruct(0).getTimestamp(0).getTime -> r.getLong(1))
      .groupBy(_._1)
      .values
      .map(_.map(_._2).max)
      .sum

  private def dropped(q: StreamingQuery): Long =
    q.recentProgress.flatMap(_.stateOperators).map(_.numRowsDroppedByWatermark).sum

  private def sourceMetrics(q: StreamingQuery, key: String): Set[String] =
    q.recentProgress.flatMap(_.sources).filter(_.numInputRows > 0).map(_.metrics.get(key)).toSet

  test(
    "auto keeps every record of the lagging partition that a larger fixed drift lets Spark drop") {
    val strategy = WatermarkStrategy.forBoundedOutOfOrderness(Duration.ofMinutes(2))

    // 20 minutes of drift with a 10-minute delay: alignment holds partitions 1-3 at 20 minutes
    // past partition 0's watermark (its last record less 2 minutes), 17 past its end; Spark's
    // watermark follows them to 7 minutes past it, and partition 0's next 7 minutes arrive behind
    val fixedData = new Lagging("drift-fixed")
    val fixed = countWhileCatchingUp(
      fixedData,
      strategy.withWatermarkAlignment("fixed", Duration.ofMinutes(20)),
      "drift_fixed")
    assert(dropped(fixed) > 0)
    assert(counted("drift_fixed") < fixedData.total)

    // auto: 10 minutes of delay minus 2 of out-of-orderness
    val autoData = new Lagging("drift-auto")
    val auto = countWhileCatchingUp(
      autoData,
      strategy.withWatermarkAlignmentFromQueryWatermark("auto"),
      "drift_auto")
    assert(dropped(auto) == 0)
    assert(counted("drift_auto") == autoData.total)
    assert(sourceMetrics(auto, "alignment.maxDriftMs") == Set((8 * Minute - 1).toString))
    assert(sourceMetrics(auto, "alignment.maxDriftAuto") == Set("true"))
    assert(sourceMetrics(fixed, "alignment.maxDriftAuto") == Set("false"))
  }

  test("auto follows the event-time column through renames and unions") {
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignmentFromQueryWatermark("union")
    val topics = Seq("drift-union-a", "drift-union-b")
    topics.foreach { t =>
      kafka.createTopic(t, 1)
      kafka.produce(
        t,
        (0 until 30).map(i =>
          ProducedRecord.text(value = Some(s"$i"), timestamp = Some(end + i * Minute))))
    }
    val Seq(a, b) =
      topics.map(t => source(t, strategy, t).select(col("value"), col("event_time").as("ts")))
    val q = start(
      a.union(b)
        .withWatermark("ts", "5 minutes")
        .groupBy(window(col("ts"), "1 minute"))
        .count(),
      "drift_union",
      Trigger.AvailableNow())
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    assert(counted("drift_union") == 60)
    assert(sourceMetrics(q, "alignment.maxDriftMs") == Set((5 * Minute - 1).toString))
  }

  test(
    "auto without withWatermark on the event-time column fails when the query starts, saying what to add") {
    kafka.createTopic("drift-errors", 1)
    val df = source(
      "drift-errors",
      WatermarkStrategy.forMonotonousTimestamps().withWatermarkAlignmentFromQueryWatermark("g"),
      "nowm")
    def startIt(plan: DataFrame) = start(plan, "drift_none")
    val expected =
      "Sluice kafka source 'nowm': maxDrift 'auto' is the withWatermark delay of the query on the " +
        "source's event-time column 'event_time' minus the watermark strategy's out-of-orderness, but this query has " +
        "no withWatermark on 'event_time'. Add .withWatermark(\"event_time\", \"<delay>\") after reading the source, or " +
        "give a fixed maxDrift."
    assert(intercept[AnalysisException](startIt(df)).getMessage.contains(expected))
    // a watermark on another column is not one on the event time
    val other =
      df.withColumn("other_time", col("timestamp")).withWatermark("other_time", "10 minutes")
    assert(intercept[AnalysisException](startIt(other)).getMessage.contains(expected))
    // nor is one on a value computed from it
    val computed = df
      .withColumn(
        "event_time",
        col("event_time") + org.apache.spark.sql.functions.expr("INTERVAL 1 SECOND"))
      .withWatermark("event_time", "10 minutes")
    assert(intercept[AnalysisException](startIt(computed)).getMessage.contains(expected))
  }

  test("auto with a delay smaller than the out-of-orderness fails when the query starts") {
    kafka.createTopic("drift-small", 1)
    val df = source(
      "drift-small",
      WatermarkStrategy
        .forBoundedOutOfOrderness(Duration.ofMinutes(2))
        .withWatermarkAlignmentFromQueryWatermark("small"),
      "small")
      .withWatermark("event_time", "1 minute")
    val e = intercept[AnalysisException](start(df, "drift_small"))
    assert(
      e.getMessage.contains(
        "Sluice kafka source 'small': maxDrift 'auto' of alignment group 'small' is the " +
          "withWatermark delay minus the watermark strategy's out-of-orderness, but the delay on 'event_time' (60000 ms) " +
          "is smaller than the out-of-orderness (120000 ms): Spark would drop records of a split that are within the " +
          "out-of-orderness even without alignment. Give withWatermark a delay of at least 120000 ms, or a fixed maxDrift."),
      e.getMessage)
  }

  test("the option takes auto by name, and refuses other words naming what it allows") {
    val base = Map(
      "source" -> "generator",
      "rowsPerSecond" -> "1",
      "watermark.kind" -> "monotonous",
      "watermark.alignment.group" -> "g")
    sluice.spark.StreamOptions.parse(base + ("watermark.alignment.maxDriftMs" -> "AUTO"))
    val e = intercept[IllegalArgumentException](
      sluice.spark.StreamOptions.parse(base + ("watermark.alignment.maxDriftMs" -> "automatic")))
    assert(
      e.getMessage == "Sluice: invalid value 'automatic' for option 'watermark.alignment.maxDriftMs'; " +
        "allowed: an integer >= 0, or auto.")
  }
}

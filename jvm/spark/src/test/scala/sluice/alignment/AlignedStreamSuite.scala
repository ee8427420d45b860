package sluice.alignment

import java.time.Duration

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, expr, window}
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, StreamingQueryProgress, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.generator.GeneratorSource
import sluice.eventtime.WatermarkStrategy

/**
 * Event time and alignment through Spark's engine, on the generator (whose event-time index is
 * exact): the same skewed backlog read with and without alignment into 1-minute window counts.
 */
class AlignedStreamSuite extends AnyFunSuite with SparkSuiteBase {
  import AlignedStreamSuite._

  private val Minute = 60000L

  // Split 0's backlog starts 22 h before the others'; 300 records a split, one a minute.
  private val source = GeneratorSource
    .builder()
    .splits(4)
    .recordsPerSplit(300)
    .eventTimeStartMs(1700000000000L)
    .eventTimeStepMs(Minute)
    .splitSkewMs(0, -22 * 60 * Minute)
    .build()
  private val strategy = WatermarkStrategy.forMonotonousTimestamps()

  private def windowCounts(df: DataFrame, table: String): StreamingQuery = {
    val q = df
      .withWatermark("event_time", "10 minutes")
      .groupBy(window(col("event_time"), "1 minute"))
      .count()
      .writeStream
      .format("memory")
      .queryName(table)
      .outputMode(OutputMode.Update())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 180000)
    assert(q.exception.isEmpty, q.exception)
    q
  }

  /** The last count of each window (update mode writes a window again whenever it changes). */
  private def finalCounts(table: String): Map[Long, Long] =
    spark
      .table(table)
      .collect()
      .map(r => r.getStruct(0).getTimestamp(0).getTime -> r.getLong(1))
      .groupBy(_._1)
      .map { case (w, cs) => w -> cs.map(_._2).max }

  private def expectedCounts: Map[Long, Long] = {
    val c = source.config
    (for (s <- 0 until 4; i <- 0L until 300)
      yield Math.floorDiv(c.eventTimeMs(s, i), Minute) * Minute)
      .groupBy(identity)
      .map { case (w, ts) => w -> ts.size.toLong }
  }

  test("rows carry event_time, taken from the connector's record time") {
    val df = Sluice.fromSource(spark, source, strategy, "timed")
    assert(df.schema.fieldNames.toSeq == GeneratorSource.Schema.fieldNames.toSeq :+ "event_time")
    val q = df.writeStream
      .format("memory")
      .queryName("timed_rows")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    val rows = spark.table("timed_rows").collect()
    assert(rows.length == 1200)
    assert(rows.forall(r =>
      r.getAs[java.sql.Timestamp]("event_time") == r.getAs[java.sql.Timestamp]("timestamp")))
    val m = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(m("watermark.status") == "ACTIVE")
    val states = splitStates(q.recentProgress.filter(_.numInputRows > 0).last)
    assert(states.size == 4 && states.forall(_.finished))
  }

  test(
    "without alignment Spark's watermark drops the lagging split's records; with it none, and counts are exact") {
    val limit = Map("maxRecordsPerTrigger" -> "100")
    val plain =
      windowCounts(Sluice.fromSource(spark, source, strategy, "plain", limit), "plain_counts")
    val aligned = windowCounts(
      Sluice.fromSource(
        spark,
        source,
        strategy.withWatermarkAlignment("g", Duration.ofMinutes(5)),
        "aligned",
        limit),
      "aligned_counts")

    assert(dropped(plain) > 0)
    assert(wrongWindows(finalCounts("plain_counts")) > 0)

    assert(dropped(aligned) == 0)
    assert(wrongWindows(finalCounts("aligned_counts")) == 0)
    val batches = aligned.recentProgress.filter(_.numInputRows > 0)
    assert(batches.forall(_.numInputRows <= 100))
    // the bound: at every batch end the unfinished splits' watermarks are within the drift (+ one record)
    batches.foreach { p =>
      val wms = splitStates(p).filter(s => !s.finished).flatMap(_.watermark)
      if (wms.size > 1)
        assert(
          wms.max - wms.min <= 5 * Minute + Minute,
          s"spread ${wms.max - wms.min} in batch ${p.batchId}")
      val m = p.sources.head.metrics.asScala
      assert(m("alignment.group") == "g")
      assert(m.contains("alignment.maxAllowedWatermarkMs"))
    }
    // the lagging split is read alone until it reaches the others
    assert(splitStates(batches.head).filter(_.watermark.isDefined).map(_.split) == Seq("0"))
    assert(batches.head.sources.head.metrics.asScala("watermark.pausedSplits") == "3")
  }

  test("a watermark strategy option without event time is refused when the source is built") {
    val e = intercept[IllegalArgumentException](
      spark.readStream
        .format("sluice")
        .options(source.options)
        .option("watermark.alignment.group", "g")
        .option("watermark.alignment.maxDriftMs", "1000")
        .load())
    assert(
      e.getMessage == "Sluice: 'watermark.alignment.group' need event time, but the watermark strategy is " +
        "noWatermarks; use forBoundedOutOfOrderness(...) or forMonotonousTimestamps().")
    val column = intercept[IllegalArgumentException](
      Sluice.fromSource(spark, source, strategy.withTimestampColumn("nope"), null))
    assert(
      column.getMessage.startsWith(
        "Sluice generator source: the watermark strategy's timestamp column 'nope' " +
          "(option 'watermark.timestampColumn') is not a column of the source"))
    val kind = intercept[IllegalArgumentException](
      spark.readStream
        .format("sluice")
        .options(source.options)
        .option("watermark.kind", "boundedOutOfOrderness")
        .load())
    assert(
      kind.getMessage == "Sluice: watermark.kind=boundedOutOfOrderness needs 'watermark.maxOutOfOrdernessMs'.")
  }

  test("event time from a column of the rows") {
    val df = Sluice.fromSource(
      spark,
      source,
      WatermarkStrategy
        .forBoundedOutOfOrderness(Duration.ofSeconds(30))
        .withTimestampColumn("timestamp"),
      "col")
    val q = df.writeStream
      .format("noop")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    val states = splitStates(q.recentProgress.filter(_.numInputRows > 0).last)
    assert(states.forall(_.finished))
    val m = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(m("maxEventTimeMs").toLong == source.config.eventTimeMs(1, 299))
  }

  /** Windows whose final count differs from the data's (missing windows included). */
  private def wrongWindows(counts: Map[Long, Long]): Int =
    expectedCounts.count { case (w, n) =>
      !counts.get(w).contains(n)
    } + (counts.keySet -- expectedCounts.keySet).size

  test(
    "a reader that cannot pause splits fails with FLIP-182's message, unless unaligned splits are allowed") {
    // a hybrid whose second source (built by a factory) has a reader that cannot pause its two splits
    def hybrid = sluice.hybrid.HybridSource
      .builder(GeneratorSource.builder().splits(1).recordsPerSplit(10).build())
      .addSource(
        (_: sluice.hybrid.SourceSwitchContext) =>
          new UnpausableSource(GeneratorSource.builder().splits(2).recordsPerSplit(50).build()),
        sluice.api.Boundedness.Bounded)
      .build()
    val aligned = strategy.withWatermarkAlignment("unpausable", Duration.ofMinutes(5))
    def start(s: WatermarkStrategy) = Sluice
      .fromSource(spark, hybrid, s, null)
      .writeStream
      .format("noop")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()

    val failed = start(aligned)
    val e = intercept[org.apache.spark.sql.streaming.StreamingQueryException](
      failed.awaitTermination(60000))
    assert(e.getCause.isInstanceOf[UnsupportedOperationException])
    assert(
      e.getCause.getMessage.startsWith(
        "This source reader does not support pause or resume splits. The hybrid " +
          "source reads 2 splits with watermark alignment (group 'unpausable')"),
      e.getCause.getMessage)

    val allowed = start(aligned.withAllowUnalignedSourceSplits(true))
    awaitEnd(allowed, timeoutMs = 60000)
    assert(allowed.exception.isEmpty)
    assert(allowed.recentProgress.map(_.numInputRows).sum == 110)
    assert(
      allowed.recentProgress
        .filter(_.numInputRows > 0)
        .last
        .sources
        .head
        .metrics
        .get("alignment.mode") == "WholeSource")
  }

  test(
    "files that hold different stretches of time are read in event-time order, from the first batch on") {
    val dir = tempDir("files")
    // file f holds 60 records, one a minute, starting f hours after the first
    (0 until 3).foreach { f =>
      java.nio.file.Files.write(
        dir.resolve(s"part-$f.json"),
        (0 until 60)
          .map(i =>
            s"""{"id": ${f * 100 + i}, "ts": ${1700000000000L / Minute * Minute + f * 60 * Minute + i * Minute}}""")
          .mkString("\n")
          .getBytes("UTF-8"))
    }
    val files = sluice.connector.file.FileSource
      .builder()
      .path(dir.toString)
      .format("json")
      .schema("id INT, ts LONG")
      .timestampColumn("ts")
      .build()
    val df = Sluice.fromSource(
      spark,
      files,
      strategy.withWatermarkAlignment("files", Duration.ofMinutes(5)),
      "files",
      Map("maxRecordsPerTrigger" -> "25"))
    val q = windowCounts(df, "file_counts")
    assert(dropped(q) == 0)
    assert(
      spark
        .table("file_counts")
        .groupBy("window")
        .agg(expr("max(count) as n"))
        .agg(expr("sum(n)"))
        .head()
        .getLong(0) == 180)
    val first = splitStates(q.recentProgress.filter(_.numInputRows > 0).head)
    assert(
      first.count(_.paused) == 2
    ) // the later files wait for the first, placed by their first record
    assert(
      q.recentProgress
        .filter(_.numInputRows > 0)
        .last
        .sources
        .head
        .metrics
        .get("alignment.mode") == "SplitsByWatermark")
  }

  /**
   * JSON lines whose own column `event_time` holds the event time: 30 records a minute apart from
   * minute 100 on, then 10 records of minutes 0 to 9, far behind Spark's watermark once the first batch is in.
   */
  private val base = 1700000000000L / Minute * Minute
  private val onTime =
    (0 until 30).map(i => (i, base + (100 + i) * Minute + 123)) // ms precision kept
  private val late = (0 until 10).map(i => (100 + i, base + i * Minute + 456))
  private def eventTimeFiles(): java.nio.file.Path = {
    val dir = tempDir("event-time-data")
    java.nio.file.Files.write(
      dir.resolve("part-0.json"),
      (onTime ++ late)
        .map { case (id, ms) =>
          s"""{"id": $id, "event_time": "${java.time.Instant.ofEpochMilli(ms)}"}"""
        }
        .mkString("", "\n", "\n")
        .getBytes("UTF-8"))
    dir
  }
  private def eventTimeSource(dir: java.nio.file.Path) = sluice.connector.file.FileSource
    .builder()
    .path(dir.toString)
    .format("json")
    .schema("id INT, event_time TIMESTAMP")
    .build()

  test(
    "a source with its own event_time column: timestampColumn=event_time, eventTimeColumn=et") {
    val files = eventTimeSource(eventTimeFiles())
    val renamed = WatermarkStrategy
      .forBoundedOutOfOrderness(Duration.ZERO)
      .withTimestampColumn("event_time")
      .withEventTimeColumn("et")
    val df = Sluice.fromSource(spark, files, renamed, "renamed")
    assert(
      df.schema.fieldNames.toSeq == Seq(
        "id",
        "event_time",
        "_split",
        "_position",
        "_timestamp",
        "et"))
    val rows = df.writeStream
      .format("memory")
      .queryName("renamed_rows")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(rows)
    assert(rows.exception.isEmpty, rows.exception)
    val byId = spark
      .table("renamed_rows")
      .collect()
      .map(r => r.getAs[Int]("id") -> r.getAs[java.sql.Timestamp]("et").getTime)
      .toMap
    assert(
      byId == (onTime ++ late).toMap
    ) // exactly the data's event times, milliseconds included
    assert(spark.table("renamed_rows").where("et <> event_time").count() == 0)

    // Spark's watermark on `et`: the first batch (about 20 records: 100 bytes a record is assumed before any is read)
    // holds on-time records only, so every later batch is past the late records, which it drops, and only those
    val limited =
      Sluice.fromSource(spark, files, renamed, "renamed", Map("maxRecordsPerTrigger" -> "10"))
    val q = limited
      .withWatermark("et", "10 minutes")
      .groupBy(window(col("et"), "1 minute"))
      .count()
      .writeStream
      .format("memory")
      .queryName("renamed_counts")
      .outputMode(OutputMode.Update())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 180000)
    assert(q.exception.isEmpty, q.exception)
    assert(
      q.recentProgress.count(_.numInputRows > 0) > 1
    ) // the late records came in a later batch than the first
    assert(dropped(q) == late.size)
    assert(finalCounts("renamed_counts") == onTime.map { case (_, ms) =>
      Math.floorDiv(ms, Minute) * Minute -> 1L
    }.toMap)
  }

  test(
    "a clash with the event-time column names the option; a configured name must be non-empty and needs event time") {
    val files = eventTimeSource(eventTimeFiles())
    val clash = intercept[IllegalArgumentException](
      Sluice.fromSource(
        spark,
        files,
        WatermarkStrategy.forMonotonousTimestamps().withTimestampColumn("event_time"),
        null))
    assert(
      clash.getMessage == "Sluice file source: the source already has a column named 'event_time', and the " +
        "watermark strategy adds its event-time column under that name (option 'watermark.eventTimeColumn' = " +
        "'event_time'); choose another name with watermark.eventTimeColumn (WatermarkStrategy.withEventTimeColumn / " +
        "with_event_time_column).")
    // a configured name is checked the same way, case-insensitively as Spark resolves columns
    val id = intercept[IllegalArgumentException](
      Sluice.fromSource(spark, source, strategy.withEventTimeColumn("ID"), null))
    assert(
      id.getMessage.startsWith(
        "Sluice generator source: the source already has a column named 'id', and the " +
          "watermark strategy adds its event-time column under that name (option 'watermark.eventTimeColumn' = 'ID')"))
    val empty = intercept[IllegalArgumentException](
      Sluice.fromSource(spark, source, strategy.withEventTimeColumn(" "), null))
    assert(
      empty.getMessage == "Sluice: invalid value ' ' for option 'watermark.eventTimeColumn'; allowed: a non-empty name.")
    val noTime = intercept[IllegalArgumentException](
      Sluice.fromSource(
        spark,
        source,
        WatermarkStrategy.noWatermarks().withEventTimeColumn("et"),
        null))
    assert(
      noTime.getMessage == "Sluice: 'watermark.eventTimeColumn' need event time, but the watermark strategy is " +
        "noWatermarks; use forBoundedOutOfOrderness(...) or forMonotonousTimestamps().")
    // the default stays event_time
    assert(
      Sluice.fromSource(spark, source, strategy, null).schema.fieldNames.last == "event_time")
  }

  test(
    "a member held back by minRecordsPerTrigger plans nothing: what it reads later is counted, once") {
    def gen(records: Long) = GeneratorSource
      .builder()
      .splits(1)
      .recordsPerSplit(records)
      .eventTimeStartMs(1700000000000L)
      .eventTimeStepMs(1000L)
      .build()
    val grouped = strategy.withWatermarkAlignment("held", Duration.ofDays(3650))
    val busy =
      Sluice.fromSource(spark, gen(400), grouped, "busy", Map("maxRecordsPerTrigger" -> "20"))
    // 20 a batch, but a batch only with 20 available or 3 s after the last: after the first batch
    // the last 10 are held back while `busy` runs
    val held = Sluice.fromSource(
      spark,
      gen(30),
      grouped,
      "held",
      Map(
        "maxRecordsPerTrigger" -> "20",
        "minRecordsPerTrigger" -> "20",
        "maxTriggerDelay" -> "3s"))
    val q = busy
      .union(held)
      .writeStream
      .format("memory")
      .queryName("held_back")
      .trigger(Trigger.ProcessingTime(100))
      .option("checkpointLocation", tempDir("held").toString)
      .start()
    try {
      eventually("every record of both members", q, timeoutMs = 120000)(
        spark.table("held_back").count() == 430)
      def counted(name: String) = q.recentProgress
        .flatMap(_.sources)
        .filter(_.metrics.get("source") == name)
        .map(_.metrics.get("recordsRead").toLong)
      eventually("the last batch's progress", q)(
        counted("held").maxOption.contains(30L) && counted("busy").maxOption.contains(400L))
      // the batches `held` skipped: fewer than `busy` ran, and `held` read nothing in them
      assert(
        q.recentProgress.count(p =>
          p.sources.exists(s =>
            s.metrics.get("source") == "held" && s.numInputRows == 0 &&
              p.numInputRows > 0)) > 0,
        "minRecordsPerTrigger held nothing back")
    } finally q.stop()
  }

  test(
    "three sources in one group: every member reads in every batch, also right after a restart") {
    // one record a second, every 4 s, every 2 s: the same hundred records cover different stretches of time
    def gen(stepMs: Long) = GeneratorSource
      .builder()
      .splits(1)
      .recordsPerSplit(3000)
      .eventTimeStartMs(1700000000000L)
      .eventTimeStepMs(stepMs)
      .build()
    val grouped = strategy.withWatermarkAlignment("trio", Duration.ofMinutes(5))
    def union = Seq(1000L, 4000L, 2000L).zipWithIndex
      .map { case (step, i) =>
        Sluice.fromSource(spark, gen(step), grouped, s"m$i", Map("maxRecordsPerTrigger" -> "100"))
      }
      .reduce(_ union _)
    val checkpoint = tempDir("trio").toString
    def start() = union.writeStream
      .format("noop")
      .option("checkpointLocation", checkpoint)
      .trigger(Trigger.ProcessingTime(0))
      .start()
    def readByMember(p: StreamingQueryProgress) = p.sources.map(_.numInputRows).toSeq

    val first = start()
    try {
      eventually("batch 3 of the first run", first)(
        first.lastProgress != null && first.lastProgress.batchId >= 3)
    } finally first.stop()
    val before = first.recentProgress.filter(_.numInputRows > 0)
    assert(before.head.batchId == 0)
    before.foreach(p =>
      assert(readByMember(p).forall(_ > 0), s"batch ${p.batchId} read ${readByMember(p)}"))

    val again =
      start() // a restart: the group's round finds where the others start in the offset log
    try {
      eventually("three batches after the restart", again)(
        again.recentProgress.count(_.numInputRows > 0) >= 3)
    } finally again.stop()
    val after = again.recentProgress.filter(_.numInputRows > 0).take(3)
    after.foreach(p =>
      assert(
        readByMember(p).forall(_ > 0),
        s"batch ${p.batchId} after the restart read ${readByMember(p)}"))
  }

  private def dropped(q: StreamingQuery): Long =
    q.recentProgress.flatMap(_.stateOperators).map(_.numRowsDroppedByWatermark).sum
}

object AlignedStreamSuite {
  final case class SplitState(
      split: String,
      watermark: Option[Long],
      status: String,
      paused: Boolean,
      finished: Boolean)

  private val Mapper = new ObjectMapper()

  /** The per-split watermarks, statuses and paused flags a batch's progress shows. */
  def splitStates(p: StreamingQueryProgress, source: Int = 0): Seq[SplitState] =
    Mapper
      .readTree(p.sources(source).metrics.get("watermark.splits"))
      .elements()
      .asScala
      .map { n =>
        SplitState(
          n.get("split").asText,
          Option(n.get("watermarkMs")).map(_.asLong),
          n.get("status").asText,
          n.get("paused").asBoolean,
          n.get("finished").asBoolean)
      }
      .toSeq

}

/** A generator whose reader cannot pause splits: a reader not adapted to FLIP-182. */
final class UnpausableSource(inner: GeneratorSource)
    extends sluice.api.Source[
      sluice.connector.generator.GeneratorSplit,
      sluice.connector.generator.GeneratorEnumeratorState] {
  import sluice.api._
  import sluice.connector.generator._
  override def sourceType: String = inner.sourceType
  override def boundedness: Boundedness = inner.boundedness
  override def schema: org.apache.spark.sql.types.StructType = inner.schema
  override def options: Map[String, String] = inner.options
  override def createEnumerator(): SplitEnumerator[GeneratorSplit, GeneratorEnumeratorState] =
    inner.createEnumerator()
  override def restoreEnumerator(state: GeneratorEnumeratorState)
      : SplitEnumerator[GeneratorSplit, GeneratorEnumeratorState] =
    inner.restoreEnumerator(state)
  override def createReader(context: ReaderContext): SplitReader[GeneratorSplit] =
    new SplitReader[GeneratorSplit] {
      private val reader = inner.createReader(context)
      override def handleSplitsChanges(ranges: Seq[SplitRange[GeneratorSplit]]): Unit =
        reader.handleSplitsChanges(ranges)
      override def fetch(): RecordsWithSplitIds = reader.fetch()
      override def close(): Unit = reader.close()
    }
  override def splitSerializer: VersionedSerializer[GeneratorSplit] = inner.splitSerializer
  override def enumeratorStateSerializer: VersionedSerializer[GeneratorEnumeratorState] =
    inner.enumeratorStateSerializer
}

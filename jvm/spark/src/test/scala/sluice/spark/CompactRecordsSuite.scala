package sluice.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.connector.generator.GeneratorSource
import sluice.eventtime.WatermarkStrategy

/** forceTimestampSupport=false: payload-only rows, conflicts refused, clear errors; latency markers. */
class CompactRecordsSuite extends AnyFunSuite with SparkSuiteBase {

  private val source = GeneratorSource.builder().splits(3).recordsPerSplit(1000).build()
  private val compactOption = Map("forceTimestampSupport" -> "false")

  private def collect(df: DataFrame, table: String): StreamingQuery = {
    val q = df.writeStream
      .format("memory")
      .queryName(table)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    assert(q.awaitTermination(120000))
    assert(q.exception.isEmpty, q.exception)
    q
  }

  private def error(f: => Any): String = intercept[IllegalArgumentException](f).getMessage

  test("compact generator rows hold exactly the payload, equal to the full rows' payload") {
    val compact = Sluice.fromSource(spark, source, null, "compact", compactOption)
    assert(
      compact.schema == StructType(
        Seq(
          StructField("id", LongType, nullable = false),
          StructField("payload", StringType, nullable = false))))
    val q = collect(compact, "gen_compact")
    collect(Sluice.fromSource(spark, source), "gen_full")
    val full = spark.table("gen_full").select("id", "payload")
    assert(spark.table("gen_compact").count() == 3000)
    assert(
      spark.table("gen_compact").exceptAll(full).isEmpty && full
        .exceptAll(spark.table("gen_compact"))
        .isEmpty)
    val m = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(m("recordLayout") == "compact")
    assert(!m.contains("maxEventTimeMs")) // no record time was read
  }

  test("the Spark setting makes every source compact; a per-source option overrides it") {
    spark.conf.set("spark.sluice.forceTimestampSupport", "false")
    try {
      assert(Sluice.fromSource(spark, source).schema.fieldNames.toSeq == Seq("id", "payload"))
      assert(
        Sluice
          .fromSource(spark, source, null, null, Map("forceTimestampSupport" -> "true"))
          .schema
          .size == 4)
    } finally spark.conf.unset("spark.sluice.forceTimestampSupport")
  }

  test(
    "a watermark strategy, alignment or latency tracking with compact records fails at build, naming the fix") {
    assert(
      error(
        Sluice.fromSource(
          spark,
          source,
          WatermarkStrategy.forMonotonousTimestamps(),
          null,
          compactOption)) ==
        "Sluice: the source option forceTimestampSupport=false (compact records, without timestamps) conflicts with " +
        "the watermark strategy (watermark.kind=monotonous), which needs each record's event time. Use " +
        "WatermarkStrategy.noWatermarks(), or set forceTimestampSupport=true.")
    assert(
      error(
        Sluice.fromSource(
          spark,
          source,
          WatermarkStrategy
            .forMonotonousTimestamps()
            .withWatermarkAlignment("g", java.time.Duration.ofMinutes(1)),
          null,
          compactOption)) ==
        "Sluice: the source option forceTimestampSupport=false (compact records, without timestamps) conflicts with " +
        "watermark alignment (group 'g'), which needs each record's event time. Remove the alignment and the " +
        "watermark strategy, or set forceTimestampSupport=true.")
    assert(
      error(
        Sluice.fromSource(
          spark,
          source,
          null,
          null,
          compactOption + ("latencyTrackingInterval" -> "1s"))) ==
        "Sluice: the source option forceTimestampSupport=false (compact records, without timestamps) conflicts with " +
        "latency tracking (latencyTrackingInterval = 1000 ms), which needs each record's arrival time. Turn it off " +
        "(latencyTrackingInterval=0), or set forceTimestampSupport=true.")
    spark.conf.set("spark.sluice.forceTimestampSupport", "false")
    try {
      assert(error(
        Sluice.fromSource(spark, source, WatermarkStrategy.forMonotonousTimestamps(), null))
        .startsWith(
          "Sluice: the Spark setting spark.sluice.forceTimestampSupport=false (compact records"))
    } finally spark.conf.unset("spark.sluice.forceTimestampSupport")
    // the layout is the binding's to decide, never a connector option
    assert(
      error(
        spark.readStream
          .format("sluice")
          .options(source.options)
          .option("recordLayout", "compact")
          .load())
        .startsWith("GeneratorSource: unknown option 'recordLayout'."))
  }

  test(
    "naming event_time or a left-out column on a compact source names compact mode and the setting") {
    val compact = Sluice.fromSource(spark, source, null, "numbers", compactOption)
    val e = intercept[AnalysisException](compact.withWatermark("event_time", "1 minute"))
    assert(
      e.getMessage.startsWith(
        "Column 'event_time' does not exist: the Sluice generator source 'numbers' runs " +
          "in compact mode (forceTimestampSupport=false), whose rows hold only id, payload. Set the source option " +
          "forceTimestampSupport=true (or the Spark setting spark.sluice.forceTimestampSupport=true)"),
      e.getMessage)
    val split = intercept[AnalysisException](compact.selectExpr("split", "payload"))
    assert(split.getMessage.startsWith(
      "Column 'split' does not exist: the Sluice generator source 'numbers' runs in compact mode"))
    // a column that no layout has keeps Spark's own error
    val other = intercept[AnalysisException](compact.select("nope"))
    assert(!other.getMessage.contains("compact mode"))
  }

  test("compact files: the parsed columns only; a timestamp column is refused") {
    val dir = tempDir("files")
    java.nio.file.Files.write(
      dir.resolve("a.json"),
      (0 until 10).map(i => s"""{"a": $i, "b": "x$i"}""").mkString("\n").getBytes("UTF-8"))
    val files =
      FileSource.builder().path(dir.toString).format("json").schema("a INT, b STRING").build()
    val df = Sluice.fromSource(spark, files, null, null, compactOption)
    assert(df.schema.fieldNames.toSeq == Seq("a", "b"))
    collect(df, "files_compact")
    assert(
      spark
        .table("files_compact")
        .collect()
        .map(r => (r.getInt(0), r.getString(1)))
        .toSet == (0 until 10).map(i => (i, s"x$i")).toSet)
    val timed = FileSource
      .builder()
      .path(dir.toString)
      .format("json")
      .schema("a INT, ts LONG")
      .timestampColumn("ts")
      .build()
    assert(
      error(
        Sluice.fromSource(
          spark,
          timed,
          null,
          null,
          compactOption)) == "FileSource: option 'timestampColumn' " +
        "gives records an event time, but compact rows (forceTimestampSupport=false) carry none; remove it or set " +
        "forceTimestampSupport=true.")
  }

  test("latency markers appear in query progress when enabled, and never as rows") {
    val q = collect(
      Sluice.fromSource(spark, source, null, "tracked", Map("latencyTrackingInterval" -> "1ms")),
      "tracked_rows")
    assert(spark.table("tracked_rows").schema == GeneratorSource.Schema)
    assert(spark.table("tracked_rows").count() == 3000)
    val m = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    val markers = m("latency.markers").toLong
    assert(markers >= 3) // at least one per task (split)
    val (p50, p99, max) =
      (m("latency.p50Ms").toLong, m("latency.p99Ms").toLong, m("latency.maxMs").toLong)
    // the generator's records "arrived" at their event time, in 2023: years before their emission
    assert(p50 > 365L * 24 * 3600 * 1000 && p50 <= p99 && p99 <= max)
    val untracked = collect(Sluice.fromSource(spark, source), "untracked_rows")
    assert(!untracked.recentProgress.last.sources.head.metrics.containsKey("latency.markers"))
  }

  test(
    "a compact hybrid is compact throughout; starting at the previous end needs event time and is refused") {
    val second = GeneratorSource.builder().splits(1).recordsPerSplit(5).payloadBytes(4).build()
    val hybrid = sluice.hybrid.HybridSource.builder(source).addSource(second).build()
    val df = Sluice.fromSource(spark, hybrid, null, null, compactOption)
    assert(df.schema.fieldNames.toSeq == Seq("id", "payload"))
    collect(df, "hybrid_compact")
    assert(spark.table("hybrid_compact").count() == 3005)

    def kafka(topic: String) = sluice.connector.kafka.KafkaSource
      .builder()
      .bootstrapServers("127.0.0.1:9")
      .topics(topic)
      .startingOffsets(sluice.connector.kafka.OffsetsInitializer.earliest())
    val chained = sluice.hybrid.HybridSource
      .builder(
        kafka("a").stoppingOffsets(sluice.connector.kafka.OffsetsInitializer.latest()).build())
      .addSourceStartingAtPreviousEnd(kafka("b").build(), 1000)
      .build()
    assert(
      error(
        Sluice.fromSource(
          spark,
          chained,
          null,
          null,
          compactOption)) == "HybridSource: source 1 starts at " +
        "the previous source's last event time, but compact rows (forceTimestampSupport=false) carry no event time; " +
        "give it fixed start positions or set forceTimestampSupport=true.")
  }
}

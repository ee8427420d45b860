package sluice.hybrid

import java.time.Duration

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.functions.col
import org.apache.spark.sql.streaming.{StreamingQueryProgress, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.parquet.ParquetSource
import sluice.connector.format.Provenance
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** A Parquet directory (the history), then Kafka (the live tail), aligned by both members' indexes. */
class ParquetKafkaHybridSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val Base = 1767225600000L // 2026-01-01T00:00:00Z

  private def metric(p: StreamingQueryProgress, name: String): Option[String] =
    p.sources.head.metrics.asScala.get(name)

  test(
    "Parquet then Kafka: a restart mid-row-group reads every record once; alignment by index on both sides of the switch") {
    // history: two files two hours apart in event time, 600 rows each, row groups of about 130 rows; a batch
    // (60 records) is smaller than a row group, so batches end inside row groups
    val dir = tempDir("history")
    Seq(0L, 2L).zipWithIndex.foreach { case (hour, f) =>
      spark
        .range(0, 600, 1, 1)
        .selectExpr(s"id + ${f * 600} AS id", s"${Base + hour * 3600000L} + id * 1000 AS ts")
        .write
        .mode("append")
        .option("parquet.block.size", "2048")
        .parquet(dir.toString)
    }
    // live: 200 records after the history, event time = the Kafka record timestamp
    kafka.createTopic("pq_live", 2)
    val liveStart = Base + 3 * 3600000L
    kafka.produce(
      "pq_live",
      (0 until 200).map(i =>
        ProducedRecord.text(
          value = Some(s"""{"id": ${2000 + i}, "ts": ${liveStart + i * 1000L}}"""),
          partition = Some(i % 2),
          timestamp = Some(liveStart + i * 1000L))))

    val history = ParquetSource.builder().path(dir.toString).timestampColumn("ts").build()
    val rowGroups = history.createEnumerator().discoverSplits()
    assert(rowGroups.size >= 8 && rowGroups.forall(_.indexed))
    def hybrid = HybridSource
      .builder(ParquetSource.builder().path(dir.toString).timestampColumn("ts").build())
      .addSource(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("pq_live")
          .startingOffsets(OffsetsInitializer.earliest())
          .option("format", "json")
          .option("schema", "id BIGINT, ts BIGINT")
          .build())
      .build()
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignment("hybrid", Duration.ofMinutes(5))
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) = Sluice
      .fromSource(spark, hybrid, strategy, "history+live", Map("maxRecordsPerTrigger" -> "60"))
      .select("id", "ts", Provenance.SplitColumn, Provenance.PositionColumn)
      .writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(trigger)
      .start()

    // Runs stopped after a batch or two, until the last batch the sink committed ends inside a row
    // group (a batch also ends where alignment cut at a row-group boundary): the next run resumes there.
    def committedInside: Boolean = sluice.Checkpoints.lastSinkBatch(out).exists { batch =>
      val positions = sluice.Checkpoints.positions(ckpt, batch)
      rowGroups.exists(s =>
        positions
          .get(HybridSplit.id(0, s.splitId))
          .exists(p => p > s.firstRow && p < s.firstRow + s.rowCount))
    }
    // Every batch planned by the index. A run's first batch may be the previous run's last one,
    // replayed from the offset log without planning: it reports no mode.
    def plannedByIndex(batches: Seq[StreamingQueryProgress]): Boolean =
      batches.zipWithIndex.forall { case (p, i) =>
        metric(p, "alignment.mode")
          .contains("SplitsByIndex") || (i == 0 && metric(p, "alignment.mode").forall(_.isEmpty))
      }
    var runs = 0
    while (!committedInside && runs < 6) {
      val run = start(Trigger.ProcessingTime(0))
      try
        eventually("a batch of run " + runs, run)(
          run.recentProgress.count(_.numInputRows > 0) >= 1)
      finally run.stop()
      val batches = run.recentProgress.filter(_.numInputRows > 0)
      assert(
        batches.forall(p => metric(p, "activeSource").contains("0")),
        "the runs should stop in the history")
      assert(plannedByIndex(batches.toSeq), batches.map(metric(_, "alignment.mode")).toSeq)
      runs += 1
    }
    assert(
      committedInside,
      s"after $runs runs, the last committed batch still ends at row-group boundaries")

    val second = start(Trigger.AvailableNow())
    awaitEnd(second, timeoutMs = 180000)
    assert(second.exception.isEmpty, second.exception)
    val ids = spark.read.parquet(out).select("id").collect().map(_.getLong(0)).toSeq
    assert(ids.sorted == (0L until 1200L) ++ (2000L until 2200L))
    val secondRun = second.recentProgress.filter(_.numInputRows > 0)
    assert(secondRun.exists(p => metric(p, "activeSource").contains("1")))
    assert(plannedByIndex(secondRun.toSeq), secondRun.map(metric(_, "alignment.mode")).toSeq)
    // every row once, at its own row index: no row group was read twice around the restarts
    assert(
      spark.read
        .parquet(out)
        .where(col("id") < 1200)
        .select(Provenance.SplitColumn, Provenance.PositionColumn)
        .distinct()
        .count() == 1200)
  }

  test(
    "Parquet then Kafka: the history's row groups as column batches, Kafka as rows, every record once") {
    val dir = tempDir("history-batches").resolve("files").toString
    spark
      .range(0, 900, 1, 1)
      .selectExpr("id", s"$Base + id * 1000 AS ts")
      .write
      .option("parquet.block.size", "2048")
      .parquet(dir)
    kafka.createTopic("pq_live_batches", 2)
    val liveStart = Base + 3600000L
    kafka.produce(
      "pq_live_batches",
      (0 until 100).map(i =>
        ProducedRecord.text(
          value = Some(s"""{"id": ${1000 + i}, "ts": ${liveStart + i * 1000L}}"""),
          partition = Some(i % 2),
          timestamp = Some(liveStart + i * 1000L))))
    val hybrid = HybridSource
      .builder(ParquetSource.builder().path(dir).timestampColumn("ts").build())
      .addSource(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("pq_live_batches")
          .startingOffsets(OffsetsInitializer.earliest())
          .option("format", "json")
          .option("schema", "id BIGINT, ts BIGINT")
          .build())
      .build()

    // the planner asks the hybrid for all of a batch's ranges: batches only when every member in it reads them so
    val rowGroups = hybrid.createEnumerator().discoverSplits()
    assert(rowGroups.size > 3 && rowGroups.forall(_.sourceIndex == 0))
    val whole = rowGroups.map(s => sluice.api.SplitRange(s, s.startPosition, s.stopPosition.get))
    assert(hybrid.readsColumnar(whole, sluice.config.RecordLayout.Full))

    // per batch: whether Spark read it as column batches, and its ids
    val seen = new java.util.concurrent.ConcurrentLinkedQueue[(Long, Boolean, Seq[Long])]()
    val q = Sluice
      .fromSource(
        spark,
        hybrid,
        WatermarkStrategy.forMonotonousTimestamps(),
        "history+live batches")
      .writeStream
      .queryName("pq_batches")
      .foreachBatch { (df: org.apache.spark.sql.DataFrame, id: Long) =>
        // the batch's own plan (the batch's DataFrame here is a scan of its already planned RDD)
        val running = spark.streams.active
          .find(_.name == "pq_batches")
          .get
          .asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper]
          .streamingQuery
        val columnar = running.lastExecution.executedPlan.exists(
          _.isInstanceOf[org.apache.spark.sql.execution.ColumnarToRowExec])
        seen.add((id, columnar, df.select("id").collect().map(_.getLong(0)).toSeq))
        ()
      }
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 180000)
    assert(q.exception.isEmpty, q.exception)
    val batches = seen.asScala.toSeq.filter(_._3.nonEmpty).sortBy(_._1)
    assert(batches.flatMap(_._3).sorted == (0L until 900L) ++ (1000L until 1100L))
    val (history, live) = batches.partition(_._3.forall(_ < 900L))
    assert(
      history.nonEmpty && history.forall(_._2),
      "the history's batches were not read as column batches")
    assert(
      live.nonEmpty && live.forall(b => b._3.forall(_ >= 1000L) && !b._2),
      "Kafka's batches are rows")
  }
}

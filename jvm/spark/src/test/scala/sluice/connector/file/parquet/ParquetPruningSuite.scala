package sluice.connector.file.parquet

import java.nio.file.Path

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.eventtime.WatermarkStrategy
import sluice.spark.RealTimeSink

/**
 * Column pruning of Parquet files: a query reads only the columns it uses, in every execution
 * mode, with the rows (and positions) of the unpruned read and of `spark.read.parquet`.
 *
 * The proof that an unused column is not read: the `poisoned` source declares column `big`, a
 * string in the files, as INT, so reading it fails; a query that does not use `big` succeeds.
 */
class ParquetPruningSuite extends AnyFunSuite with SparkSuiteBase {

  private val Rows = 600

  /** 600 rows in 2 `region=` directories, several row groups per file. */
  private lazy val table: Path = {
    val dir = tempDir("pruning").resolve("table")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")(
      spark
        .range(0, Rows, 1, 2)
        .selectExpr(
          "id",
          "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('name-', id) END AS name",
          "repeat(CAST(id AS STRING), 20) AS big",
          "timestamp_millis(1767225600000 + id * 1000) AS ts",
          "CAST(id % 2 AS INT) AS region")
        .write
        .option("parquet.block.size", "4096")
        .partitionBy("region")
        .parquet(dir.toString))
    dir
  }

  private def source(): ParquetSource = ParquetSource.builder().path(table.toString).build()

  /** `big` declared INT: unreadable, so any read of it fails. */
  private def poisoned(): ParquetSource =
    ParquetSource
      .builder()
      .path(table.toString)
      .schema("id BIGINT, name STRING, big INT, ts TIMESTAMP")
      .build()

  /** The rows of an AvailableNow run of `df`, and whether Spark read them as column batches. */
  private def microBatch(df: DataFrame): (Seq[Row], Boolean) = {
    val run = runToEnd(df)
    (run.rows, run.readColumnar)
  }

  /** The messages of the failure `body` ends with, and of its causes. */
  private def failure(body: => Any): String = {
    val e = intercept[Throwable](body)
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).mkString(" / ")
  }

  private val used = Seq("id", "name", "region", "_split", "_position")

  /** The unpruned read (every column, with provenance), narrowed to `used` after the query. */
  private lazy val unpruned: Seq[Row] = {
    val (rows, _) = microBatch(Sluice.fromSource(spark, source(), null, "all"))
    rows.map(r => Row(used.map(c => r.get(r.fieldIndex(c))): _*))
  }

  private def expected: Seq[Row] =
    spark.read.parquet(table.toString).select("id", "name", "region").collect().toSeq

  test("a micro-batch query reads only its columns, as rows and as column batches") {
    assert(unpruned.size == Rows)
    assert(multiset(unpruned.map(r => Row(r.toSeq.take(3): _*))) == multiset(expected))
    // the unused column is really unreadable
    assert(
      failure(microBatch(Sluice.fromSource(spark, poisoned(), null, "whole")))
        .contains("big"))

    // batches of 170 rows end inside row groups: the next starts there, at the same position
    val (batches, columnar) = microBatch(
      Sluice
        .fromSource(spark, poisoned(), null, "batches", Map("maxRecordsPerTrigger" -> "170"))
        .select(used.head, used.tail: _*))
    assert(columnar, "the scan did not read column batches")
    assert(multiset(batches) == multiset(unpruned))
    val (rows, rowPath) = withConf("spark.sql.parquet.enableVectorizedReader", "false")(
      microBatch(
        Sluice.fromSource(spark, poisoned(), null, "rows").select(used.head, used.tail: _*)))
    assert(!rowPath)
    assert(multiset(rows) == multiset(unpruned))

    // a filter's columns are used too; compact rows prune as well
    val (filtered, _) = microBatch(
      Sluice
        .fromSource(spark, poisoned(), null, "filtered", Map("forceTimestampSupport" -> "false"))
        .where("name LIKE '%1'")
        .select("id"))
    val sparkFiltered =
      spark.read.parquet(table.toString).where("name LIKE '%1'").select("id").collect().toSeq
    assert(sparkFiltered.nonEmpty && multiset(filtered) == multiset(sparkFiltered))

    // a union pairs its children's columns by position: each side still reads only its own
    val (union, _) = microBatch(
      Sluice
        .fromSource(spark, poisoned(), null, "left")
        .select("id", "name")
        .union(Sluice.fromSource(spark, poisoned(), null, "right").select("id", "name")))
    val once = unpruned.map(r => Row(r.get(0), r.get(1)))
    assert(multiset(union) == multiset(once ++ once))
  }

  test("which columns a pruned source gives is answered without building it") {
    val s = source()
    Seq(Set("id"), Set("name", "region"), Set("big", "_position"), Set.empty[String]).foreach {
      names =>
        Seq(sluice.config.RecordLayout.Full, sluice.config.RecordLayout.Compact).foreach {
          layout =>
            assert(
              s.schemaWithColumns(names, layout) == s.withColumns(names).schema(layout),
              names)
        }
    }
    assert(
      s.schemaWithColumns(Set("id"), sluice.config.RecordLayout.Full).fieldNames.toSeq ==
        Seq("id", "region", "_split", "_position", "_timestamp"))
  }

  test("a query using no column of the files reads none of them (count)") {
    val counted =
      runToEnd(
        Sluice.fromSource(spark, poisoned(), null, "count").groupBy().count(),
        outputMode = "complete")
    assert(counted.rows == Seq(Row(Rows.toLong)))
    assert(counted.scanColumns == Seq(Seq("region", "_split", "_position", "_timestamp")))
  }

  test("without the Sluice extensions a stream reads every column") {
    val plain = org.apache.spark.sql.sluice.PlainSession.of(spark.sparkContext)
    assert(
      failure(runToEnd(Sluice.fromSource(plain, poisoned(), null, "plain").select("id")))
        .contains("big"))
    val rows =
      runToEnd(Sluice.fromSource(plain, source(), null, "plain").select(used.head, used.tail: _*))
    assert(rows.scanColumns.head.contains("big") && multiset(rows.rows) == multiset(unpruned))
  }

  test("a batch read (spark.read) reads only its columns") {
    val read = Sluice.read(spark, poisoned(), null, "batch").select(used.head, used.tail: _*)
    assert(multiset(read.collect().toSeq) == multiset(unpruned))
    assert(Sluice.read(spark, poisoned(), null, "count").count() == Rows)
    assert(failure(Sluice.read(spark, poisoned(), null, "whole").collect()).contains("big"))
  }

  test("the watermark strategy's timestamp column is read even when the query does not use it") {
    val strategy = WatermarkStrategy
      .forBoundedOutOfOrderness(java.time.Duration.ofSeconds(5))
      .withTimestampColumn("ts")
    val (rows, _) =
      microBatch(Sluice.fromSource(spark, poisoned(), strategy, "wm").select("id", "event_time"))
    val sparkRows = spark.read.parquet(table.toString).select("id", "ts").collect().toSeq
    assert(multiset(rows) == multiset(sparkRows))
  }

  test("real-time mode and continuous processing read only the query's columns") {
    Seq(
      "pruning-rt" -> Trigger.RealTime("1 second"),
      "pruning-cont" -> Trigger.Continuous("1 second")).foreach { case (sink, trigger) =>
      val q = startOpen(
        Sluice.fromSource(spark, poisoned(), null, sink).select(used.head, used.tail: _*),
        sink,
        trigger)
      val got =
        try RealTimeSink.await(sink, s"the $Rows rows ($sink)", q)(_.size >= Rows)
        finally q.stop()
      // continuous processing reads at least once (an epoch replayed): rows are unique by position
      assert(multiset(got.distinct) == multiset(unpruned), sink)
    }
  }
}

package sluice.connector.file.parquet

import java.nio.file.{Files, Path}

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.ColumnarToRowExec
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.spark.RealTimeSink

/**
 * Filters pushed to Parquet files: partition values prune files when they are listed, row-group
 * statistics prune row groups; Spark still filters the rows read, so they are those of the
 * unpushed plan and of `spark.read.parquet`.
 *
 * The proofs that data was skipped: a file that is not Parquet at all sits in a day no query
 * asks for (reading its footer fails the query), and a query's input rows (what the source read,
 * before Spark's filter) are fewer than its days hold.
 */
class ParquetFilterPushdownSuite extends AnyFunSuite with SparkSuiteBase {

  private val Days = 6
  private val PerDay = 400

  /** 2400 rows: one file per `day=` directory, ids ascending, so row groups hold disjoint ids. */
  private lazy val table: Path = {
    val dir = tempDir("pushdown").resolve("table")
    spark
      .range(0, Days * PerDay, 1, 1)
      .selectExpr(
        "id",
        "concat('v', id) AS v",
        s"date_add(DATE'2024-01-01', CAST(id DIV $PerDay AS INT)) AS day")
      .write
      .option("parquet.block.size", "1024")
      .partitionBy("day")
      .parquet(dir.toString)
    dir
  }

  private var queries = 0

  /** An AvailableNow run: its rows, the rows the source read, whether Spark read column batches. */
  private def microBatch(df: DataFrame): (Seq[Row], Long, Boolean) = {
    queries += 1
    val name = s"pushdown_$queries"
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    val columnar = q
      .asInstanceOf[StreamingQueryWrapper]
      .streamingQuery
      .lastExecution
      .executedPlan
      .exists(_.isInstanceOf[ColumnarToRowExec])
    (spark.table(name).collect().toSeq, q.recentProgress.map(_.numInputRows).sum, columnar)
  }

  private def source(): ParquetSource = ParquetSource.builder().path(table.toString).build()

  private val days = "day IN (DATE'2024-01-02', DATE'2024-01-03') AND id % 3 = 0"
  private val rowGroups = "day = DATE'2024-01-01' AND id < 40"

  /** What the unpushed plan gives: every row read, then filtered by Spark. */
  private lazy val unpushed: String = {
    val (rows, read, _) = microBatch(Sluice.fromSource(spark, source(), null, "all"))
    assert(read == Days * PerDay && rows.size == Days * PerDay)
    s"pushdown_$queries"
  }

  private def expected(condition: String): Seq[Row] = {
    val viaSluice = spark.table(unpushed).where(condition).select("id", "v", "day")
    val viaSpark = spark.read.parquet(table.toString).where(condition).select("id", "v", "day")
    val rows = viaSpark.collect().toSeq
    assert(rows.nonEmpty && multiset(viaSluice.collect().toSeq) == multiset(rows))
    rows
  }

  /** A file in the last day that is not Parquet: reading its footer fails. */
  private lazy val poisoned: Unit = {
    unpushed // read before the file is there
    val lastDay = table.resolve(s"day=2024-01-0$Days")
    Files.write(lastDay.resolve("zz-not-parquet.parquet"), "not a Parquet file".getBytes("UTF-8"))
  }

  private def query(name: String, condition: String) =
    Sluice.fromSource(spark, source(), null, name).where(condition).select("id", "v", "day")

  test("a filter on partition columns skips files when they are listed, in micro-batches") {
    val rows = expected(days)
    poisoned
    val failure =
      intercept[Exception](microBatch(Sluice.fromSource(spark, source(), null, "whole")))
    assert(
      Iterator
        .iterate[Throwable](failure)(_.getCause)
        .takeWhile(_ != null)
        .exists(_.getMessage.contains("zz-not-parquet")),
      failure)

    val (batches, read, columnar) = microBatch(query("days", days))
    assert(columnar && multiset(batches) == multiset(rows))
    assert(read == 2 * PerDay, "the source read more than the two days asked for")
    val (asRows, _, rowPath) = withConf("spark.sql.parquet.enableVectorizedReader", "false")(
      microBatch(query("days_rows", days)))
    assert(!rowPath && multiset(asRows) == multiset(rows))
  }

  test("a filter on data columns skips row groups by their statistics") {
    val rows = expected(rowGroups)
    poisoned
    val (got, read, _) = microBatch(query("row_groups", rowGroups))
    assert(multiset(got) == multiset(rows))
    assert(
      read < PerDay,
      s"the source read $read rows: every row group of the day, not only those holding ids below 40")
    // Spark's setting turns it off, as for spark.read.parquet; the rows stay the same
    val (all, readAll, _) =
      withConf("spark.sql.parquet.filterPushdown", "false")(
        microBatch(query("no_stats", rowGroups)))
    assert(readAll == PerDay && multiset(all) == multiset(rows))
  }

  test("a filter that cannot be evaluated on partition values or statistics skips nothing") {
    val condition = "day = DATE'2024-01-01' AND (v LIKE '%7' OR day IS NULL)"
    val rows = expected(condition)
    poisoned
    val (got, read, _) = microBatch(query("unknown", condition))
    assert(read == PerDay && multiset(got) == multiset(rows))
  }

  /** Fails unless the query read the poisoned day: what it shows is that nothing was skipped. */
  private def readsEveryDay(df: DataFrame): Unit = {
    poisoned
    val failure = intercept[Exception](microBatch(df))
    assert(
      Iterator
        .iterate[Throwable](failure)(_.getCause)
        .takeWhile(_ != null)
        .exists(_.getMessage.contains("zz-not-parquet")),
      failure)
  }

  test("as Spark's optimizer: no filter goes below a non-deterministic column") {
    // skipping rows would change what rand(7) gives the rows that pass
    readsEveryDay(
      Sluice
        .fromSource(spark, source(), null, "nondeterministic")
        .selectExpr("id", "v", "day", "rand(7) AS r")
        .where(rowGroups))
  }

  test("a batch read (spark.read) and real-time mode skip the same data") {
    val rows = expected(days)
    poisoned
    val read = Sluice.read(spark, source(), null, "batch").where(days).select("id", "v", "day")
    assert(multiset(read.collect().toSeq) == multiset(rows))

    val sink = "pushdown-rt"
    val q: StreamingQuery =
      withConf("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")(
        query(sink, days).writeStream
          .foreach(RealTimeSink.writer(sink))
          .outputMode("update")
          .option("checkpointLocation", tempDir("ckpt").toString)
          .trigger(Trigger.RealTime("1 second"))
          .start())
    val got =
      try RealTimeSink.await(sink, s"the ${rows.size} rows", q)(_.size >= rows.size)
      finally q.stop()
    assert(multiset(got) == multiset(rows))
  }
}

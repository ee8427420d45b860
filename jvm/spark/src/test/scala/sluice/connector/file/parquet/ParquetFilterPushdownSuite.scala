package sluice.connector.file.parquet

import java.nio.file.{Files, Path}

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
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

  /** An AvailableNow run: its rows, the rows the source read, whether Spark read column batches. */
  private def microBatch(df: DataFrame): (Seq[Row], Long, Boolean) = {
    val run = runToEnd(df)
    (run.rows, run.inputRows, run.readColumnar)
  }

  private def source(): ParquetSource = ParquetSource.builder().path(table.toString).build()

  private val days = "day IN (DATE'2024-01-02', DATE'2024-01-03') AND id % 3 = 0"
  private val rowGroups = "day = DATE'2024-01-01' AND id < 40"

  /** What the unpushed plan gives: every row read, then filtered by Spark. */
  private lazy val unpushed: String = {
    val run = runToEnd(Sluice.fromSource(spark, source(), null, "all"))
    assert(run.inputRows == Days * PerDay && run.rows.size == Days * PerDay)
    run.query.name // the memory table of its rows
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
  private def readsEveryDay(df: DataFrame, outputMode: String = "append"): Unit = {
    poisoned
    val failure = intercept[Exception](runToEnd(df, outputMode = outputMode))
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

  test("no filter is pushed below a watermark, an aggregate or a join: the rows they see count") {
    readsEveryDay(
      Sluice
        .fromSource(spark, source(), null, "watermark")
        .selectExpr("*", "timestamp_millis(id) AS t")
        .withWatermark("t", "1 minute")
        .where(days))
    readsEveryDay(
      Sluice
        .fromSource(spark, source(), null, "aggregate")
        .groupBy("day")
        .count()
        .where("day = DATE'2024-01-02'"),
      outputMode = "complete")
    readsEveryDay(
      Sluice
        .fromSource(spark, source(), null, "join")
        .join(spark.range(0, Days * PerDay).toDF("id"), "id")
        .where(days))
  }

  test("a self-union pushes what both sides filter by, and nothing when they differ") {
    val rows = expected(days)
    poisoned
    val once = Sluice.fromSource(spark, source(), null, "self")
    val both = runToEnd(once.where(days).union(once.where(days)).select("id", "v", "day"))
    assert(multiset(both.rows) == multiset(rows ++ rows))
    readsEveryDay(once.where(days).union(once.where(rowGroups)))
  }

  test("without the Sluice extensions a stream skips nothing") {
    val plain = org.apache.spark.sql.sluice.PlainSession.of(spark.sparkContext)
    readsEveryDay(Sluice.fromSource(plain, source(), null, "plain").where(days))
  }

  test("a batch read (spark.read) and real-time mode skip the same data") {
    val rows = expected(days)
    poisoned
    val read = Sluice.read(spark, source(), null, "batch").where(days).select("id", "v", "day")
    assert(multiset(read.collect().toSeq) == multiset(rows))

    Seq(
      "pushdown-rt" -> Trigger.RealTime("1 second"),
      "pushdown-cont" -> Trigger.Continuous("1 second")).foreach { case (sink, trigger) =>
      val q = startOpen(query(sink, days), sink, trigger)
      val got =
        try RealTimeSink.await(sink, s"the ${rows.size} rows", q)(_.distinct.size >= rows.size)
        finally q.stop()
      // continuous processing reads at least once (an epoch replayed): rows are unique by id
      assert(multiset(got.distinct) == multiset(rows), sink)
    }
  }

  /** `days` days of `PerDay` rows under `dir`, one file per `day=` directory from `first`. */
  private def writeDays(dir: Path, first: Int, days: Int): Unit =
    spark
      .range(first * PerDay, (first + days) * PerDay, 1, 1)
      .selectExpr(
        "id",
        "concat('v', id) AS v",
        s"date_add(DATE'2024-01-01', CAST(id DIV $PerDay AS INT)) AS day")
      .write
      .mode("append")
      .partitionBy("day")
      .parquet(dir.toString)

  test(
    "a restart with other filters: files listed before count as processed, files listed after are read by the new filters") {
    val dir = tempDir("restart").resolve("table")
    writeDays(dir, 0, 3)
    val monitored = ParquetSource.builder().path(dir.toString).monitorIntervalMs(1).build()
    val (ckpt, out) = (tempDir("ckpt").toString, tempDir("out").resolve("ids").toString)
    // the memory sink cannot resume from a checkpoint: the ids go to Parquet files, all runs' together
    def run(condition: String): Seq[Long] = {
      val q = Sluice
        .fromSource(spark, monitored, null, "restart")
        .where(condition)
        .select("id")
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(q)
      q.exception.foreach(e => throw e)
      spark.read.parquet(out).collect().map(_.getLong(0)).toSeq.sorted
    }
    val first = run("day = DATE'2024-01-01'")
    assert(first == (0L until PerDay))
    // the other two days were listed and skipped: in the offsets they are files seen, with no
    // split, as a file Spark's file source read and filtered is processed; the restart does not
    // read them again, whatever its filter
    assert(run("day = DATE'2024-01-02'") == first)
    // a day listed after the restart is read by the filter of the query that lists it
    writeDays(dir, 3, 1)
    assert(run("day >= DATE'2024-01-02'") == first ++ (3L * PerDay until 4L * PerDay))
  }

  test(
    "null partition values: IS NULL keeps only their files, a comparison reads them (null skips nothing)") {
    val dir = tempDir("nulls").resolve("table")
    spark
      .range(0, 90, 1, 1)
      .selectExpr("id", "CASE WHEN id % 3 = 0 THEN NULL ELSE CAST(id % 3 AS INT) END AS p")
      .write
      .partitionBy("p")
      .parquet(dir.toString)
    assert(Files.isDirectory(dir.resolve("p=__HIVE_DEFAULT_PARTITION__")))
    val nulls = ParquetSource.builder().path(dir.toString).build()
    Seq("p IS NULL" -> 30, "p IS NOT NULL" -> 60, "p = 1" -> 60, "p <=> 1" -> 30).foreach {
      case (condition, read) =>
        val run =
          runToEnd(
            Sluice.fromSource(spark, nulls, null, "nulls").where(condition).select("id", "p"))
        val theirs = spark.read.parquet(dir.toString).where(condition).select("id", "p")
        assert(multiset(run.rows) == multiset(theirs.collect().toSeq), condition)
        assert(run.inputRows == read, condition)
    }
    // a session without the extensions reads every file and gives the same rows
    val plain = org.apache.spark.sql.sluice.PlainSession.of(spark.sparkContext)
    val unpushed =
      runToEnd(
        Sluice.fromSource(plain, nulls, null, "plain").where("p IS NULL").select("id", "p"))
    assert(unpushed.inputRows == 90 && unpushed.rows.size == 30)
  }
}

package sluice.connector.file

import java.nio.file.{Files, Path}

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.spark.RealTimeSink

/**
 * JSON and CSV lines parse only the columns a query uses, as `spark.read.json/csv` do with a
 * required schema. The proof: column `big` is declared INT but holds words, and the source reads
 * in FAILFAST mode, so a query that parses it fails; one that does not use it gets the rows of
 * `spark.read` on the same query, and the positions of the unpruned read.
 */
class LinePruningSuite extends AnyFunSuite with SparkSuiteBase {
  private val Lines = 300
  private val Schema = "id BIGINT, name STRING, big INT"

  private lazy val dir: Path = {
    val d = tempDir("line-pruning")
    Files.write(
      d.resolve("a.json"),
      (0 until Lines)
        .map(i => s"""{"id":$i,"name":"n$i","big":"word$i"}""")
        .mkString("\n")
        .getBytes("UTF-8"))
    Files.write(
      d.resolve("a.csv"),
      (0 until Lines).map(i => s"$i,n$i,word$i").mkString("\n").getBytes("UTF-8"))
    d
  }

  private def source(format: String, schema: String = Schema) = FileSource
    .builder()
    .path(dir.resolve(s"a.$format").toString)
    .format(format)
    .schema(schema)
    .option("mode", "FAILFAST")
    .build()

  private def microBatch(df: DataFrame): Seq[Row] = runToEnd(df).rows

  private val used = Seq("id", "name", "_position")

  Seq("json", "csv").foreach { format =>
    test(s"$format lines parse only the query's columns, in micro-batches and batch reads") {
      // positions of the unpruned read: the same file with a schema every line fits
      val whole = microBatch(
        Sluice
          .fromSource(spark, source(format, "id BIGINT, name STRING, big STRING"), null, "whole")
          .select(used.head, used.tail: _*))
      assert(whole.size == Lines)
      val parsesBig = intercept[Exception](microBatch(Sluice.fromSource(spark, source(format))))
      assert(
        Iterator
          .iterate[Throwable](parsesBig)(_.getCause)
          .takeWhile(_ != null)
          .exists(e => String.valueOf(e.getMessage).contains("Malformed")),
        parsesBig)

      val got = microBatch(
        Sluice.fromSource(spark, source(format), null, "pruned").select(used.head, used.tail: _*))
      assert(multiset(got) == multiset(whole))
      val sparkRows = spark.read
        .format(format)
        .schema(Schema)
        .option("mode", "FAILFAST")
        .load(dir.resolve(s"a.$format").toString)
        .select("id", "name")
        .collect()
        .toSeq
      assert(multiset(got.map(r => Row(r.get(0), r.get(1)))) == multiset(sparkRows))

      val read =
        Sluice.read(spark, source(format), null, "batch").select(used.head, used.tail: _*)
      assert(multiset(read.collect().toSeq) == multiset(whole))
    }
  }

  test("json lines in real-time mode parse only the query's columns") {
    val sink = "line-pruning-rt"
    val q = withConf("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")(
      Sluice
        .fromSource(spark, source("json"), null, sink)
        .select("id", "name")
        .writeStream
        .foreach(RealTimeSink.writer(sink))
        .outputMode("update")
        .option("checkpointLocation", tempDir("ckpt").toString)
        .trigger(Trigger.RealTime("1 second"))
        .start())
    val got =
      try RealTimeSink.await(sink, s"the $Lines rows", q)(_.size >= Lines)
      finally q.stop()
    assert(multiset(got) == multiset((0 until Lines).map(i => Row(i.toLong, s"n$i"))))
  }
}

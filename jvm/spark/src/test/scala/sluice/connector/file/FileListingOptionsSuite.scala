package sluice.connector.file

import java.nio.file.{Files, Path}
import java.nio.file.attribute.FileTime
import java.time.Instant

import org.apache.spark.sql.{DataFrame, Row}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.parquet.ParquetSource

/**
 * Spark's file options `pathGlobFilter`, `modifiedBefore`/`modifiedAfter`, `basePath` and
 * `recursiveFileLookup`: the rows are those `spark.read` gives with the same options.
 */
class FileListingOptionsSuite extends AnyFunSuite with SparkSuiteBase {

  private def rows(df: DataFrame): Map[Row, Int] = multiset(df.collect().toSeq)

  /** JSON lines in `a.json` (modified in 2020) and `b.json` (2022), and JSON in `c.txt`. */
  private lazy val lines: Path = {
    val dir = tempDir("listing-lines")
    def write(name: String, ids: Range, modified: String) = {
      val f = dir.resolve(name)
      Files.write(f, ids.map(i => s"""{"id":$i}""").mkString("\n").getBytes("UTF-8"))
      Files.setLastModifiedTime(f, FileTime.from(Instant.parse(modified)))
    }
    write("a.json", 0 until 10, "2020-01-01T00:00:00Z")
    write("b.json", 10 until 20, "2022-01-01T00:00:00Z")
    write("c.txt", 20 until 30, "2022-01-01T00:00:00Z")
    dir
  }

  private def lineRead(options: Map[String, String]): DataFrame = {
    val builder = FileSource
      .builder()
      .path(lines.toString)
      .format("json")
      .schema("id BIGINT")
      .option("timeZone", "UTC")
    Sluice
      .read(
        spark,
        options.foldLeft(builder) { case (b, (k, v)) => b.option(k, v) }.build(),
        null,
        "lines")
      .select("id")
  }

  private def sparkRead(options: Map[String, String]): DataFrame =
    spark.read.schema("id BIGINT").option("timeZone", "UTC").options(options).json(lines.toString)

  test("pathGlobFilter, modifiedBefore and modifiedAfter choose the files as spark.read does") {
    Seq(
      Map("pathGlobFilter" -> "*.json"),
      Map("modifiedAfter" -> "2021-01-01T00:00:00"),
      Map("modifiedBefore" -> "2021-01-01T00:00:00", "pathGlobFilter" -> "*.json")).foreach {
      options =>
        val expected = rows(sparkRead(options))
        assert(expected.nonEmpty && expected.size < 30, options)
        assert(rows(lineRead(options)) == expected, options)
    }
    val bad = intercept[Exception](lineRead(Map("modifiedBefore" -> "last tuesday")))
    assert(
      bad.getMessage.contains("modifiedBefore") && bad.getMessage.contains("last tuesday"),
      bad)
  }

  /** Parquet under `day=` directories. */
  private lazy val table: Path = {
    val dir = tempDir("listing-parquet").resolve("table")
    spark
      .range(0, 30, 1, 1)
      .selectExpr("id", "date_add(DATE'2024-01-01', CAST(id DIV 10 AS INT)) AS day")
      .write
      .partitionBy("day")
      .parquet(dir.toString)
    dir
  }

  private def parquetRead(path: String, options: Map[String, String]): DataFrame = {
    val builder = options.foldLeft(ParquetSource.builder().path(path)) { case (b, (k, v)) =>
      b.option(k, v)
    }
    val df = Sluice.read(spark, builder.build(), null, "parquet")
    df.select(df.columns.filterNot(_.startsWith("_")).map(df.col): _*)
  }

  test("basePath and recursiveFileLookup decide partition columns as spark.read.parquet does") {
    val oneDay = table.resolve("day=2024-01-02").toString
    val base = Map("basePath" -> table.toString)
    val withBase = parquetRead(oneDay, base)
    assert(withBase.columns.toSeq == Seq("id", "day"))
    assert(rows(withBase) == rows(spark.read.options(base).parquet(oneDay)))
    assert(rows(withBase).size == 10)

    val recursive = Map("recursiveFileLookup" -> "true")
    val flat = parquetRead(table.toString, recursive)
    assert(flat.columns.toSeq == Seq("id"))
    assert(rows(flat) == rows(spark.read.options(recursive).parquet(table.toString)))
  }
}

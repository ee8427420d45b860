package sluice.connector.file

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.format.Provenance

/**
 * Bad payloads, every way in, against Spark's own file sources on the same files: each format in
 * each parse mode, over files with malformed records, invalid UTF-8, a byte-order mark, empty
 * files, no final newline, CRLF and CR line ends. Rows must be Spark's; every record Spark's
 * DROPMALFORMED drops is counted in the source metrics; FAILFAST fails where Spark fails.
 */
class MalformedInputSuite extends AnyFunSuite with SparkSuiteBase {
  import FileTestData._

  private def bytes(s: String): Array[Byte] = s.getBytes(UTF_8)
  private val invalidUtf8 = Array[Byte](0xc3.toByte, 0x28, 0xa0.toByte, 0xff.toByte)
  private val bom = Array[Byte](0xef.toByte, 0xbb.toByte, 0xbf.toByte)

  /** Files beside the shared awkward ones: broken bytes inside and between fields, a BOM, blank files. */
  private def extraJson: Seq[(String, Array[Byte])] = Seq(
    "utf8.json" -> (bytes("""{"a": 20, "b": "bad """) ++ invalidUtf8 ++ bytes(
      """ bytes"}""" + "\n") ++
      invalidUtf8 ++ bytes("\n" + """{"a": 21, "b": "after"}""" + "\r\n")),
    "bom.json" -> (bom ++ bytes("""{"a": 22, "b": "bom first"}""" + "\n" + """{"a": 23}""")),
    "blank.json" -> bytes("\n\r\n\n"),
    "bom-only.json" -> bom, // no line at all, as Hadoop's line reader sees it
    "bom-line.json" -> (bom ++ bytes("\n"))
  ) // one empty line
  private def extraCsv: Seq[(String, Array[Byte])] = Seq(
    "utf8.csv" -> (bytes("id,name,price\n20,bad ") ++ invalidUtf8 ++ bytes(
      ",2.0\n") ++ invalidUtf8 ++ bytes("\n21,after,1.0\r\n")),
    "crlf.csv" -> bytes("id,name,price\r\n22,x,1.0\r\n23,\"q\"\"uote\",2.0\r\n"),
    "bom.csv" -> (bom ++ bytes("id,name,price\n24,bom,1.0\n")),
    "blank.csv" -> bytes("\n\n"))

  private def write(
      name: String,
      shared: Seq[(String, String)],
      extra: Seq[(String, Array[Byte])]): Path = {
    val dir = FileTestData.write(tempDir(name), shared)
    extra.foreach { case (f, b) => Files.write(dir.resolve(f), b) }
    dir
  }
  private lazy val jsonDir = write("malformed-json", jsonFiles, extraJson)
  private lazy val csvDir = write("malformed-csv", csvFiles, extraCsv)
  private lazy val cleanDir =
    write("clean-json", Seq("ok.json" -> "{\"a\": 1}\r\n{\"a\": 2}"), Nil)

  private final case class Case(
      format: String,
      schema: String,
      dir: () => Path,
      options: Map[String, String] = Map.empty)

  private val cases = Seq(
    Case("json", JsonSchema, () => jsonDir),
    Case("json", JsonSchemaWithCorrupt, () => jsonDir),
    Case("json", "a INT, b STRING", () => jsonDir, Map("primitivesAsString" -> "true")),
    Case("csv", CsvSchema, () => csvDir, Map("header" -> "true")),
    Case("csv", CsvSchemaWithCorrupt, () => csvDir, Map("header" -> "true")),
    Case("csv", CsvSchemaWithCorrupt, () => csvDir),
    Case("json", "a INT", () => cleanDir))

  private def sparkRows(c: Case, mode: String): Try[Seq[Row]] = Try {
    spark.read
      .format(c.format)
      .schema(c.schema)
      .options(c.options + ("mode" -> mode))
      .option("recursiveFileLookup", "true")
      .load(c.dir().toString)
      .collect()
      .toSeq
  }

  private var queries = 0

  /** Sluice's rows (data columns only) and the largest `malformedRecordsDropped` its progress reported. */
  private def sluiceRows(c: Case, mode: String): Try[(Seq[Row], Long)] = Try {
    queries += 1
    val builder = FileSource
      .builder()
      .path(c.dir().toString)
      .format(c.format)
      .schema(c.schema)
      .option("mode", mode)
    val source = c.options.foldLeft(builder) { case (b, (k, v)) => b.option(k, v) }.build()
    val name = s"malformed_$queries"
    val q = Sluice
      .fromSource(spark, source, null, "files")
      .writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    val dropped = q.recentProgress.flatMap(
      _.sources.map(_.metrics.asScala.getOrElse("malformedRecordsDropped", "0").toLong))
    val data: DataFrame = spark
      .table(name)
      .drop(Provenance.SplitColumn, Provenance.PositionColumn, Provenance.TimestampColumn)
    (data.collect().toSeq, (0L +: dropped.toSeq).max)
  }

  private def causes(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")

  cases.foreach { c =>
    val what =
      s"${c.format} ${c.schema}${if (c.options.isEmpty) "" else " " + c.options.mkString(",")} (${c.dir().getFileName})"

    test(s"PERMISSIVE and DROPMALFORMED give Spark's rows, and every drop is counted: $what") {
      val permissive = sparkRows(c, "PERMISSIVE").get
      assert(multiset(sluiceRows(c, "PERMISSIVE").get._1) == multiset(permissive))
      val dropping = sparkRows(c, "DROPMALFORMED").get
      val (rows, dropped) = sluiceRows(c, "DROPMALFORMED").get
      assert(multiset(rows) == multiset(dropping))
      assert(
        dropped == permissive.size - dropping.size,
        s"Spark dropped ${permissive.size - dropping.size} records")
    }

    test(s"FAILFAST fails exactly where Spark fails, naming the file: $what") {
      (sparkRows(c, "FAILFAST"), sluiceRows(c, "FAILFAST")) match {
        case (scala.util.Success(expected), scala.util.Success((rows, _))) =>
          assert(multiset(rows) == multiset(expected))
        case (scala.util.Failure(_), scala.util.Failure(e)) =>
          assert(
            causes(e).contains("Malformed record in split") && causes(e).contains("FAILFAST"),
            causes(e))
        case (spark, sluice) => fail(s"Spark: $spark; Sluice: $sluice")
      }
    }
  }

  test(
    "text: invalid UTF-8, a byte-order mark, CR, CRLF and no final newline give spark.read.text's rows") {
    Seq(jsonDir, csvDir).foreach { dir =>
      val source = FileSource.builder().path(dir.toString).format("text").build()
      queries += 1
      val name = s"malformed_$queries"
      val q = Sluice
        .fromSource(spark, source, null, "text")
        .writeStream
        .format("memory")
        .queryName(name)
        .option("checkpointLocation", tempDir("ckpt").toString)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(q)
      q.exception.foreach(e => throw e)
      val expected =
        spark.read.option("recursiveFileLookup", "true").text(dir.toString).collect().toSeq
      assert(multiset(spark.table(name).select("value").collect().toSeq) == multiset(expected))
    }
  }
}

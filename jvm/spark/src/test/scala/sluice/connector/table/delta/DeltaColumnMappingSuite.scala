package sluice.connector.table.delta

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}

import org.apache.spark.sql.Row
import org.apache.spark.sql.types.{LongType, MetadataBuilder, StringType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}

/**
 * How a data file's columns are found under Delta's column mapping (Delta's protocol, "Reader
 * Requirements for Column Mapping"): in mode `id` by their Parquet field ids, whatever the file
 * names them, an id the file does not hold read as null, and a file without field ids refused; in
 * mode `name` by physical names only, field ids not used. delta-rs writes a column-mapped table's
 * files under their physical names with the same ids (`test_delta_column_mapping.py` reads those),
 * which cannot tell the two rules apart: here the data file is Spark's own Parquet writer's, its
 * columns `a` and `b` carrying field ids 1 and 2, and the log is written here (as in
 * `DeltaPlanningSuite`), naming the columns `id` (physical `col-id`, id 1), `name` (`col-name`, 2)
 * and `gone` (`col-gone`, 3).
 */
class DeltaColumnMappingSuite extends AnyFunSuite with SparkSuiteBase {

  private def withId(name: String, dataType: org.apache.spark.sql.types.DataType, id: Long) =
    StructField(
      name,
      dataType,
      nullable = true,
      new MetadataBuilder().putLong("parquet.field.id", id).build())

  /** A directory holding one data file of 3 rows: `a` = 0..2, `b` = v0..v2, with field ids or not. */
  private def dataFile(fieldIds: Boolean): (Path, String, Long) = {
    val dir = tempDir("delta-mapped")
    val schema =
      if (fieldIds) StructType(Seq(withId("a", LongType, 1), withId("b", StringType, 2)))
      else StructType(Seq(StructField("a", LongType), StructField("b", StringType)))
    val rows = (0L until 3L).map(i => Row(i, s"v$i"))
    spark
      .createDataFrame(spark.sparkContext.parallelize(rows, 1), schema)
      .write
      .parquet(dir.resolve("data").toString)
    val file =
      Files.list(dir.resolve("data")).filter(_.toString.endsWith(".parquet")).findFirst.get
    val moved = Files.move(file, dir.resolve("ab-1.parquet"))
    (dir, moved.getFileName.toString, Files.size(moved))
  }

  /** Version 0 of a table in `dir` with column mapping `mode`, whose one data file is `file`. */
  private def log(dir: Path, mode: String, file: String, size: Long): String = {
    def field(name: String, kind: String, id: Int) =
      s"""{\\"name\\":\\"$name\\",\\"type\\":\\"$kind\\",\\"nullable\\":true,\\"metadata\\":""" +
        s"""{\\"delta.columnMapping.id\\":$id,\\"delta.columnMapping.physicalName\\":\\"col-$name\\"}}"""
    val schema =
      s"""{\\"type\\":\\"struct\\",\\"fields\\":[${field("id", "long", 1)},""" +
        s"""${field("name", "string", 2)},${field("gone", "string", 3)}]}"""
    val lines = Seq(
      """{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}""",
      s"""{"metaData":{"id":"6b1e5a4e-4c61-4e4b-9f0a-2d1c5b7e9a01","format":{"provider":"parquet",""" +
        s""""options":{}},"schemaString":"$schema","partitionColumns":[],""" +
        s""""configuration":{"delta.columnMapping.mode":"$mode",""" +
        """"delta.columnMapping.maxColumnId":"3"},"createdTime":1}}""",
      s"""{"add":{"path":"$file","partitionValues":{},"size":$size,"modificationTime":1,""" +
        """"dataChange":true,"stats":"{\"numRecords\":3}"}}""")
    Files.createDirectories(dir.resolve("_delta_log"))
    Files.write(
      dir.resolve("_delta_log").resolve("00000000000000000000.json"),
      lines.mkString("\n").getBytes(StandardCharsets.UTF_8))
    dir.toString
  }

  private def rows(table: String): Seq[Row] =
    Sluice
      .read(spark, DeltaSource.builder().table(table).build())
      .select("id", "name", "gone")
      .collect()
      .toSeq

  for (vectorized <- Seq("true", "false"))
    test(
      s"mode id finds columns by field id, an id not in the file as null (vectorized=$vectorized)") {
      val (dir, file, size) = dataFile(fieldIds = true)
      val table = log(dir, "id", file, size)
      withConf("spark.sql.parquet.enableVectorizedReader", vectorized) {
        assert(
          multiset(rows(table)) ==
            multiset(Seq(Row(0L, "v0", null), Row(1L, "v1", null), Row(2L, "v2", null))))
      }
    }

  test("mode name finds columns by physical name only: the file's ids are not used") {
    val (dir, file, size) = dataFile(fieldIds = true)
    val table = log(dir, "name", file, size)
    assert(rows(table) == Seq.fill(3)(Row(null, null, null)))
  }

  test("mode id refuses a data file without field ids, as Delta's protocol allows") {
    val (dir, file, size) = dataFile(fieldIds = false)
    val table = log(dir, "id", file, size)
    val e = intercept[Exception](rows(table))
    assert(
      Iterator
        .iterate[Throwable](e)(_.getCause)
        .takeWhile(_ != null)
        .exists(_.getMessage.contains("Parquet file schema doesn't contain any field Ids")),
      e.toString)
  }
}

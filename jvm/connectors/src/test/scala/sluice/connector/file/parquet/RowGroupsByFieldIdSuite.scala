package sluice.connector.file.parquet

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.example.data.simple.SimpleGroupFactory
import org.apache.parquet.hadoop.example.ExampleParquetWriter
import org.apache.parquet.schema.MessageTypeParser
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.types.{LongType, MetadataBuilder, StructField, StructType, TimestampType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.DiscoveredFile

/**
 * A row group's event-time range, with columns found by field id (an Iceberg table's files), comes
 * from the column of the event-time column's id, also where the file holds another column whose
 * name differs from it only in case and the session's names are case-insensitive.
 */
class RowGroupsByFieldIdSuite extends AnyFunSuite {

  test(
    "the event-time statistics are the field id's column's, never a column named alike in another case") {
    // `TS` (id 9) first: found by a case-insensitive name, it would be taken for `ts` (id 3)
    val parquet = MessageTypeParser.parseMessageType(
      "message t { optional int64 TS (TIMESTAMP(MICROS,true)) = 9; optional int64 id = 1; " +
        "optional int64 ts (TIMESTAMP(MICROS,true)) = 3; }")
    val path = new Path(Files.createTempDirectory("sluice-rowgroups").resolve("f.parquet").toUri)
    val writer = ExampleParquetWriter.builder(path).withType(parquet).build()
    val rows = new SimpleGroupFactory(parquet)
    try
      (0 until 10).foreach { i =>
        writer.write(
          rows
            .newGroup()
            .append("TS", 9000000000L + i * 1000000L)
            .append("id", i.toLong)
            .append("ts", 1000000000L + i * 1000000L))
      }
    finally writer.close()

    def withId(f: StructField, id: Long) =
      f.copy(metadata =
        new MetadataBuilder().putLong(ParquetUtils.FIELD_ID_METADATA_KEY, id).build())
    // the table's columns as a query reads them: `ts` renamed `at` since the file was written
    val data = StructType(Seq(StructField("id", LongType), StructField("at", TimestampType)))
    val files = StructType(Seq(withId(data(0), 1), withId(data(1), 3)))
    val config = ByFieldIds.config(data, files, Some("at"), caseSensitive = false)
    val fs = path.getFileSystem(new Configuration())
    val status = fs.getFileStatus(path)
    val file = DiscoveredFile(path.toString, status.getLen, status.getModificationTime)
    val splits = RowGroups.splitsOf(file, new Configuration(), config)
    assert(
      splits.map(s => (s.minEventTime, s.maxEventTime)) == Seq((Some(1000000L), Some(1009000L))))
  }
}

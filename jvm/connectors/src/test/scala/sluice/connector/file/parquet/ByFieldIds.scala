package sluice.connector.file.parquet

import org.apache.spark.sql.types.StructType

/** Test settings of a Parquet read whose columns are found in the files by field id, as an Iceberg table's are. */
object ByFieldIds {

  /** `data` read from files whose columns are `files`' (`data`'s with their field ids). */
  def config(
      data: StructType,
      files: StructType,
      timestampColumn: Option[String],
      caseSensitive: Boolean): ParquetConfig =
    ParquetConfig(
      paths = Nil,
      monitorIntervalMs = None,
      ignoreMissingFiles = false,
      ignoreChangedFiles = false,
      notReadyTimeoutMs = 0L,
      timestampColumn = timestampColumn,
      dataSchema = data,
      partitionSchema = new StructType(),
      partitionRoots = Nil,
      timeZoneId = "UTC",
      caseSensitive = caseSensitive,
      sparkOptions = Map.empty,
      options = Map.empty,
      fileSchema = Some(files),
      matchFieldIds = true)
}

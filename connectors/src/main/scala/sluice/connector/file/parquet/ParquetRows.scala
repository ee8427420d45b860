package sluice.connector.file.parquet

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat

/**
 * Spark's own Parquet reader for this source's files: the function `ParquetFileFormat` builds for
 * `spark.read.parquet` (`buildReaderWithPartitionValues`), built once on the driver with the
 * session's settings and Hadoop configuration (which it broadcasts), and shipped to executors
 * with the source. So everything `spark.read.parquet` decides is decided the same way: the
 * vectorized reader where `spark.sql.parquet.enableVectorizedReader` and the types allow it
 * (else parquet-mr with Spark's `ParquetReadSupport`), calendar rebasing, INT96 handling, case
 * sensitivity, and which row groups a byte range selects (those whose midpoint lies in it).
 *
 * Each call reads one `PartitionedFile` (a row group's byte range and the file's partition
 * values) and returns its rows: data columns then partition columns. Rows are not returned as
 * columnar batches, and no filter is pushed down (every row is read).
 */
final class ParquetRows private (reader: PartitionedFile => Iterator[InternalRow]) extends Serializable {
  def read(file: PartitionedFile): Iterator[InternalRow] = reader(file)
}

object ParquetRows {
  def apply(session: SparkSession, config: ParquetConfig): ParquetRows = {
    val options = config.sparkOptions + (FileFormat.OPTION_RETURNING_BATCH -> "false")
    val hadoopConf = session.sessionState.newHadoopConfWithOptions(options)
    val build = new ParquetFileFormat().buildReaderWithPartitionValues(
      session, config.dataSchema, config.partitionSchema, config.dataSchema, Nil, options, hadoopConf)
    new ParquetRows(build)
  }
}

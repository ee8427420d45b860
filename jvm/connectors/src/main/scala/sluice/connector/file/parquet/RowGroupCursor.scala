package sluice.connector.file.parquet

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.datasources.PartitionedFile

import sluice.api.{ReaderContext, SplitRange}

/**
 * What both Parquet readers (rows and column batches) keep of an open range: the row it stands
 * at, whether it is done, and whether its file was skipped as missing or changed.
 *
 * @param start the row index Spark's reader gives first
 */
private[parquet] abstract class RowGroupCursor(
    val range: SplitRange[RowGroupSplit],
    start: Long) {
  val split: RowGroupSplit = range.split

  /** The row index of the next row Spark's reader gives. */
  var next: Long = start
  var done: Boolean = false
  private var skippedAs: Option[String] = None

  /** Ends Spark's reader now when it can be (otherwise it closes when the task completes). */
  def close(): Unit

  /** Opens the row group's file with `read` (`RowGroupFile.open`); a skipped file ends the range. */
  protected def open(
      config: ParquetConfig,
      partitions: PartitionDirectories,
      hadoopConf: () => Configuration)(read: PartitionedFile => Unit): Unit =
    RowGroupFile.open(config, partitions, split, hadoopConf)(read) match {
      case RowGroupFile.Read =>
      case skipped =>
        close()
        skippedAs = skipped.skippedAs
        done = true
    }

  /** Closes Spark's reader and counts the range's skip counters. */
  def finish(context: ReaderContext): Unit = {
    close()
    RowGroupFile.countSkips(context, split.splitId, skippedAs)
  }
}

package sluice.connector.file.parquet

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.datasources.PartitionedFile

import sluice.api.{ReaderContext, ReaderCounters, SplitRange}

/**
 * What both Parquet readers (rows and column batches) keep of an open range: the row it stands
 * at, whether it is done, whether its file was skipped as missing or changed, and how many rows
 * Spark's reader gave before the range's first row (decoded only to be dropped: it cannot seek
 * to a row).
 */
private[parquet] abstract class RowGroupCursor(val range: SplitRange[RowGroupSplit]) {
  val split: RowGroupSplit = range.split

  /**
   * The row index of the next row Spark's reader gives: from `open` on, that of the first row
   * of the row group it starts at (`RowGroupFile.startOf`).
   */
  var next: Long = split.firstRow
  var done: Boolean = false
  private var skippedAs: Option[String] = None

  /** Rows Spark's reader gave before `range.from`, which the reader dropped. */
  protected var decodedBeforeStart: Long = 0L

  /** Ends Spark's reader now when it can be (otherwise it closes when the task completes). */
  def close(): Unit

  /**
   * Opens the row group's file with `read` (`RowGroupFile.open`), Spark's reader starting at the
   * row group that holds `range.from`; a skipped file ends the range.
   */
  protected def open(
      config: ParquetConfig,
      partitions: PartitionDirectories,
      hadoopConf: () => Configuration)(read: PartitionedFile => Unit): Unit =
    RowGroupFile.open(config, partitions, split, range.from, hadoopConf) { (file, first) =>
      next = first
      read(file)
    } match {
      case RowGroupFile.Read =>
      case skipped =>
        close()
        skippedAs = skipped.skippedAs
        done = true
    }

  /** Closes Spark's reader and counts the range's skip counters and rows decoded before its start. */
  def finish(context: ReaderContext): Unit = {
    close()
    RowGroupFile.countSkips(context, split.splitId, skippedAs)
    context.count(split.splitId, ReaderCounters.RowsDecodedBeforeStart, decodedBeforeStart)
  }
}

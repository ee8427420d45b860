package sluice.connector.file.parquet

import java.io.FileNotFoundException

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.execution.datasources.PartitionedFile

import sluice.api.ReaderContext
import sluice.connector.file.ListedFileCheck
import sluice.connector.file.FileReader.{ChangedFilesSkipped, MissingFilesSkipped}
import sluice.errors.SluiceError

/**
 * What both Parquet readers (rows and column batches) do to open a row group's file, and the
 * checks they make of what Spark's reader gives back: one wording for each failure.
 */
private[parquet] object RowGroupFile {

  /** How opening went: read, or skipped (and counted under which counter). */
  sealed abstract class Opened(val skippedAs: Option[String])
  case object Read extends Opened(None)
  case object Missing extends Opened(Some(MissingFilesSkipped))
  case object Changed extends Opened(Some(ChangedFilesSkipped))

  /**
   * Calls `read` with the row group's byte range and the file's partition values, unless the
   * file changed since it was listed (`ignoreChangedFiles`) or is gone (`ignoreMissingFiles`;
   * otherwise that fails, naming the option). After `Missing` the caller closes what `read` opened.
   */
  def open(
      config: ParquetConfig,
      partitions: PartitionDirectories,
      split: RowGroupSplit,
      hadoopConf: () => Configuration)(read: PartitionedFile => Unit): Opened =
    try {
      if (ListedFileCheck.changed(
          ParquetConfig.Context,
          split.path,
          split.fileLength,
          split.modificationTime,
          config.ignoreChangedFiles,
          hadoopConf())) Changed
      else {
        read(
          PartitionedFile(
            partitions.valuesOf(split.path),
            SparkPath.fromPath(new Path(split.path)),
            split.start,
            split.length,
            Array.empty[String],
            split.modificationTime,
            split.fileLength,
            Map.empty))
        Read
      }
    } catch {
      case e: FileNotFoundException =>
        if (!config.ignoreMissingFiles) {
          throw new FileNotFoundException(
            s"${ParquetConfig.Context}: file '${split.path}' was listed but no " +
              "longer exists. Set option 'ignoreMissingFiles' to true to skip such files (they are counted as " +
              s"$MissingFilesSkipped). (${e.getMessage})")
        }
        Missing
    }

  /** Both skip counters of a split (a 0 makes a counter appear in progress), 1 for the one it was skipped as. */
  def countSkips(context: ReaderContext, splitId: String, skippedAs: Option[String]): Unit =
    Seq(MissingFilesSkipped, ChangedFilesSkipped).foreach { counter =>
      context.count(splitId, counter, if (skippedAs.contains(counter)) 1L else 0L)
    }

  /** Spark's reader ran out of rows before row `next` of the row group. */
  def endedEarly(split: RowGroupSplit, next: Long): IllegalStateException =
    SluiceError.sourceFault(
      s"${ParquetConfig.Context}: row group ${split.rowGroup} of '${split.path}' " +
        s"ended at row $next, but its footer, when the file was listed, said it holds rows ${split.firstRow} to " +
        s"${split.firstRow + split.rowCount - 1}" + (if (next == split.firstRow)
                                                       " (Spark's Parquet reader " +
                                                         s"selected no row group for byte ${split.start}, the row group's midpoint when listed)"
                                                     else "") +
        ": the file changed after it was listed.")

  /** Spark's reader gave more rows than the row group held when listed (the batch reader counts them). */
  def moreRows(split: RowGroupSplit): IllegalStateException =
    SluiceError.sourceFault(
      s"${ParquetConfig.Context}: Spark's Parquet reader gave more rows for row group " +
        s"${split.rowGroup} of '${split.path}' than the ${split.rowCount} its footer held when the file was listed: " +
        "the file changed after it was listed, or the byte range given for the row group (its midpoint) selected " +
        "another row group as well.")

  /** Spark's reader gave row `found` where row `expected` was due. */
  def otherRow(split: RowGroupSplit, found: Long, expected: Long): IllegalStateException =
    SluiceError.sourceFault(s"${ParquetConfig.Context}: reading row group ${split.rowGroup} of " +
      s"'${split.path}' (rows ${split.firstRow} to ${split.firstRow + split.rowCount - 1}) Spark's Parquet reader " +
      s"gave row $found where row $expected was expected: the byte range given for the row group " +
      "(its midpoint) selected another row group, or the file changed after it was listed.")
}

package sluice.connector.file.parquet

import java.io.FileNotFoundException

import scala.jdk.CollectionConverters._

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
   * Calls `read` with the byte range that makes Spark's reader start a range at row `from` of the
   * split (`startOf`), the row index of the first row it will give, and the file's partition
   * values, unless the file changed since it was listed (`ignoreChangedFiles`) or is gone
   * (`ignoreMissingFiles`; otherwise that fails, naming the option). After `Missing` the caller
   * closes what `read` opened.
   */
  def open(
      config: ParquetConfig,
      partitions: PartitionDirectories,
      split: RowGroupSplit,
      from: Long,
      hadoopConf: () => Configuration)(read: (PartitionedFile, Long) => Unit): Opened =
    try {
      if (ListedFileCheck.changed(
          ParquetConfig.Context,
          split.path,
          split.fileLength,
          split.modificationTime,
          config.ignoreChangedFiles,
          hadoopConf())) Changed
      else {
        val start = startOf(split, from, hadoopConf())
        read(
          PartitionedFile(
            partitions.valuesOf(split.path, split.partitionValues),
            SparkPath.fromPath(new Path(split.path)),
            start.offset,
            start.length,
            Array.empty[String],
            split.modificationTime,
            split.fileLength,
            Map.empty),
          start.firstRow)
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

  /** The byte range handed to Spark's reader, and the row index of the first row it gives. */
  final case class Start(offset: Long, length: Long, firstRow: Long)

  /**
   * Where Spark's reader starts reading a range that starts at row `from`. A row group's split:
   * at its own byte (its midpoint), from its first row. A whole-file split (a table's data file,
   * planned from the table's metadata) whose range starts past the file's first row (a batch a
   * read limit or an alignment cut ended inside the file, a restart): from the midpoint of the
   * row group holding `from` to the file's end, a byte range that selects that row group and
   * every later one, so the reader decodes and drops only that row group's rows before `from`,
   * never an earlier row group. The two readers share this (rather than the whole-file split
   * being a reader of its own) because it is the same reading: a byte range whose midpoints select
   * row groups, rows numbered from the first selected one. It needs the file's footer (read here:
   * a table's file is planned without opening it) with exact midpoints that increase with the
   * row groups: an encrypted footer, or one where they do not (old writers' dictionary offsets:
   * PARQUET-1402), is read from its first row, as the whole file.
   */
  def startOf(split: RowGroupSplit, from: Long, conf: Configuration): Start = {
    val fromFirst = Start(split.start, split.length, split.firstRow)
    if (!split.wholeFile || from <= split.firstRow) fromFirst
    else
      RowGroups
        .footer(new Path(split.path), split.fileLength, conf)
        .flatMap { meta =>
          val mids = RowGroups.midpoints(meta)
          val rows = meta.getRow_groups.asScala.toIndexedSeq.map(_.getNum_rows)
          val firstRows = rows.scanLeft(0L)(_ + _)
          val increasing = mids.zip(mids.drop(1)).forall { case (a, b) => a < b }
          // a row group without rows starts where the next one does: never the one holding `from`
          val i = rows.indices.lastIndexWhere(i => firstRows(i) <= from && rows(i) > 0)
          Option.when(increasing && i >= 0 && from < firstRows.last)(
            Start(mids(i), split.fileLength - mids(i), firstRows(i)))
        }
        .getOrElse(fromFirst)
  }

  /** Both skip counters of a split (a 0 makes a counter appear in progress), 1 for the one it was skipped as. */
  def countSkips(context: ReaderContext, splitId: String, skippedAs: Option[String]): Unit =
    Seq(MissingFilesSkipped, ChangedFilesSkipped).foreach { counter =>
      context.count(splitId, counter, if (skippedAs.contains(counter)) 1L else 0L)
    }

  /**
   * What said how many rows a split holds, and when: a row group's footer when the file was
   * listed, or, for a whole-file split, the table's metadata when the file was planned.
   */
  private def countedBy(split: RowGroupSplit): String =
    if (split.wholeFile)
      "the table's metadata (an Iceberg manifest's record count, a Delta log's numRecords), when " +
        "the file was planned,"
    else "its footer, when the file was listed,"

  /** What to do when the count was wrong: a whole-file split's can be the table metadata's fault. */
  private def cause(split: RowGroupSplit): String =
    if (split.wholeFile)
      "the table's metadata miscounts the file's rows, or the file changed after it was " +
        "committed. Repair the table (rewrite the file), or read it without timestampColumn, " +
        "which plans the file by its footer's row groups."
    else "the file changed after it was listed."

  /** Spark's reader ran out of rows before row `next` of the row group. */
  def endedEarly(split: RowGroupSplit, next: Long): IllegalStateException =
    SluiceError.sourceFault(
      s"${ParquetConfig.Context}: row group ${split.rowGroup} of '${split.path}' " +
        s"ended at row $next, but ${countedBy(split)} said it holds rows ${split.firstRow} to " +
        s"${split.firstRow + split.rowCount - 1}" + (if (next == split.firstRow)
                                                       " (Spark's Parquet reader " +
                                                         s"selected no row group for byte ${split.start}, the row group's midpoint when listed)"
                                                     else "") +
        s": ${cause(split)}")

  /** Spark's reader gave more rows than the row group held when listed (the batch reader counts them). */
  def moreRows(split: RowGroupSplit): IllegalStateException =
    SluiceError.sourceFault(
      s"${ParquetConfig.Context}: Spark's Parquet reader gave more rows for row group " +
        s"${split.rowGroup} of '${split.path}' than the ${split.rowCount} " +
        (if (split.wholeFile) s"${countedBy(split)} said it holds: ${cause(split)}"
         else
           "its footer held when the file was listed: the file changed after it was listed, or " +
             "the byte range given for the row group (its midpoint) selected another row group as well."))

  /** Spark's reader gave row `found` where row `expected` was due. */
  def otherRow(split: RowGroupSplit, found: Long, expected: Long): IllegalStateException =
    SluiceError.sourceFault(s"${ParquetConfig.Context}: reading row group ${split.rowGroup} of " +
      s"'${split.path}' (rows ${split.firstRow} to ${split.firstRow + split.rowCount - 1}) Spark's Parquet reader " +
      s"gave row $found where row $expected was expected: the byte range given for the row group " +
      "(its midpoint) selected another row group, or the file changed after it was listed.")
}

package sluice.connector.file.parquet

import java.net.{URLDecoder, URLEncoder}
import java.nio.charset.StandardCharsets

import sluice.api.{SourceSplit, VersionedSerializer}
import sluice.connector.file.DeletedRows

/**
 * One row group of one Parquet file. Positions are row indexes in the file (Spark's
 * `_metadata.row_index`): the split holds rows `[firstRow, firstRow + rowCount)`, so a range
 * `[from, until)` is rows of this row group and a restart resumes at an exact row.
 *
 * `start` and `length` are the file range handed to Spark's Parquet reader: the one byte at the
 * row group's midpoint as parquet-mr computes it from the footer (`RowGroups.midpoints`), so the
 * reader selects this row group as it selects row groups for any file split. Row groups of old
 * footers can share a midpoint; the reader then gives several, and `ParquetReader` keeps this
 * one's rows by their row index (Spark's `_metadata.row_index`), and fails on any other mismatch.
 * (Splits in offset logs written before this carry the row group's own bytes instead.)
 * `aloneAtMidpoint` says the midpoint was computed exactly as parquet-mr does (from the raw footer:
 * not an encrypted one) and no other row group of the file shares it, so the reader gives this
 * row group's rows and no others: the column-batch reader then numbers the rows by counting,
 * without Spark's row-index column (which Spark fills one boxed value at a time); any other row
 * group is read as rows.
 *
 * `deleted` are the rows of this row group its table says are deleted (Iceberg position deletes, deletion vectors):
 * both readers skip them, and positions still count every row of the file (a restart at a
 * position resumes at the same row whether rows before it were deleted or not). A row group whose
 * every row is deleted makes no split (`RowGroups.splitsOf`), as one pruned by its statistics.
 *
 * A table's data file whose metadata gives its rows and event-time range is one split of the
 * whole file (`RowGroups.wholeFile`: row group 0 of 1, rows `[0, rows)`, the file's whole byte
 * range, which selects all its row groups in order, so it counts as alone at its midpoint too),
 * made without reading its footer; its event times are then the metadata's, and its `deleted`
 * the file's every deleted row (a file whose every row is deleted makes no split either).
 *
 * `minEventTime` / `maxEventTime` are the row group's statistics of the event-time column in
 * epoch milliseconds, when the source has one and the file has statistics for it: the
 * enumerator's event-time index. They travel in the split (so in the offset log), so a restarted
 * query has its index without reading footers again.
 */
final case class RowGroupSplit(
    path: String,
    rowGroup: Int,
    rowGroups: Int,
    firstRow: Long,
    rowCount: Long,
    start: Long,
    length: Long,
    fileLength: Long,
    modificationTime: Long,
    minEventTime: Option[Long],
    maxEventTime: Option[Long],
    /** The statistics say every event time of this row group is null: it has none to align. */
    noEventTimes: Boolean = false,
    /** The midpoint is exact and no other row group of the file has it: the reader gives this one's rows alone. */
    aloneAtMidpoint: Boolean = false,
    /** Rows of this row group not to give (by row index in the file), if any. */
    deleted: Option[DeletedRows] = None,
    /**
     * The table's entry of the file (`DiscoveredFile.entry`) when the enumerator holds another
     * entry of the same path: two splits of one row group of one path, each read.
     */
    entry: Option[String] = None,
    /**
     * The file's partition values from its table's metadata (`DiscoveredFile.partitionValues`),
     * read instead of its directories; None: from its directories.
     */
    partitionValues: Option[Map[String, Option[String]]] = None,
    /**
     * Values the file's table fixes for every row in data columns, by field id
     * (`DiscoveredFile.constants`, `FileConstants`), read instead of the file's.
     */
    constants: Map[Int, Option[String]] = Map.empty)
    extends SourceSplit {

  /**
   * The path for a file of one row group; otherwise the path and `#rowgroup=<index>`; then, for
   * a table's path planned more than once, `#<entry>` (`#snapshot=<id>`, `#version=<v>`).
   */
  override val splitId: String =
    (if (rowGroups == 1) path else s"$path#rowgroup=$rowGroup") + entry.fold("")("#" + _)

  override def startPosition: Long = firstRow
  override def stopPosition: Option[Long] = Some(firstRow + rowCount)

  /**
   * A range could start at any row, but only by decoding the rows before it in the row group
   * (Spark's reader cannot seek to a row), so two tasks sharing a row group would decode its
   * first part twice: ranges are read whole by one task.
   */
  override def divisible: Boolean = false

  /**
   * A table's data file as one split (`RowGroups.wholeFile`): its byte range is the whole file,
   * where a row group's split holds one byte (its midpoint). A range of it starting inside the
   * file is read from the row group holding its start (`RowGroupFile.startOf`).
   */
  def wholeFile: Boolean = start == 0L && length == fileLength

  /** Whether the event-time index knows this row group (statistics were present). */
  def indexed: Boolean = noEventTimes || (minEventTime.isDefined && maxEventTime.isDefined)
}

private[connector] object RowGroupSplitSerializer extends VersionedSerializer[RowGroupSplit] {
  // 2 added `aloneAtMidpoint`; a version-1 split reads as not alone (its rows are read as rows).
  // 3 added `deleted` (empty: none); earlier versions have none.
  // 4 added `entry` (empty: none); earlier versions have none.
  // 5 added `partitionValues` (empty: from the directories); earlier versions read them there.
  // 6 added `constants` (empty: none); earlier versions have none.
  override val version: Int = 6

  private def opt(v: Option[Long]): String = v.map(_.toString).getOrElse("")
  private def opt(s: String): Option[Long] = if (s.isEmpty) None else Some(s.toLong)

  // The path goes last: it may contain any character but a newline.
  override def serialize(s: RowGroupSplit): String =
    Seq(
      s.rowGroup,
      s.rowGroups,
      s.firstRow,
      s.rowCount,
      s.start,
      s.length,
      s.fileLength,
      s.modificationTime,
      opt(s.minEventTime),
      opt(s.maxEventTime),
      s.noEventTimes,
      s.aloneAtMidpoint,
      s.deleted.fold("")(_.serialize),
      s.entry.getOrElse(""),
      s.partitionValues.fold("")(serializeValues),
      if (s.constants.isEmpty) ""
      else serializeValues(s.constants.map { case (id, v) => id.toString -> v }),
      s.path).mkString(":")

  /**
   * Partition values (and constants, by field id) as `name=value` pairs joined by `&`, each name and value URL-encoded (so
   * neither holds `:`, `&` nor `=`), a null value as the name alone; `&` alone for no column.
   */
  private def serializeValues(values: Map[String, Option[String]]): String =
    if (values.isEmpty) "&"
    else
      values.toSeq
        .sortBy(_._1)
        .map { case (k, v) => encode(k) + v.fold("")("=" + encode(_)) }
        .mkString("&")

  private def deserializeValues(text: String): Map[String, Option[String]] =
    text
      .split("&")
      .filter(_.nonEmpty)
      .map { pair =>
        pair.indexOf('=') match {
          case -1 => decode(pair) -> None
          case eq => decode(pair.substring(0, eq)) -> Some(decode(pair.substring(eq + 1)))
        }
      }
      .toMap

  private def encode(s: String) = URLEncoder.encode(s, StandardCharsets.UTF_8)
  private def decode(s: String) = URLDecoder.decode(s, StandardCharsets.UTF_8)

  override def deserialize(version: Int, text: String): RowGroupSplit = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("a Parquet row-group split", version, this.version)
    val fields = version match {
      case 1 => text.split(":", 12).patch(11, Seq("false", "", "", "", ""), 0)
      case 2 => text.split(":", 13).patch(12, Seq("", "", "", ""), 0)
      case 3 => text.split(":", 14).patch(13, Seq("", "", ""), 0)
      case 4 => text.split(":", 15).patch(14, Seq("", ""), 0)
      case 5 => text.split(":", 16).patch(15, Seq(""), 0)
      case _ => text.split(":", 17)
    }
    val Array(
      rg,
      rgs,
      first,
      count,
      start,
      length,
      fileLength,
      mtime,
      min,
      max,
      noTimes,
      alone,
      deleted,
      entry,
      values,
      constants,
      path) = fields
    RowGroupSplit(
      path,
      rg.toInt,
      rgs.toInt,
      first.toLong,
      count.toLong,
      start.toLong,
      length.toLong,
      fileLength.toLong,
      mtime.toLong,
      opt(min),
      opt(max),
      noTimes.toBoolean,
      alone.toBoolean,
      if (deleted.isEmpty) None else Some(DeletedRows.deserialize(deleted)),
      Option(entry).filter(_.nonEmpty),
      Option(values).filter(_.nonEmpty).map(deserializeValues),
      deserializeValues(constants).map { case (id, v) => id.toInt -> v })
  }
}

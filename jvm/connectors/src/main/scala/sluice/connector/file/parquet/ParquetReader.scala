package sluice.connector.file.parquet

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String

import sluice.api.{PausableSplitReader, ReaderContext, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.format.Provenance

/**
 * Reads row-group ranges one after the other with Spark's own Parquet reader (`rows`, built on
 * the driver: vectorized where Spark would be). A range `[from, until)` yields the rows of those
 * row indexes: data columns, then partition columns, then (full layout) the provenance columns
 * `_split`, `_position` (the row index in the file) and `_timestamp` (the file's modification
 * time).
 *
 * Rows the split's table deleted (`RowGroupSplit.deleted`) are never given; positions count them
 * all the same (they are row indexes in the file). Columns the table fixes for the whole file
 * (`RowGroupSplit.constants`: an Iceberg identity partition) hold the table's value
 * (`FileConstants`), whatever the file holds there.
 *
 * A range starting inside its row group (a restart, a batch cut by a read limit) decodes the rows
 * before `from` and drops them: Spark's reader cannot seek to a row, so resuming costs decoding
 * at most one row group's earlier rows, never reading other row groups. A whole-file split (a
 * table's data file) is read from the row group holding `from` too (`RowGroupFile.startOf`), not
 * from the file's first row. The rows dropped are counted (`RowsDecodedBeforeStart`).
 */
final class ParquetReader(
    config: ParquetConfig,
    rows: ParquetRows,
    context: ReaderContext,
    hadoopConf: () => Configuration)
    extends PausableSplitReader[RowGroupSplit] {
  import ParquetReader._

  private val appender = new Provenance.Appender
  private val tsIndex = config.timestampIndex
  private val tsMillis = config.timestampIsMillis
  private val compact = context.recordLayout == RecordLayout.Compact
  private val partitions = new PartitionDirectories(config)
  private val pending = mutable.Queue[SplitRange[RowGroupSplit]]()
  private var current: Cursor = _
  private val paused = mutable.Set[String]()
  private val parked = mutable.LinkedHashMap[String, Cursor]()

  /** An open range: Spark's row iterator over its row group, standing at row `next`. */
  private final class Cursor(toRead: SplitRange[RowGroupSplit]) extends RowGroupCursor(toRead) {
    val id: UTF8String = UTF8String.fromString(split.splitId)
    val mtimeMicros: Long = split.modificationTime * 1000L
    private var iterator: ParquetRows.IndexedRows = _
    private var pulled = 0L // rows Spark's reader gave

    private val deleted = split.deleted.orNull
    // the columns the file's table fixes (FileConstants), seen through a view of each row
    private val fixed = FileConstants
      .of(config, split.constants, split.path)
      .map(_.rowView(config.outputSchema.fields.map(_.dataType)))
      .orNull

    open(config, partitions, hadoopConf) { file =>
      iterator = rows.read(file)
      while (next < range.from && decode() != null) () // decode and drop the rows before `from`
      decodedBeforeStart = pulled
    }

    /**
     * The next row of the row group its table did not delete, or null past `until`. Deleted rows
     * are decoded and dropped; `next` counts them, as positions do.
     */
    def advance(): InternalRow = {
      var row = decode()
      while (row != null && deleted != null && deleted.contains(next - 1)) row = decode()
      if (row == null || fixed == null) row else fixed.of(row)
    }

    /** The next row of the row group, or null past `until`; a row group shorter than its footer said fails. */
    private def decode(): InternalRow = {
      if (done) return null
      if (next >= range.until) {
        // a range ending at the split's last row must have left Spark's reader none (a row group
        // alone at its byte range; a whole-file split counted by its table's metadata): more
        // would be rows the count missed, silently lost, as the batch reader checks too
        if (split.aloneAtMidpoint && range.until == split.firstRow + split.rowCount &&
          iterator != null && iterator.hasNext) throw RowGroupFile.moreRows(split)
        finishRange()
        return null
      }
      var row: InternalRow = null
      // Rows of an earlier row group at the same midpoint (old footers: PARQUET-1402) come first: skipped.
      while (row == null || iterator.rowIndex < next) {
        if (!iterator.hasNext) throw RowGroupFile.endedEarly(split, next)
        row = iterator.next()
        pulled += 1
      }
      if (iterator.rowIndex != next) throw RowGroupFile.otherRow(split, iterator.rowIndex, next)
      next += 1
      row
    }

    private def finishRange(): Unit = {
      done = true
      close()
    }

    override def close(): Unit = {
      if (iterator != null) iterator.close()
      iterator = null
    }
  }

  override def handleSplitsChanges(ranges: Seq[SplitRange[RowGroupSplit]]): Unit =
    pending ++= ranges

  override def fetch(): RecordsWithSplitIds = {
    var finished = Set.empty[String]
    if (current != null && current.done) {
      current.finish(context)
      finished = Set(current.split.splitId)
      current = null
    }
    if (current != null && paused.contains(current.split.splitId)) {
      parked(current.split.splitId) = current // keeps its place in the row group
      current = null
    }
    if (current == null) current = nextUnpaused()
    if (current == null) RecordsWithSplitIds.empty(finished) else new Batch(current, finished)
  }

  private def nextUnpaused(): Cursor =
    parked
      .find { case (id, _) => !paused.contains(id) }
      .map { case (id, c) => parked.remove(id); c }
      .orElse(pending.dequeueFirst(r => !paused.contains(r.split.splitId)).map(new Cursor(_)))
      .orNull

  override def pauseOrResumeSplits(
      toPause: Seq[RowGroupSplit],
      toResume: Seq[RowGroupSplit]): Unit = {
    // Splits this reader does not own (any more) are ignored, never an error (FLINK-39728).
    val owned =
      pending.map(_.split.splitId).toSet ++ parked.keySet ++ Option(current).map(_.split.splitId)
    paused ++= toPause.map(_.splitId).filter(owned.contains)
    paused --= toResume.map(_.splitId)
  }

  override def close(): Unit = {
    if (current != null) current.close()
    parked.values.foreach(_.close())
    parked.clear()
    pending.clear()
  }

  /** Up to `RowsPerFetch` rows of one range. */
  private final class Batch(c: Cursor, override val finishedSplits: Set[String])
      extends RecordsWithSplitIds {
    private var splitGiven = false
    private var budget = RowsPerFetch
    private var current: InternalRow = _
    private var ts = RecordsWithSplitIds.NoTimestamp

    override def nextSplit(): String =
      if (splitGiven) null
      else {
        splitGiven = true
        if (!compact) appender.split(c.id)
        c.split.splitId
      }

    override def nextRecord(): Boolean = {
      if (budget <= 0) return false
      val data = c.advance()
      if (data == null) return false
      budget -= 1
      if (compact) current = data
      else {
        ts = eventTime(data)
        current = appender(data, c.next - 1, c.mtimeMicros, hasTimestamp = true)
      }
      true
    }

    private def eventTime(data: InternalRow): Long =
      if (tsIndex < 0 || data.isNullAt(tsIndex)) RecordsWithSplitIds.NoTimestamp
      else if (tsMillis) data.getLong(tsIndex)
      else Math.floorDiv(data.getLong(tsIndex), 1000L)

    override def row: InternalRow = current
    override def eventTime: Long = ts
    override def arrivalTime: Long = c.mtimeMicros / 1000L
    override def position: Long = c.next
  }
}

object ParquetReader {
  private val RowsPerFetch = 8192
}

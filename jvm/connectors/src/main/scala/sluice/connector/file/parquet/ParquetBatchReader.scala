package sluice.connector.file.parquet

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector
import org.apache.spark.sql.types.{StringType, TimestampType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}
import org.apache.spark.unsafe.types.UTF8String

import sluice.api.{ColumnarFetch, ColumnarSplitReader, ReaderContext, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout

/**
 * Reads row-group ranges as the column batches of Spark's vectorized Parquet reader, handed to
 * Spark as they come: the reader's own vectors, without copying values, re-ordered into the
 * source's columns. Data and partition columns are the reader's, data columns holding strings
 * seen through `DictionaryStringVector` (each dictionary entry decoded once per batch, where
 * Spark's vector decodes it for every row); in the full layout `_split` and
 * `_timestamp` (the file's modification time) are constant vectors and `_position` numbers the
 * rows from the batch's first (`RowIndexVector`), so a batch holds the same values as the rows
 * `ParquetReader` builds.
 *
 * Spark's reader never lets a batch cross a row group, and it cannot seek to a row: a range that
 * starts inside its row group (a restart, a batch a read limit ended there) skips the batches
 * before its start and sees the one holding it from its start on (`OffsetColumnVector`), and a
 * range that ends inside it cuts its last batch short; only rows of the range reach Spark (the
 * rows skipped before the start are counted: `RowsDecodedBeforeStart`). Only
 * row groups alone at their midpoint are read this way (`ParquetSource.readsColumnar`): the reader
 * then gives their rows and no others, so rows are numbered by counting from the row group's first.
 * A whole-file split (a table's data file) counts as one: its range is read from the row group
 * holding its start (`RowGroupFile.startOf`), whose first row the counting starts from.
 * Rows the split's table deleted (`RowGroupSplit.deleted`) are left out of the batches
 * (`SelectedRowsVector`); positions count them all the same, as `ParquetReader`'s do. Columns the
 * table fixes for the whole file (`RowGroupSplit.constants`) are constant vectors of its values.
 * A reader that ends before the range's last row, or gives more rows than the row group held
 * when listed, fails the read (the file changed after it was listed).
 */
final class ParquetBatchReader(
    config: ParquetConfig,
    rows: ParquetRows,
    context: ReaderContext,
    hadoopConf: () => Configuration)
    extends ColumnarSplitReader[RowGroupSplit] {

  private val tsIndex = config.timestampIndex
  private val tsMillis = config.timestampIsMillis
  private val compact = context.recordLayout == RecordLayout.Compact
  private val partitions = new PartitionDirectories(config)
  private val pending = mutable.Queue[SplitRange[RowGroupSplit]]()
  private var current: Cursor = _

  /**
   * An open range: Spark's batch iterator over its row group. The row group is alone at its
   * midpoint (`readsColumnar` takes no other), so the reader gives its rows and only them, from
   * its first (`open` sets it): `next` counts them, and is the row index of the next row the
   * reader gives.
   */
  private final class Cursor(toRead: SplitRange[RowGroupSplit]) extends RowGroupCursor(toRead) {
    private var batches: ParquetRows.Batches = _

    /** The position after the last row handed on. */
    var position: Long = range.from
    // the provenance vectors of this range (the row count only sizes null counts: never null)
    private lazy val splitColumn =
      constant(StringType)(_.setUtf8String(UTF8String.fromString(split.splitId)))
    private lazy val timestampColumn =
      constant(TimestampType)(_.setLong(split.modificationTime * 1000L))

    private def constant(t: org.apache.spark.sql.types.DataType)(
        set: ConstantColumnVector => Unit) = {
      val v = new ConstantColumnVector(1, t)
      set(v)
      v
    }

    // the columns the file's table fixes (FileConstants): constant vectors replace the reader's.
    // Found before the file is opened: a value refused leaves no reader open
    private val fixed = FileConstants.of(config, split.constants, split.path).orNull

    require(
      split.aloneAtMidpoint,
      s"row group ${split.rowGroup} of '${split.path}' is not alone at an exact midpoint: read it as rows")
    done = range.from >= range.until
    if (!done) open(config, partitions, hadoopConf) { file => batches = rows.readBatches(file) }

    /**
     * The next rows of the range as a batch in the source's columns; the range is `done` after
     * its last. Batches wholly before `from` are skipped, the one holding `from` is seen from
     * there on, and one reaching past `until` is cut short.
     */
    def nextBatch(): ColumnarBatch = {
      while (true) {
        if (!batches.hasNext) throw RowGroupFile.endedEarly(split, next)
        val batch = batches.next()
        val first = next
        next += batch.numRows()
        if (next > split.firstRow + split.rowCount) throw RowGroupFile.moreRows(split)
        if (next <= range.from) decodedBeforeStart += batch.numRows()
        else {
          val skip = (math.max(first, range.from) - first).toInt
          decodedBeforeStart += skip
          val end = math.min(next, range.until)
          val count = (end - first).toInt - skip
          position = end
          done = end >= range.until
          val kept = keptRows(first, skip, count)
          // a batch whose every row was deleted is passed over (the last one of the range is
          // handed on empty: the range ends with it)
          if (kept == null || kept.nonEmpty || done) {
            val data = viewsOf(batch)
            if (fixed != null) fixed.replace(data, batch.numRows())
            val columns =
              if (compact) data
              else
                data ++ Array[ColumnVector](
                  splitColumn,
                  new RowIndexVector(first),
                  timestampColumn)
            return if (kept != null)
              new ColumnarBatch(columns.map(new SelectedRowsVector(_, kept)), kept.length)
            else
              new ColumnarBatch(
                if (skip == 0) columns else columns.map(new OffsetColumnVector(_, skip)),
                count)
          }
        }
      }
      throw new AssertionError("unreachable")
    }

    private val deleted = split.deleted.orNull

    /**
     * The rows of a batch from row index `first` to hand on, `count` of them from its row `skip`,
     * as rows of the batch, when the table deleted some of them; null when it deleted none.
     */
    private def keptRows(first: Long, skip: Int, count: Int): Array[Int] =
      if (deleted == null || !deleted.anyIn(first + skip, first + skip + count)) null
      else {
        val kept = Array.newBuilder[Int]
        var i = skip
        while (i < skip + count) { if (!deleted.contains(first + i)) kept += i; i += 1 }
        kept.result()
      }

    // the views of the reader's vectors (Spark's reader hands out the same vectors for every batch)
    private var below: Array[ColumnVector] = Array.empty
    private var views: Array[ColumnVector] = Array.empty

    /**
     * The batch's columns (a new array: the batch handed on keeps it), string ones viewed by
     * `DictionaryStringVector`, told that a new batch starts.
     */
    private def viewsOf(batch: ColumnarBatch): Array[ColumnVector] = {
      if (below.length != batch.numCols() || below.indices.exists(i =>
          below(i) ne batch.column(i))) {
        below = Array.tabulate(batch.numCols())(batch.column)
        views = below.map(DictionaryStringVector.view)
      } else
        views.foreach {
          case v: DictionaryStringVector => v.nextBatch()
          case _ =>
        }
      views.clone()
    }

    /**
     * After a range that reached its row group's end (and once its last batch is no longer in
     * use): Spark's reader must have no rows left, or it read more than this row group.
     */
    def checkNothingLeft(): Unit =
      if (batches != null && range.until == split.firstRow + split.rowCount && batches.hasNext)
        throw RowGroupFile.moreRows(split)

    override def close(): Unit = {
      if (batches != null) batches.close()
      batches = null
    }
  }

  override def handleSplitsChanges(ranges: Seq[SplitRange[RowGroupSplit]]): Unit =
    pending ++= ranges

  override def fetch(): ColumnarFetch = {
    var finished = Set.empty[String]
    // a range's last batch stays valid until this fetch: its reader closes (and frees its vectors) only now
    if (current != null && current.done) {
      current.checkNothingLeft() // on failure the task closes this reader, and so the range
      current.finish(context)
      finished = Set(current.split.splitId)
      current = null
    }
    if (current == null && pending.nonEmpty) current = new Cursor(pending.dequeue())
    if (current == null || current.done) ColumnarFetch.empty(finished)
    else {
      val batch = current.nextBatch()
      new Fetch(current.split.splitId, batch, current.position, finished)
    }
  }

  override def close(): Unit = {
    if (current != null) current.close()
    current = null
    pending.clear()
  }

  private final class Fetch(
      override val splitId: String,
      override val batch: ColumnarBatch,
      override val position: Long,
      override val finishedSplits: Set[String])
      extends ColumnarFetch {
    private val times = if (tsIndex < 0) null else batch.column(tsIndex)

    override def recordTime(row: Int): Long =
      if (times == null || times.isNullAt(row)) RecordsWithSplitIds.NoTimestamp
      else if (tsMillis) times.getLong(row)
      else Math.floorDiv(times.getLong(row), 1000L)

    override def maxRecordTime: Long =
      if (times == null) RecordsWithSplitIds.NoTimestamp else super.maxRecordTime
  }
}

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
 * Spark as they come: the reader's own vectors, without a copy, re-ordered into the source's
 * columns. Data and partition columns are the reader's; in the full layout `_split` and
 * `_timestamp` (the file's modification time) are constant vectors and `_position` is the
 * reader's row-index vector, so a batch holds the same values as the rows `ParquetReader` builds.
 *
 * Spark's reader never lets a batch cross a row group, and it cannot seek to a row: a range that
 * starts inside its row group (a restart, a batch a read limit ended there) skips the batches
 * before its start and sees the one holding it from its start on (`OffsetColumnVector`), and a
 * range that ends inside it cuts its last batch short; only rows of the range reach Spark. Every
 * batch is checked against the rows the range expects (its first and last row index), as rows are.
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

  /** An open range: Spark's batch iterator over its row group, standing at row `next`. */
  private final class Cursor(toRead: SplitRange[RowGroupSplit]) extends RowGroupCursor(toRead, toRead.from) {
    private var batches: ParquetRows.IndexedBatches = _
    // the provenance vectors of this range (the row count only sizes null counts: never null)
    private lazy val splitColumn = constant(StringType)(_.setUtf8String(UTF8String.fromString(split.splitId)))
    private lazy val timestampColumn = constant(TimestampType)(_.setLong(split.modificationTime * 1000L))

    private def constant(t: org.apache.spark.sql.types.DataType)(set: ConstantColumnVector => Unit) = {
      val v = new ConstantColumnVector(1, t)
      set(v)
      v
    }

    done = next >= range.until
    if (!done) open(config, partitions, hadoopConf) { file => batches = rows.readBatches(file) }

    /**
     * The next rows of the range as a batch in the source's columns; the range is `done` after
     * its last. A batch reaching past `until` is cut short; one starting before `from` (the
     * first of a range that starts inside the row group) is seen from `from` on.
     */
    def nextBatch(): ColumnarBatch = {
      while (true) {
        if (!batches.hasNext) throw RowGroupFile.endedEarly(split, next)
        val batch = batches.next()
        val n = batch.numRows()
        if (n > 0) {
          val indexes = batches.rowIndexes(batch)
          val (first, last) = (indexes.getLong(0), indexes.getLong(n - 1))
          // a batch wholly before `next` is skipped: rows before the range's start, or a batch of
          // an earlier row group at the same midpoint (old footers: PARQUET-1402)
          if (last >= next) {
            if (last != first + n - 1) throw RowGroupFile.otherRow(split, last, first + n - 1)
            // only the range's first batch may start before it; any other gap or overlap is wrong rows
            if (first > next || (first < next && next != range.from)) throw RowGroupFile.otherRow(split, first, next)
            val skip = (next - first).toInt
            val end = math.min(last + 1, range.until)
            val count = (end - next).toInt
            next = end
            done = next >= range.until
            val data = batches.columns(batch)
            val columns = if (compact) data else data ++ Array[ColumnVector](splitColumn, indexes, timestampColumn)
            return new ColumnarBatch(if (skip == 0) columns else columns.map(new OffsetColumnVector(_, skip)), count)
          }
        }
      }
      throw new AssertionError("unreachable")
    }

    override def close(): Unit = {
      if (batches != null) batches.close()
      batches = null
    }
  }

  override def handleSplitsChanges(ranges: Seq[SplitRange[RowGroupSplit]]): Unit = pending ++= ranges

  override def fetch(): ColumnarFetch = {
    var finished = Set.empty[String]
    // a range's last batch stays valid until this fetch: its reader closes (and frees its vectors) only now
    if (current != null && current.done) {
      current.finish(context)
      finished = Set(current.split.splitId)
      current = null
    }
    if (current == null && pending.nonEmpty) current = new Cursor(pending.dequeue())
    if (current == null || current.done) ColumnarFetch.empty(finished)
    else new Fetch(current.split.splitId, current.nextBatch(), current.next, finished)
  }

  override def close(): Unit = {
    if (current != null) current.close()
    current = null
    pending.clear()
  }

  private final class Fetch(override val splitId: String, override val batch: ColumnarBatch, override val position: Long,
      override val finishedSplits: Set[String]) extends ColumnarFetch {
    private val times = if (tsIndex < 0) null else batch.column(tsIndex)

    override def recordTime(row: Int): Long =
      if (times == null || times.isNullAt(row)) RecordsWithSplitIds.NoTimestamp
      else if (tsMillis) times.getLong(row)
      else Math.floorDiv(times.getLong(row), 1000L)
  }
}

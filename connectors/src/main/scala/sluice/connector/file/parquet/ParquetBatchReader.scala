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
 * Reads whole row groups as the column batches of Spark's vectorized Parquet reader, handed to
 * Spark as they come: the reader's own vectors, without a copy, re-ordered into the source's
 * columns. Data and partition columns are the reader's; in the full layout `_split` and
 * `_timestamp` (the file's modification time) are constant vectors and `_position` is the
 * reader's row-index vector, so a batch holds the same values as the rows `ParquetReader` builds.
 *
 * Only ranges that cover a whole row group come here (`ParquetSource.readsColumnar`): a batch
 * never needs cutting, because Spark's reader never lets one cross a row group. Every batch is
 * checked against the rows the range expects (its first and last row index), as rows are.
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
  private final class Cursor(val range: SplitRange[RowGroupSplit]) {
    val split: RowGroupSplit = range.split
    private var batches: ParquetRows.IndexedBatches = _
    /** The row index of the next row Spark's reader gives. */
    var next: Long = range.from
    var done: Boolean = next >= range.until
    var skippedAs: Option[String] = None
    // the provenance vectors of this range (the row count only sizes null counts: never null)
    private lazy val splitColumn = constant(StringType)(_.setUtf8String(UTF8String.fromString(split.splitId)))
    private lazy val timestampColumn = constant(TimestampType)(_.setLong(split.modificationTime * 1000L))

    private def constant(t: org.apache.spark.sql.types.DataType)(set: ConstantColumnVector => Unit) = {
      val v = new ConstantColumnVector(1, t)
      set(v)
      v
    }

    if (!done) RowGroupFile.open(config, partitions, split, hadoopConf) { file => batches = rows.readBatches(file) } match {
      case RowGroupFile.Read =>
      case skipped =>
        close()
        skippedAs = skipped.skippedAs
        done = true
    }

    /** The batch of the next rows in the source's columns; the range is `done` after its last. */
    def nextBatch(): ColumnarBatch = {
      while (true) {
        if (!batches.hasNext) throw RowGroupFile.endedEarly(split, next)
        val batch = batches.next()
        val n = batch.numRows()
        if (n > 0) {
          val indexes = batches.rowIndexes(batch)
          val (first, last) = (indexes.getLong(0), indexes.getLong(n - 1))
          // a batch of an earlier row group at the same midpoint (old footers: PARQUET-1402) is skipped whole
          if (last >= next) {
            if (first != next) throw RowGroupFile.otherRow(split, first, next)
            if (last != first + n - 1 || last >= range.until) throw RowGroupFile.otherRow(split, last, first + n - 1)
            next = last + 1
            done = next >= range.until
            val columns = batches.columns(batch)
            return new ColumnarBatch(if (compact) columns else columns ++ Array[ColumnVector](splitColumn, indexes,
              timestampColumn), n)
          }
        }
      }
      throw new AssertionError("unreachable")
    }

    /** Ends Spark's reader (otherwise it closes when the task completes). */
    def close(): Unit = {
      if (batches != null) batches.close()
      batches = null
    }
  }

  override def handleSplitsChanges(ranges: Seq[SplitRange[RowGroupSplit]]): Unit = pending ++= ranges

  override def fetch(): ColumnarFetch = {
    var finished = Set.empty[String]
    // a range's last batch stays valid until this fetch: its reader closes (and frees its vectors) only now
    if (current != null && current.done) {
      current.close()
      RowGroupFile.countSkips(context, current.split.splitId, current.skippedAs)
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

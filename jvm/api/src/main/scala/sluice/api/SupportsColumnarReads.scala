package sluice.api

import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.config.RecordLayout

/**
 * A source whose readers can hand Spark whole column batches for some ranges instead of one row
 * at a time (Parquet row groups through Spark's vectorized reader, Kafka's polls as vectors over
 * the records): Spark then reads the batch's vectors in generated code, as it does for its own
 * file sources.
 *
 * Spark reads every task of a scan the same way, so the binding asks once per batch of tasks
 * (`readsColumnar` over all their ranges) and uses rows for all of them when any range cannot be
 * read as batches. Batches are for ranges read from their start to their end with nothing to
 * pause: real-time mode and continuous processing always read rows. The splits' positions count
 * rows (`SourceSplit.positionsCountRecords`): a batch covering `n` positions moves its split `n`
 * positions, and holds `n` rows unless some of those positions hold none (Iceberg deletes, and
 * Kafka offsets of compacted records or transaction markers: a batch may then hold fewer rows).
 */
trait SupportsColumnarReads[SplitT <: SourceSplit] { self: Source[SplitT, _] =>

  /** Whether every range of `ranges` can be read as batches of `schema(layout)`. */
  def readsColumnar(ranges: Seq[SplitRange[SplitT]], layout: RecordLayout): Boolean

  def createColumnarReader(context: ReaderContext): ColumnarSplitReader[SplitT]
}

/**
 * Reads ranges as column batches, one range after the other, each from its `from` to its
 * `until`. Only ranges a `readsColumnar` call accepted are given to it.
 */
trait ColumnarSplitReader[SplitT <: SourceSplit] extends AutoCloseable {

  def handleSplitsChanges(ranges: Seq[SplitRange[SplitT]]): Unit

  /**
   * The next batch of one range, or none (`batch` null); either may finish ranges. Each range is
   * reported in `finishedSplits` of exactly one fetch once its `until` is reached (or its file
   * skipped as missing or changed).
   */
  def fetch(): ColumnarFetch
}

/**
 * One fetch of a `ColumnarSplitReader`. The batch and its vectors belong to the reader and are
 * valid until the next fetch (Spark's vectorized reader refills the same vectors).
 */
trait ColumnarFetch {

  /** The split the batch belongs to; null when there is no batch. */
  def splitId: String

  /** Rows of the source's schema in the reader's layout, or null. */
  def batch: ColumnarBatch

  /** The split position just after the batch's last row. */
  def position: Long

  /** The connector's record time of row `row` in epoch ms, or `RecordsWithSplitIds.NoTimestamp`. */
  def recordTime(row: Int): Long

  /**
   * The largest record time of the batch, or `NoTimestamp` when no row has one. Readers that
   * know the batch has no times (no event-time column) override it so no row is visited.
   */
  def maxRecordTime: Long = {
    var max = RecordsWithSplitIds.NoTimestamp
    var i = 0
    val n = batch.numRows()
    while (i < n) { val t = recordTime(i); if (t > max) max = t; i += 1 }
    max
  }

  def finishedSplits: Set[String]
}

object ColumnarFetch {

  /** A fetch that returns no batch but may finish splits. */
  def empty(finished: Set[String]): ColumnarFetch = new ColumnarFetch {
    override def splitId: String = null
    override def batch: ColumnarBatch = null
    override def position: Long = throw new NoSuchElementException("no batch")
    override def recordTime(row: Int): Long = throw new NoSuchElementException("no batch")
    override def finishedSplits: Set[String] = finished
  }
}

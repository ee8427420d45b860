package sluice.spark

import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReader
import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.api.{ColumnarSplitReader, ReaderContext, SourceSplit}

/**
 * The column-batch twin of `SluicePartitionReader`, for a task whose ranges the source reads as
 * batches (`SupportsColumnarReads`; a micro-batch or a batch read, never an open one):
 * hands each batch of the connector's reader to Spark as it is, with the event-time column
 * appended under a watermark strategy, and keeps the same per-split figures from whole batches
 * (the position after the batch's last row, its row count, its largest event time), so the
 * reports and the metrics are the ones rows would give.
 *
 * A batch counts as read once handed to Spark: a task that stops early (`limit`) reports the
 * rows of its last batch it did not take, which only the larger report of a full read replaces.
 */
final class SluiceColumnarPartitionReader(
    partition: SluiceInputPartition,
    reader: ColumnarSplitReader[SourceSplit],
    sourceType: String,
    context: ReaderContext.Local,
    eventTime: Option[EventTimeAppender],
    tracksEventTime: Boolean,
    progress: Option[SplitProgressAccumulator])
    extends ContinuousPartitionReader[ColumnarBatch] {

  private val ranges = new TaskRanges(partition.ranges, context, sourceType)
  try if (partition.ranges.nonEmpty) reader.handleSplitsChanges(partition.ranges)
  catch {
    case e: Throwable =>
      reader.close() // Spark never sees this reader, so it would never close it
      throw e
  }

  private var batch: ColumnarBatch = _

  override def next(): Boolean = {
    while (ranges.unfinished.nonEmpty) {
      val fetched = reader.fetch()
      ranges.unfinished --= fetched.finishedSplits
      if (fetched.batch != null && fetched.batch.numRows() > 0) {
        val split = ranges.stats(fetched.splitId)
        val rows = fetched.batch.numRows()
        // positions count rows here: the batch's last row starts one before the position after it
        if (fetched.position - 1 >= split.range.until) split.readPastRange(fetched.position - 1)
        split.position = fetched.position
        split.records += rows
        batch = eventTime match {
          case Some(appender) =>
            val (withEventTime, max) = appender.appendColumn(fetched)
            split.sawEventTime(max)
            withEventTime
          case None =>
            if (tracksEventTime) split.sawEventTime(fetched.maxRecordTime)
            fetched.batch
        }
        return true
      }
    }
    false
  }

  override def get(): ColumnarBatch = batch

  /** Where the task's splits stand (the factory's type asks for it; tasks of open batches never read batches). */
  override def getOffset(): SluicePartitionOffset = SluicePartitionOffset(
    ranges.reports(latencyMarkers = false))

  /** Spark asks once per batch: cheap next to the batch's rows. */
  override def currentMetricsValues(): Array[CustomTaskMetric] = ranges.metrics()

  private var closed = false

  override def close(): Unit = if (!closed) {
    closed = true
    try ranges.sendReports(progress)
    finally reader.close()
  }
}

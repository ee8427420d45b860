package sluice.spark

import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.streaming.ContinuousPartitionReader
import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.api.{ColumnarSplitReader, SourceSplit, SplitRange}

/**
 * Spark's column-batch reader over the task's `ReaderLoop`, for a task whose ranges the source
 * reads as batches (`SupportsColumnarReads`; a micro-batch or a batch read, never an open one):
 * owns the connector's `ColumnarSplitReader` and hands Spark each batch as the loop gives it
 * (with the event-time column appended under a watermark strategy). The loop keeps the same
 * per-split figures from whole batches as from rows, so the reports and the metrics are the
 * ones rows would give.
 *
 * A batch counts as read once handed to Spark: a task that stops early (`limit`) reports the
 * rows of its last batch it did not take, which only the larger report of a full read replaces.
 */
final class SluiceColumnarPartitionReader(
    partition: SluiceInputPartition,
    columnar: ColumnarSplitReader[SourceSplit],
    loop: ReaderLoop,
    progress: Option[SplitProgressAccumulator])
    extends ContinuousPartitionReader[ColumnarBatch] {

  private val reader = ReaderLoop.opened(
    columnar,
    partition.ranges,
    (r: ColumnarSplitReader[SourceSplit], ranges: Seq[SplitRange[SourceSplit]]) =>
      r.handleSplitsChanges(ranges))

  override def next(): Boolean =
    try loop.nextBatch(reader)
    catch SparkErrors.surface

  override def get(): ColumnarBatch = loop.batch

  /** Where the task's splits stand (the factory's type asks for it; tasks of open batches never read batches). */
  override def getOffset(): SluicePartitionOffset = SluicePartitionOffset(
    loop.reports(latencyMarkers = false))

  /** Spark asks every 100 batches (`DataSourceRDD`): cheap next to the batches' rows. */
  override def currentMetricsValues(): Array[CustomTaskMetric] = loop.metrics()

  private var closed = false

  override def close(): Unit = if (!closed) {
    closed = true
    try loop.finish(progress)
    finally reader.close()
  }
}

package sluice.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

import sluice.api.{ReaderContext, ReaderCounters}

/**
 * The readers' figures as SQL metrics of the scan: shown in the Spark UI's SQL tab for streams,
 * and the only place a batch read (which has no query progress) reports what its readers
 * skipped. Each task reports its own; Spark sums them over the scan's tasks.
 *
 *  - `recordsRead`: rows the readers handed to Spark;
 *  - `bytesRead`: Kafka: the records' serialized key and value sizes; files: the bytes read from
 *    the files (positions are byte offsets, so the lines with their line ends); 0 for sources
 *    that report neither (the generator);
 *  - `alignmentPausedMs`: milliseconds splits spent paused by event-time alignment, summed over
 *    splits (only readers of an open batch pause; micro-batches are aligned when they are
 *    planned, and report 0). Also a split counter, hence in query progress: Spark 4.3's real-time
 *    reader wrapper passes no task metrics on to the scan;
 *  - the readers' counters (`ReaderCounters`): records dropped as malformed, files and offsets
 *    skipped, compressed files decompressed from their start, Parquet rows decoded before a
 *    range's start.
 */
object ReaderMetrics {
  val RecordsRead = "recordsRead"
  val BytesRead = "bytesRead"
  val AlignmentPausedMs = "alignmentPausedMs"

  // Spark builds each metric class again on the driver by reflection: one no-argument class each.
  def supported: Array[CustomMetric] = Array(
    new RecordsReadMetric,
    new BytesReadMetric,
    new AlignmentPausedMsMetric,
    new MalformedRecordsDroppedMetric,
    new MissingFilesSkippedMetric,
    new ChangedFilesSkippedMetric,
    new DataLossOffsetsMetric,
    new NullValuesSkippedMetric,
    new CompressedFileOpensMetric,
    new RowsDecodedBeforeStartMetric)

  /** A task's figures so far, over the splits it reads. */
  def current(
      context: ReaderContext.Local,
      splitIds: Iterable[String],
      records: Long,
      bytes: Long,
      pausedMs: Long): Array[CustomTaskMetric] = {
    val counters = ReaderCounters.all.map { counter =>
      counter -> splitIds.iterator.map(id => context.countersOf(id).getOrElse(counter, 0L)).sum
    }
    (Seq(
      RecordsRead -> records,
      BytesRead -> bytes,
      AlignmentPausedMs -> pausedMs) ++ counters).map { case (metric, total) =>
      new CustomTaskMetric {
        override def name(): String = metric
        override def value(): Long = total
      }: CustomTaskMetric
    }.toArray
  }
}

abstract class ReaderSumMetric(metric: String, what: String) extends CustomSumMetric {
  override def name(): String = metric
  override def description(): String = s"Sluice: $what"
}

abstract class ReaderCounterMetric(counter: String) extends ReaderSumMetric(counter, counter)

final class RecordsReadMetric extends ReaderSumMetric(ReaderMetrics.RecordsRead, "records read")
final class BytesReadMetric extends ReaderSumMetric(ReaderMetrics.BytesRead, "bytes read")
final class AlignmentPausedMsMetric
    extends ReaderSumMetric(ReaderMetrics.AlignmentPausedMs, "time paused by alignment (ms)")
final class MalformedRecordsDroppedMetric
    extends ReaderCounterMetric(ReaderCounters.MalformedRecordsDropped)
final class MissingFilesSkippedMetric
    extends ReaderCounterMetric(ReaderCounters.MissingFilesSkipped)
final class ChangedFilesSkippedMetric
    extends ReaderCounterMetric(ReaderCounters.ChangedFilesSkipped)
final class DataLossOffsetsMetric extends ReaderCounterMetric(ReaderCounters.DataLossOffsets)
final class NullValuesSkippedMetric extends ReaderCounterMetric(ReaderCounters.NullValuesSkipped)
final class CompressedFileOpensMetric
    extends ReaderCounterMetric(ReaderCounters.CompressedFileOpens)
final class RowsDecodedBeforeStartMetric
    extends ReaderCounterMetric(ReaderCounters.RowsDecodedBeforeStart)

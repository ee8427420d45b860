package sluice.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

import sluice.api.{ReaderContext, ReaderCounters}

/**
 * The readers' counters as SQL metrics of the scan: shown in the Spark UI for streams, and the
 * only place a batch read (which has no query progress) reports what its readers skipped.
 */
object ReaderMetrics {
  // Spark builds each metric class again on the driver by reflection: one no-argument class each.
  def supported: Array[CustomMetric] = Array(new MalformedRecordsDroppedMetric, new MissingFilesSkippedMetric,
    new DataLossOffsetsMetric, new NullValuesSkippedMetric)

  /** A task's counters so far, over the splits it reads. */
  def current(context: ReaderContext.Local, splitIds: Iterable[String]): Array[CustomTaskMetric] =
    ReaderCounters.all.map { counter =>
      val total = splitIds.iterator.map(id => context.countersOf(id).getOrElse(counter, 0L)).sum
      new CustomTaskMetric {
        override def name(): String = counter
        override def value(): Long = total
      }: CustomTaskMetric
    }.toArray
}

abstract class ReaderCounterMetric(counter: String) extends CustomSumMetric {
  override def name(): String = counter
  override def description(): String = s"Sluice: $counter"
}

final class MalformedRecordsDroppedMetric extends ReaderCounterMetric(ReaderCounters.MalformedRecordsDropped)
final class MissingFilesSkippedMetric extends ReaderCounterMetric(ReaderCounters.MissingFilesSkipped)
final class DataLossOffsetsMetric extends ReaderCounterMetric(ReaderCounters.DataLossOffsets)
final class NullValuesSkippedMetric extends ReaderCounterMetric(ReaderCounters.NullValuesSkipped)

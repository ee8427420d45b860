package sluice.spark

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

import sluice.api.ReaderCounters

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

  /** The figures the readers count per split (`ReaderContext.count`), summed over a task's splits. */
  val Counted: Array[String] = (AlignmentPausedMs +: ReaderCounters.all).toArray

  /** A task's figures, in this order: each is the name of one of the metrics `supported` declares. */
  val Figures: Array[String] = Array(RecordsRead, BytesRead) ++ Counted

  /**
   * One task's figures as the scan's SQL metrics: one metric object per figure, made once and set
   * in place at each refresh, so a refresh allocates nothing unless the figures that are not 0
   * change. Spark is answered with those only: it sets the scan's metric of each figure it is
   * given to the value given, and a metric it is never given keeps its initial value, 0, which
   * is what the figure says (a task reading several readers merges their answers by name, where
   * a figure left out adds 0). A Kafka read that skips nothing answers with its records and bytes
   * read alone, the fewer for Spark to merge by name at each refresh.
   */
  final class TaskFigures {
    private val figures: Array[Figure] = Figures.map(new Figure(_))

    /** Which figures the last answer holds (bit i: figure i), and that answer. */
    private var answered = 0
    private var answer: Array[CustomTaskMetric] = Array.empty

    /** Sets the counted figures (`Counted`) to their sums over `perSplit`, a split's counters each. */
    def setCounted(perSplit: Array[Map[String, Long]]): Unit = {
      var c = 0
      while (c < Counted.length) {
        var total = 0L
        var s = 0
        while (s < perSplit.length) {
          total += perSplit(s).getOrElse(Counted(c), 0L)
          s += 1
        }
        figures(2 + c).current = total
        c += 1
      }
    }

    /** The figures with these records and bytes read, as Spark is answered: those not 0. */
    def answer(records: Long, bytes: Long): Array[CustomTaskMetric] = {
      figures(0).current = records
      figures(1).current = bytes
      var nonZero = 0
      var i = 0
      while (i < figures.length) {
        if (figures(i).current != 0L) nonZero |= 1 << i
        i += 1
      }
      if (nonZero != answered) {
        answered = nonZero
        answer = figures.filter(_.current != 0L).toArray[CustomTaskMetric]
      }
      answer
    }
  }

  /** One figure of a task, set in place. */
  final class Figure(metric: String) extends CustomTaskMetric {
    var current = 0L
    override def name(): String = metric
    override def value(): Long = current
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

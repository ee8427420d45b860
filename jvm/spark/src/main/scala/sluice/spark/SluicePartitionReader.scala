package sluice.spark

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{ContinuousPartitionReader, ContinuousPartitionReaderFactory, PartitionOffset, SupportsRealTimeRead}

import sluice.api.{ReaderContext, RecordsWithSplitIds, Source, SourceSplit, SplitRange, SplitReader, SupportsColumnarReads}
import sluice.config.RecordLayout
import sluice.eventtime.EventTimeSettings
import sluice.runtime.{LatencyMarkers, SplitReport}

/**
 * The split ranges one Spark task reads, and which kind of batch it reads (`mode`). A task of an
 * open batch (real-time mode, continuous processing) runs for the whole batch: its ranges are
 * open-ended (or end where a bounded split stops), and a task that has read everything waits
 * for the batch to end rather than finishing. There, with
 * alignment, `eventTimes` says where each split stands in event time before its first record of
 * the batch, `initialLimit` is the group's limit when the batch was planned (`limitComplete`
 * when it counts every member of the group: otherwise splits wait for the coordinator's first
 * answer), `pauseSplits` says whether the reader pauses splits on the coordinator's word, and
 * `lastActiveMs` when each split last read a record in an earlier task (its idleness clock).
 * `locations` are the executors the task prefers (`TaskLocality`). `columnar`: the task's ranges
 * are read as column batches (decided for all tasks of a scan at once: `SluiceReaderFactory.readsColumnar`).
 */
final case class SluiceInputPartition(
    ranges: Seq[SplitRange[SourceSplit]],
    mode: TaskMode = TaskMode.MicroBatch,
    eventTimes: Map[String, Long] = Map.empty,
    initialLimit: Option[Long] = None,
    pauseSplits: Boolean = false,
    limitComplete: Boolean = true,
    lastActiveMs: Map[String, Long] = Map.empty,
    locations: Seq[String] = Nil,
    columnar: Boolean = false)
    extends InputPartition {
  override def preferredLocations(): Array[String] = locations.toArray
}

/**
 * Where the splits of a task of an open batch stand: per split, the range read so far (`from` to
 * the position reached) with its largest event time and record count. Spark collects one per task
 * when an open batch ends (real-time mode) or an epoch does (continuous processing) and hands them
 * to `mergeOffsets`, which turns them into the next offset.
 */
final case class SluicePartitionOffset(reports: Seq[SplitReport]) extends PartitionOffset

/** What a task does with each record besides handing it to Spark. */
final case class RecordTiming(
    eventTime: EventTimeSettings,
    layout: RecordLayout,
    latencyTrackingIntervalMs: Option[Long]) {

  /** A task's context: its own counters, the layout the binding chose. */
  def readerContext: ReaderContext.Local = ReaderContext(layout)
}

/**
 * Serialised to executors with the source's options, its record timing settings and the progress
 * accumulator. A batch read (`spark.read`) has no runtime waiting for progress, hence no accumulator.
 */
final class SluiceReaderFactory(
    source: Source[SourceSplit, Any],
    timing: RecordTiming,
    progress: Option[SplitProgressAccumulator],
    liveAlignment: Option[LiveAlignmentMember] = None)
    extends ContinuousPartitionReaderFactory {
  def this(
      source: Source[SourceSplit, Any],
      timing: RecordTiming,
      progress: SplitProgressAccumulator,
      liveAlignment: Option[LiveAlignmentMember]) =
    this(source, timing, Some(progress), liveAlignment)

  override def supportColumnarReads(partition: InputPartition): Boolean =
    partition.asInstanceOf[SluiceInputPartition].columnar

  override def createColumnarReader(partition: InputPartition): SluiceColumnarPartitionReader = {
    val context = timing.readerContext
    val columnar = source match {
      case c: SupportsColumnarReads[SourceSplit @unchecked] => c.createColumnarReader(context)
      case _ =>
        throw new IllegalStateException(
          s"Sluice: the ${source.sourceType} source reads no column batches")
    }
    val task = partition.asInstanceOf[SluiceInputPartition]
    new SluiceColumnarPartitionReader(
      task,
      columnar,
      new ReaderLoop(task, source.sourceType, context, eventTimeAppender(context)),
      progress)
  }

  private def eventTimeAppender(context: ReaderContext): Option[EventTimeAppender] =
    Option.when(timing.eventTime.enabled)(
      new EventTimeAppender(timing.eventTime, source.schema(context.recordLayout)))

  override def createReader(partition: InputPartition): SluicePartitionReader = {
    val context = timing.readerContext
    val appender = eventTimeAppender(context)
    val latency = timing.latencyTrackingIntervalMs.map(new LatencyMarkers(_))
    val task = partition.asInstanceOf[SluiceInputPartition]
    val live =
      if (!task.mode.readsOpenBatch || !timing.eventTime.enabled) None
      else
        liveAlignment.map(
          new LiveAlignmentChannel.ReaderSide(
            _,
            timing.eventTime.idleTimeoutMs,
            task.initialLimit,
            initiallyConfirmed = if (task.limitComplete) task.eventTimes.keySet else Set.empty,
            initiallyActive = task.lastActiveMs,
            pausesSplits = task.pauseSplits,
            () => context.currentTimeMillis()))
    val loop =
      new ReaderLoop(task, source.sourceType, context, appender, latency, live, timing.eventTime)
    val reader = new SluicePartitionReader(task, source, context, loop, progress)
    // Closed when the task ends as well: not every Spark version's real-time wrapper closes the reader it wraps (close is idempotent).
    if (task.mode.readsOpenBatch)
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => reader.close()))
    reader
  }
}

object SluiceReaderFactory {

  /**
   * Whether the tasks of one scan, reading `ranges`, read them as column batches: when the source
   * can for every range and no latency marker is taken (markers are taken per record). Spark
   * reads all tasks of a scan one way, so this is asked once for all of them.
   */
  def readsColumnar(
      source: Source[SourceSplit, Any],
      timing: RecordTiming,
      ranges: Seq[SplitRange[SourceSplit]]): Boolean =
    source match {
      case c: SupportsColumnarReads[SourceSplit @unchecked] =>
        ranges.nonEmpty && timing.latencyTrackingIntervalMs.isEmpty &&
        c.readsColumnar(ranges, timing.layout)
      case _ => false
    }
}

/**
 * Spark's row reader over the task's `ReaderLoop`, for every mode (micro-batch, batch read,
 * real-time, continuous): owns the source's `SplitReader`, and answers Spark's calls — `next` /
 * `get`, `nextWithTimeout` (real-time mode's deadline), `getOffset` (where an open batch's
 * splits stand), the metrics, and the reports sent when it closes. What happens to each record
 * (positions, event time and its column, latency markers, live alignment) is the loop's.
 */
final class SluicePartitionReader(
    partition: SluiceInputPartition,
    source: Source[SourceSplit, Any],
    context: ReaderContext.Local,
    loop: ReaderLoop,
    progress: Option[SplitProgressAccumulator])
    extends SupportsRealTimeRead[InternalRow]
    with ContinuousPartitionReader[InternalRow] {
  import ReaderLoop.Advanced

  private val reader: SplitReader[SourceSplit] = ReaderLoop.opened(
    source.createReader(context),
    partition.ranges,
    (r: SplitReader[SourceSplit], ranges: Seq[SplitRange[SourceSplit]]) =>
      r.handleSplitsChanges(ranges))

  override def next(): Boolean =
    try {
      val more = loop.nextRow(reader, Long.MaxValue) == Advanced.Record
      if (!more) ended = true
      more
    } catch SparkErrors.surface

  /** The reader ended: the scan's metrics Spark asks for now are the task's last, and exact. */
  private var ended = false

  /**
   * Real-time mode: the next record if one arrives within `timeoutMs`. Ranges are open-ended
   * there, so a reader that has nothing now is waiting for data, not done.
   */
  override def nextWithTimeout(timeoutMs: java.lang.Long): SupportsRealTimeRead.RecordStatus =
    try nextWithin(timeoutMs)
    catch SparkErrors.surface

  private def nextWithin(timeoutMs: java.lang.Long): SupportsRealTimeRead.RecordStatus = {
    val deadline = context.currentTimeMillis() + math.max(0L, timeoutMs.longValue())
    if (loop.nextRow(reader, deadline) == Advanced.Record) {
      if (loop.arrivalTime == RecordsWithSplitIds.NoTimestamp)
        SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(true)
      else SupportsRealTimeRead.RecordStatus.newStatusWithArrivalTimeMs(loop.arrivalTime)
    } else SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(false)
  }

  /**
   * Real-time mode (at the batch's end) and continuous processing (after every record): where
   * every split of this task stands now, with what was read so far.
   */
  override def getOffset(): SluicePartitionOffset = {
    // real-time mode asks once, at the batch's end (continuous processing after every record)
    if (partition.mode == TaskMode.RealTime) atBatchEnd = true
    SluicePartitionOffset(loop.reports(latencyMarkers = false))
  }

  /** Real-time mode: the batch ended, so the metrics Spark asks for now are the task's last. */
  private var atBatchEnd = false

  override def get(): InternalRow = loop.row

  private var metricsAsked = 0L
  private var lastMetrics: Array[CustomTaskMetric] = SluicePartitionReader.NoNewMetrics

  /**
   * Spark asks every 100 rows, and merges whatever array it gets into maps by name before it
   * sets its SQL metrics to the values given. So the figures are refreshed (in place:
   * `TaskRanges.metrics`) every 5,000 rows, and at the ends Spark asks at: once the reader ended,
   * and in real-time mode once the batch's end took its offsets (`getOffset`), the task's last.
   * In between, a bounded batch's reader answers with nothing, which Spark merges for nothing and
   * which leaves its metrics as last set. The cost of that: a task reading several readers (a
   * `coalesce` above the scan) shows only the ended readers' figures until the live one's next
   * refresh, and a reader stopped before its end (a `limit`) leaves its figures as last refreshed.
   * An open batch's reader (real-time, continuous) repeats its last figures instead.
   */
  override def currentMetricsValues(): Array[CustomTaskMetric] = {
    metricsAsked += 1
    if (metricsAsked == 1 || ended || atBatchEnd || metricsAsked % 50 == 0) {
      lastMetrics = loop.metrics()
      lastMetrics
    } else if (partition.mode == TaskMode.MicroBatch) SluicePartitionReader.NoNewMetrics
    else lastMetrics
  }

  private var closed = false

  override def close(): Unit = if (!closed) {
    closed = true
    try loop.finish(progress)
    finally reader.close()
  }
}

private object SluicePartitionReader {

  /** The answer to Spark's ask for metrics between two refreshes: nothing new to set. */
  val NoNewMetrics: Array[CustomTaskMetric] = Array.empty
}

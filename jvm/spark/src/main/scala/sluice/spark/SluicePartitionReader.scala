package sluice.spark

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{ContinuousPartitionReader, ContinuousPartitionReaderFactory, PartitionOffset, SupportsRealTimeRead}

import sluice.alignment.LiveSplitState
import sluice.api.{PausableSplitReader, ReaderContext, RecordsWithSplitIds, Source, SourceSplit, SplitRange, SupportsColumnarReads}
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
 * Where a real-time task's splits stand: per split, the range read so far (`from` to the position
 * reached) with its largest event time and record count. Spark collects one per task when a long
 * batch ends and hands them to `mergeOffsets`, which turns them into the next offset.
 */
final case class SluicePartitionOffset(reports: Seq[SplitReport]) extends PartitionOffset

/** What a task does with each record besides handing it to Spark. */
final case class RecordTiming(eventTime: EventTimeSettings, timestamps: TimestampSupport) {

  /** A task's context: its own counters, the layout the binding chose. */
  def readerContext: ReaderContext.Local = ReaderContext(timestamps.layout)
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
    new SluiceColumnarPartitionReader(
      partition.asInstanceOf[SluiceInputPartition],
      columnar,
      source.sourceType,
      context,
      eventTimeAppender(context),
      tracksEventTime = timing.timestamps.force,
      progress)
  }

  private def eventTimeAppender(context: ReaderContext): Option[EventTimeAppender] =
    Option.when(timing.eventTime.enabled)(
      new EventTimeAppender(timing.eventTime, source.schema(context.recordLayout)))

  override def createReader(partition: InputPartition): SluicePartitionReader = {
    val context = timing.readerContext
    val appender = eventTimeAppender(context)
    val latency = timing.timestamps.latencyTrackingIntervalMs.map(new LatencyMarkers(_))
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
    val reader = new SluicePartitionReader(
      task,
      source,
      context,
      appender,
      tracksEventTime = timing.timestamps.force,
      latency,
      progress,
      live,
      timing.eventTime)
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
        ranges.nonEmpty && timing.timestamps.latencyTrackingIntervalMs.isEmpty &&
        c.readsColumnar(ranges, timing.timestamps.layout)
      case _ => false
    }
}

/**
 * Drives a source's `SplitReader` over the task's ranges and hands its rows to Spark, keeping per
 * split the largest event time and the record count, which it reports through the accumulator
 * when the task ends. Under a watermark strategy, event time comes from the strategy's column
 * (or the connector's record time) and is appended to each row as the event-time column
 * (`event_time` unless `watermark.eventTimeColumn` names another). Compact sources (`tracksEventTime` false) read no record time at all; with latency tracking on, markers are
 * taken here and travel in the report, never as rows.
 */
final class SluicePartitionReader(
    partition: SluiceInputPartition,
    source: Source[SourceSplit, Any],
    context: ReaderContext.Local,
    eventTime: Option[EventTimeAppender],
    tracksEventTime: Boolean,
    latency: Option[LatencyMarkers],
    progress: Option[SplitProgressAccumulator],
    live: Option[LiveAlignmentChannel.ReaderSide] = None,
    eventTimeSettings: EventTimeSettings =
      EventTimeSettings(EventTimeSettings.Kind.None, 0L, None, None, None))
    extends SupportsRealTimeRead[InternalRow]
    with ContinuousPartitionReader[InternalRow] {
  import SluicePartitionReader._

  private val ranges = new TaskRanges(partition.ranges, context, source.sourceType)
  private def stats = ranges.stats
  private val reader = source.createReader(context)
  try if (partition.ranges.nonEmpty) reader.handleSplitsChanges(partition.ranges)
  catch {
    case e: Throwable =>
      reader.close() // Spark never sees this reader, so it would never close it
      throw e
  }

  private val realTime = partition.mode.readsOpenBatch
  private var fetched: RecordsWithSplitIds = _
  private var current: ranges.Stats = _
  private var row: InternalRow = _

  /** The current record's arrival time (real-time mode), for Spark's latency metrics. */
  private var arrivalTime: Long = RecordsWithSplitIds.NoTimestamp

  /** True from a fetch until it yields a record or finishes a split. */
  private var fetchWasEmpty = false

  override def next(): Boolean = {
    val more = advance(Long.MaxValue) == Advanced.Record
    if (!more) ended = true
    more
  }

  /** The reader ended: the scan's metrics Spark asks for now are the task's last, and exact. */
  private var ended = false

  /**
   * Real-time mode: the next record if one arrives within `timeoutMs`. Ranges are open-ended
   * there, so a reader that has nothing now is waiting for data, not done.
   */
  override def nextWithTimeout(timeoutMs: java.lang.Long): SupportsRealTimeRead.RecordStatus = {
    val deadline = context.currentTimeMillis() + math.max(0L, timeoutMs.longValue())
    if (advance(deadline) == Advanced.Record) {
      if (arrivalTime == RecordsWithSplitIds.NoTimestamp)
        SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(true)
      else SupportsRealTimeRead.RecordStatus.newStatusWithArrivalTimeMs(arrivalTime)
    } else SupportsRealTimeRead.RecordStatus.newStatusWithoutArrivalTime(false)
  }

  /**
   * Real-time mode (at the batch's end) and continuous processing (after every record): where
   * every split of this task stands now, with what was read so far.
   */
  override def getOffset(): SluicePartitionOffset = SluicePartitionOffset(
    reports(latencyMarkers = false))

  /**
   * Moves to the next record: `Record` when there is one, `Finished` once every range is read,
   * `Waiting` when the reader had nothing by `deadline` (epoch ms; only open ranges wait).
   */
  private def advance(deadline: Long): Advanced = {
    while (true) {
      if (current != null) {
        if (fetched.nextRecord()) {
          val position = fetched.position
          if (position != current.position) { // a new record (several rows may share one)
            // where it starts: its own position where positions count records, else where the last one ended
            val start =
              if (current.range.split.positionsCountRecords) position - 1 else current.position
            if (start >= current.range.until) current.readPastRange(start)
            current.recordStart = start
            current.position = position
          }
          if (realTime) current.midRecord = fetched.recordHasMoreRows
          current.records += 1
          eventTime match {
            case Some(appender) =>
              val t = appender.eventTimeMs(fetched.row, fetched.eventTime)
              row = appender.append(fetched.row, t)
              current.sawEventTime(t)
            case None =>
              row = fetched.row
              if (tracksEventTime) current.sawEventTime(fetched.eventTime)
          }
          if (latency.isDefined) mark(current)
          if (realTime) arrivalTime = fetched.arrivalTime
          fetchWasEmpty = false
          return Advanced.Record
        }
        current = null
      }
      if (fetched != null) {
        val splitId = fetched.nextSplit()
        if (splitId != null) current = stats(splitId)
        else {
          if (fetched.finishedSplits.nonEmpty) fetchWasEmpty = false
          ranges.unfinished --= fetched.finishedSplits
          fetched = null
        }
      } else if (ranges.unfinished.isEmpty && !realTime) {
        return Advanced.Finished
      } else {
        val now = context.currentTimeMillis()
        if (now >= deadline) return Advanced.Waiting
        // In real-time mode a reader whose splits are all paused or read returns nothing at once:
        // after an empty fetch, wait a little rather than spin on the task's core.
        if (realTime && (fetchWasEmpty || ranges.unfinished.isEmpty))
          Thread.sleep(math.min(IdleWaitMs, deadline - now))
        if (live.isDefined) align(now)
        if (ranges.unfinished.nonEmpty) {
          // long-running: never wait in the reader past the batch's deadline
          fetched =
            if (realTime) reader.fetch(math.max(1L, deadline - context.currentTimeMillis()))
            else reader.fetch()
          fetchWasEmpty = true
        }
      }
    }
    Advanced.Waiting
  }

  override def get(): InternalRow = row

  /**
   * Live alignment (FLIP-217 inside a running task): reports this task's splits to the driver's
   * coordinator and pauses or resumes them on its latest limit.
   */
  private def align(now: Long): Unit = {
    val states = stats.values.toSeq.map { s =>
      val id = s.range.split.splitId
      // where the split stood when the batch was planned counts until a record moves it further
      val known = (partition.eventTimes.get(id) ++ Some(s.maxEventTime).filter(
        _ != RecordsWithSplitIds.NoTimestamp)).maxOption
      val wm = known.map(eventTimeSettings.watermarkFor)
      LiveSplitState(
        id,
        wm,
        idle = false,
        paused = false,
        finished = !ranges.unfinished.contains(id))
    }
    // a bounded range not read to its end has records waiting (a file queued behind another): not idle
    val waiting = stats.values
      .filter(s => !s.range.isOpen && ranges.unfinished.contains(s.range.split.splitId))
      .map(_.range.split.splitId)
    val (toPause, toResume) =
      live.get.tick(now, states, stats.map { case (id, s) => id -> s.records }, waiting.toSet)
    if (toPause.nonEmpty || toResume.nonEmpty) reader match {
      case pausable: PausableSplitReader[SourceSplit @unchecked] =>
        pausable.pauseOrResumeSplits(
          toPause.toSeq.map(stats(_).range.split),
          toResume.toSeq.map(stats(_).range.split))
        toPause.foreach(id => if (!pausedSince.contains(id)) pausedSince(id) = now)
        toResume.foreach(id =>
          pausedSince.remove(id).foreach(since => countPaused(id, since, now)))
      case _ => // planning refused non-pausing readers unless unaligned splits are allowed
    }
  }

  /** Splits paused by live alignment now, and since when their time paused is not counted yet. */
  private val pausedSince = scala.collection.mutable.Map[String, Long]()

  /** Time paused goes into the split's counters: query progress, and the scan's SQL metrics. */
  private def countPaused(splitId: String, since: Long, now: Long): Unit =
    context.count(splitId, ReaderMetrics.AlignmentPausedMs, math.max(0L, now - since))

  /** Counts the time of the pauses still going on, up to now (before a report, or for the metrics). */
  private def countOngoingPauses(): Unit = if (pausedSince.nonEmpty) {
    val now = context.currentTimeMillis()
    pausedSince.foreach { case (id, since) => countPaused(id, since, now) }
    pausedSince.mapValuesInPlace((_, _) => now)
  }

  private var metricsAsked = 0L
  private var lastMetrics: Array[org.apache.spark.sql.connector.metric.CustomTaskMetric] = _

  /**
   * Spark asks every 100 rows; working the figures out takes a lock and copies counters, which a
   * reader near the consumer's ceiling need not pay that often: they are refreshed every 5,000
   * rows, and always once the reader ended (the task's last figures are exact).
   */
  override def currentMetricsValues()
      : Array[org.apache.spark.sql.connector.metric.CustomTaskMetric] = {
    metricsAsked += 1
    if (lastMetrics == null || ended || metricsAsked % 50 == 0) lastMetrics = metricsNow()
    lastMetrics
  }

  private def metricsNow(): Array[org.apache.spark.sql.connector.metric.CustomTaskMetric] = {
    countOngoingPauses()
    ranges.metrics()
  }

  private def mark(stats: ranges.Stats): Unit = {
    val marker = latency.get.maybeMark(fetched.arrivalTime)
    if (marker >= 0 && stats.latencyMarkers.size < LatencyMarkers.MaxPerRange)
      stats.latencyMarkers += marker
  }

  private def reports(latencyMarkers: Boolean): Seq[SplitReport] = {
    countOngoingPauses()
    ranges.reports(latencyMarkers)
  }

  private var closed = false

  override def close(): Unit = if (!closed) {
    closed = true
    try {
      countOngoingPauses()
      ranges.sendReports(progress)
    } finally reader.close()
  }
}

private object SluicePartitionReader {

  /** What `advance` found. */
  sealed trait Advanced
  object Advanced {
    case object Record extends Advanced
    case object Waiting extends Advanced
    case object Finished extends Advanced
  }

  /** How long a real-time task waits after a fetch that gave nothing, before fetching again. */
  val IdleWaitMs = 5L
}

package sluice.spark

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.alignment.LiveSplitState
import sluice.api.{ColumnarSplitReader, PausableSplitReader, ReaderContext, RecordsWithSplitIds, SourceSplit, SplitRange, SplitReader}
import sluice.eventtime.EventTimeSettings
import sluice.runtime.{LatencyMarkers, SplitReport}

/**
 * The one loop of a task (Flink's `SourceReaderBase`), whatever Spark asks of it: rows in a
 * micro-batch, a batch read, real-time mode or continuous processing (`nextRow`), or column
 * batches (`nextBatch`, the same per split and per batch). It drains the connector's reader and
 * owns everything a task does besides handing Spark what it read:
 *
 *  - each record's (or batch's) position, checked against its range (`TaskRanges.readPastRange`),
 *    and the split's record count;
 *  - event time: the record's (the strategy's column, else the connector's record time), its
 *    largest per split, and the event-time column appended to rows and batches;
 *  - latency markers (rows only: a scan that takes them reads no batches);
 *  - in an open batch (`TaskMode.readsOpenBatch`): the deadline Spark gives each call, the short
 *    idle wait after a fetch that gave nothing, and live alignment (its ticks, and the splits it
 *    pauses, whose time paused is counted);
 *  - the task's reports and metrics (`TaskRanges`).
 *
 * The partition readers are thin adapters over Spark's reader interfaces that own the
 * connector's reader and call this. The loop is the hot path: a record costs no allocation, no
 * boxing and no closure here, and the per-split state is read through fields of final classes.
 */
private[spark] final class ReaderLoop(
    partition: SluiceInputPartition,
    sourceType: String,
    context: ReaderContext.Local,
    eventTime: Option[EventTimeAppender],
    latency: Option[LatencyMarkers] = None,
    live: Option[LiveAlignmentChannel.ReaderSide] = None,
    eventTimeSettings: EventTimeSettings =
      EventTimeSettings(EventTimeSettings.Kind.None, 0L, None, None, None),
    clock: ReaderLoop.Clock = ReaderLoop.SystemClock) {
  import ReaderLoop._

  private val ranges = new TaskRanges(partition.ranges, context, sourceType)
  private def stats = ranges.stats
  private val openBatch = partition.mode.readsOpenBatch

  /** Split watermarks come from record times, which only some layouts read. */
  private val hasRecordTimes = context.recordLayout.hasRecordTimes

  // ---- rows -----------------------------------------------------------------------------------

  private var fetched: RecordsWithSplitIds = _
  private var current: ranges.Stats = _
  private var theRow: InternalRow = _

  /** The current record's arrival time (open batches), for Spark's latency metrics. */
  private var theArrivalTime: Long = RecordsWithSplitIds.NoTimestamp

  /** True from a fetch until it yields a record or finishes a split. */
  private var fetchWasEmpty = false

  /** The row `nextRow` moved to, with its event-time column when there is one. */
  def row: InternalRow = theRow

  /** When the current record arrived (open batches), or `NoTimestamp`. */
  def arrivalTime: Long = theArrivalTime

  /**
   * Moves to the next record of `reader`: `Record` when there is one, `Finished` once every range
   * is read, `Waiting` when the reader had nothing by `deadline` (epoch ms; only open batches wait).
   */
  def nextRow(reader: SplitReader[SourceSplit], deadline: Long): Advanced = {
    while (true) {
      if (current != null) {
        if (fetched.nextRecord()) {
          val position = fetched.position
          if (position != current.position) { // a new record (several rows may share one)
            // where it starts: its own position where positions count records, else where the last one ended
            val start =
              if (current.range.split.positionsCountRecords) position - 1 else current.position
            current.moveTo(start, position)
          }
          if (openBatch) current.midRecord = fetched.recordHasMoreRows
          current.records += 1
          eventTime match {
            case Some(appender) =>
              val t = appender.eventTimeMs(fetched.row, fetched.eventTime)
              theRow = appender.append(fetched.row, t)
              current.sawEventTime(t)
            case None =>
              theRow = fetched.row
              if (hasRecordTimes) current.sawEventTime(fetched.eventTime)
          }
          if (latency.isDefined) mark(current)
          if (openBatch) theArrivalTime = fetched.arrivalTime
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
      } else if (ranges.unfinished.isEmpty && !openBatch) {
        return Advanced.Finished
      } else {
        val now = clock.nowMs()
        if (now >= deadline) return Advanced.Waiting
        // In an open batch a reader whose splits are all paused or read returns nothing at once:
        // after an empty fetch, wait a little rather than spin on the task's core.
        if (openBatch && (fetchWasEmpty || ranges.unfinished.isEmpty))
          clock.sleep(math.min(IdleWaitMs, deadline - now))
        if (live.isDefined) align(reader, now)
        if (ranges.unfinished.nonEmpty) {
          // an open batch never waits in the reader past the batch's deadline
          fetched =
            if (openBatch) reader.fetch(math.max(1L, deadline - clock.nowMs()))
            else reader.fetch()
          fetchWasEmpty = true
        }
      }
    }
    Advanced.Waiting
  }

  private def mark(split: ranges.Stats): Unit = {
    val marker = latency.get.maybeMark(fetched.arrivalTime)
    if (marker >= 0 && split.latencyMarkers.size < LatencyMarkers.MaxPerRange)
      split.latencyMarkers += marker
  }

  // ---- column batches -------------------------------------------------------------------------

  private var theBatch: ColumnarBatch = _

  /** The batch `nextBatch` moved to, with its event-time column when there is one. */
  def batch: ColumnarBatch = theBatch

  /**
   * Moves to the next non-empty batch of `reader`; false once every range is read. A batch is
   * one record of its split's bookkeeping: positions count rows there, so the batch's last row
   * starts one before the position after it.
   */
  def nextBatch(reader: ColumnarSplitReader[SourceSplit]): Boolean = {
    while (ranges.unfinished.nonEmpty) {
      val fetched = reader.fetch()
      ranges.unfinished --= fetched.finishedSplits
      if (fetched.batch != null && fetched.batch.numRows() > 0) {
        val split = stats(fetched.splitId)
        split.moveTo(fetched.position - 1, fetched.position)
        split.records += fetched.batch.numRows()
        theBatch = eventTime match {
          case Some(appender) =>
            val (withEventTime, max) = appender.appendColumn(fetched)
            split.sawEventTime(max)
            withEventTime
          case None =>
            if (hasRecordTimes) split.sawEventTime(fetched.maxRecordTime)
            fetched.batch
        }
        return true
      }
    }
    false
  }

  // ---- live alignment (open batches) ----------------------------------------------------------

  /**
   * FLIP-217 inside a running task: reports this task's splits to the driver's coordinator and
   * pauses or resumes them on its latest limit.
   */
  private def align(reader: SplitReader[SourceSplit], now: Long): Unit = {
    val states = stats.values.toSeq.map { s =>
      val id = s.range.split.splitId
      // where the split stood when the batch was planned counts until a record moves it further
      val known = (partition.eventTimes.get(id) ++ Some(s.maxEventTime).filter(
        _ != RecordsWithSplitIds.NoTimestamp)).maxOption
      LiveSplitState.at(id, known, eventTimeSettings, finished = !ranges.unfinished.contains(id))
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
  private val pausedSince = mutable.Map[String, Long]()

  /** Time paused goes into the split's counters: query progress, and the scan's SQL metrics. */
  private def countPaused(splitId: String, since: Long, now: Long): Unit =
    context.count(splitId, ReaderMetrics.AlignmentPausedMs, math.max(0L, now - since))

  /** Counts the time of the pauses still going on, up to now (before a report, or for the metrics). */
  private def countOngoingPauses(): Unit = if (pausedSince.nonEmpty) {
    val now = clock.nowMs()
    pausedSince.foreach { case (id, since) => countPaused(id, since, now) }
    pausedSince.mapValuesInPlace((_, _) => now)
  }

  // ---- what the task reports ------------------------------------------------------------------

  /** Where every split of this task stands now, with what was read so far (open batches' offsets). */
  def reports(latencyMarkers: Boolean): Seq[SplitReport] = {
    countOngoingPauses()
    ranges.reports(latencyMarkers)
  }

  /** The task's figures so far, as the scan's SQL metrics. */
  def metrics(): Array[CustomTaskMetric] = {
    countOngoingPauses()
    ranges.metrics()
  }

  /** The task's last reports, sent when its reader closes (`TaskRanges.sendReports`). */
  def finish(progress: Option[SplitProgressAccumulator]): Unit = {
    countOngoingPauses()
    ranges.sendReports(progress)
  }
}

private[spark] object ReaderLoop {

  /** What `nextRow` found. */
  sealed trait Advanced
  object Advanced {
    case object Record extends Advanced
    case object Waiting extends Advanced
    case object Finished extends Advanced
  }

  /**
   * Where the loop reads the time and waits: the wall clock (`ReaderContext.Local`'s) and the
   * task's thread, or a test's fake clock, whose sleeping moves its time.
   */
  trait Clock {
    def nowMs(): Long
    def sleep(ms: Long): Unit
  }

  object SystemClock extends Clock {
    override def nowMs(): Long = System.currentTimeMillis()
    override def sleep(ms: Long): Unit = Thread.sleep(ms)
  }

  /** How long a task of an open batch waits after a fetch that gave nothing, before fetching again. */
  val IdleWaitMs = 5L

  /**
   * `reader` with the task's ranges added; a reader that refuses them is closed, since Spark
   * never sees it and would never close it.
   */
  def opened[R <: AutoCloseable](
      reader: R,
      ranges: Seq[SplitRange[SourceSplit]],
      add: (R, Seq[SplitRange[SourceSplit]]) => Unit): R = {
    try if (ranges.nonEmpty) add(reader, ranges)
    catch {
      case e: Throwable =>
        reader.close()
        throw e
    }
    reader
  }
}

package sluice.alignment

import scala.collection.mutable

import sluice.eventtime.EventTimeSettings

/**
 * One split as a reader of an open batch reports it to the coordinator every `updateInterval`
 * (FLIP-182's `ReportedWatermarkEvent`): its watermark (none before its first record), and
 * whether it is idle, paused or read to its end, and when it last read a record (or was resumed):
 * its idleness clock, which must outlive the task (an open batch ends, the next task goes on).
 */
final case class LiveSplitState(
    splitId: String,
    watermark: Option[Long],
    idle: Boolean,
    paused: Boolean,
    finished: Boolean,
    lastActiveMs: Option[Long] = None) {

  /** FLIP-180/217: only active splits with a watermark hold the group back. */
  def constrains: Boolean = watermark.isDefined && !idle && !finished
}

object LiveSplitState {

  /**
   * A split of an open batch where it stands in event time (`maxEventTimeMs`: the largest known,
   * none before its first record): its watermark under `eventTime`, neither idle nor paused (a
   * reader's `LiveSplitGate` says those). The one place both sides build it: the driver seeding
   * the coordinator as it plans the batch, and each reader's report.
   */
  def at(
      splitId: String,
      maxEventTimeMs: Option[Long],
      eventTime: EventTimeSettings,
      finished: Boolean): LiveSplitState =
    LiveSplitState(
      splitId,
      maxEventTimeMs.map(eventTime.watermarkFor),
      idle = false,
      paused = false,
      finished = finished)
}

/** A reader's report: the group it belongs to, who it is, and its splits now. */
final case class LiveReport(
    queryKey: String,
    group: String,
    memberId: String,
    maxDriftMs: Long,
    splits: Seq[LiveSplitState])

/**
 * The coordinator's answer (FLIP-182's `WatermarkAlignmentEvent`): the group's maximum allowed
 * watermark, None when no split constrains (nothing to pause, never `Long.MaxValue + drift`).
 */
final case class LiveDecision(maxAllowedWatermark: Option[Long])

/**
 * The driver side of alignment while readers run (real-time mode, continuous processing): the
 * latest state of every split of every member of a group, from whichever task reads it, and the
 * group's `min(watermark) + maxDrift` over the splits that constrain.
 *
 * A split not reported for `expiryMs` (its task ended, its executor died) leaves the minimum, so
 * a reader that stopped reporting never holds the others back forever (FLINK-32414, FLINK-25982).
 * Nothing here knows Spark: the binding carries reports over Spark's RPC and asks `report`.
 */
final class LiveAlignment(clock: () => Long = () => System.currentTimeMillis()) {
  private final class Entry(val state: LiveSplitState, val atMs: Long, val reports: Int)

  /** (query, group) -> (member, split) -> latest state. */
  private val groups = mutable.Map[(String, String), mutable.Map[(String, String), Entry]]()

  /**
   * Largest watermark spread per group between splits that read (constraining, not paused), each
   * counted from its second report on (after the first answer it could act on).
   */
  private val spreads = mutable.Map[(String, String), Long]()

  /** A reader's report: its splits' states now, and the group's limit in answer. */
  def report(r: LiveReport, expiryMs: Long): LiveDecision = update(r, expiryMs, fromReader = true)

  /**
   * What the driver knows of a member's splits when it plans an open batch (where each stands in
   * event time), so that the first answers already count them; not a reader's report.
   */
  def seed(r: LiveReport, expiryMs: Long): LiveDecision = update(r, expiryMs, fromReader = false)

  private def update(r: LiveReport, expiryMs: Long, fromReader: Boolean): LiveDecision =
    synchronized {
      val key = (r.queryKey, r.group)
      // Only the driver's planning opens a group (it seeds before any task runs); a reader's
      // report for a group that is not open comes from a task outliving its stopped query, and
      // is answered without keeping anything, or the stopped query's group would come back
      if (fromReader && !groups.contains(key))
        LiveDecision(LiveAlignment.limitOf(r.splits, r.maxDriftMs))
      else updateOpen(key, r, expiryMs, fromReader)
    }

  private def updateOpen(
      key: (String, String),
      r: LiveReport,
      expiryMs: Long,
      fromReader: Boolean): LiveDecision = {
    val now = clock()
    val splits = groups.getOrElseUpdate(key, mutable.Map.empty)
    r.splits.foreach { s =>
      val previous = splits.get((r.memberId, s.splitId))
      val state =
        if (fromReader) s
        // the driver knows where a split stands, its last reader knew whether it is idle
        else
          previous
            .map(p => s.copy(idle = p.state.idle, lastActiveMs = p.state.lastActiveMs))
            .getOrElse(s)
      splits((r.memberId, s.splitId)) =
        new Entry(state, now, if (fromReader) previous.map(_.reports).getOrElse(0) + 1 else 0)
    }
    splits.filterInPlace { case (_, e) => now - e.atMs <= expiryMs }
    // the spread between splits that read, once each had an answer to act on
    val reading = splits.values
      .filter(e => e.reports > 1 && e.state.constrains && !e.state.paused)
      .flatMap(_.state.watermark)
    if (reading.nonEmpty)
      spreads(key) = math.max(spreads.getOrElse(key, 0L), reading.max - reading.min)
    LiveDecision(LiveAlignment.limitOf(splits.values.map(_.state), r.maxDriftMs))
  }

  /** When each split of a member last read a record, as its readers reported: for the next tasks' idleness clocks. */
  def lastActive(queryKey: String, group: String, memberId: String): Map[String, Long] =
    synchronized {
      groups
        .get((queryKey, group))
        .toSeq
        .flatMap(_.toSeq.collect {
          case ((m, id), e) if m == memberId && e.state.lastActiveMs.isDefined =>
            id -> e.state.lastActiveMs.get
        })
        .toMap
    }

  /** The states a group holds now, for metrics and tests. */
  def states(queryKey: String, group: String): Seq[(String, LiveSplitState)] = synchronized {
    groups
      .get((queryKey, group))
      .toSeq
      .flatMap(_.toSeq.map { case ((member, _), e) => member -> e.state })
  }

  /** The largest spread between the watermarks of splits that read the group has shown. */
  def maxObservedSpread(queryKey: String, group: String): Option[Long] = synchronized(
    spreads.get((queryKey, group)))

  /** A query's group ends with the query. */
  def forget(queryKey: String, group: String): Unit = synchronized {
    groups.remove((queryKey, group))
    spreads.remove((queryKey, group))
  }

  /** The groups held now: none once every query that had one stopped. */
  private[sluice] def size: Int = synchronized((groups.keySet ++ spreads.keySet).size)
}

object LiveAlignment {

  /** FLIP-217's `min(watermark) + maxDrift` over the splits that constrain; None when none does. */
  def limitOf(states: Iterable[LiveSplitState], maxDriftMs: Long): Option[Long] =
    AlignmentPolicy.limit(states.filter(_.constrains).flatMap(_.watermark), maxDriftMs)
}

/**
 * A reader's side of live alignment: which of its splits to pause under the coordinator's
 * latest limit, and when each split turns idle, by the rule of `SplitIdleness`. A paused split
 * never turns idle, and the time it spends paused does not count toward its idleness
 * (FLINK-35886, FLINK-40093).
 */
final class LiveSplitGate(idleTimeoutMs: Option[Long], clock: () => Long) {
  private val idleness = new SplitIdleness(idleTimeoutMs)

  /** Starts watching a split whose last record was read at `lastActiveMs` (by an earlier task), else now. */
  def track(splitId: String, lastActiveMs: Option[Long] = None): Unit =
    if (!idleness.tracks(splitId)) idleness.track(splitId, lastActiveMs.getOrElse(clock()))

  /**
   * How many records the task read from a watched split so far, and whether records wait to be
   * read (a bounded range not read to its end): a record read since, or records waiting, make
   * it active.
   */
  def observe(splitId: String, records: Long, waiting: Boolean, nowMs: Long): Unit =
    idleness.observe(splitId, records, waiting, nowMs)

  /** When the split last read a record; now while it is paused, whose time paused does not count. */
  def lastActive(splitId: String): Option[Long] =
    if (idleness.tracks(splitId)) idleness.lastActive(splitId, clock()) else None

  /** A record of the split was read: it is active again. */
  def recordRead(splitId: String, nowMs: Long): Unit = idleness.recordRead(splitId, nowMs)

  def isPaused(splitId: String): Boolean = idleness.isPaused(splitId)

  def isIdle(splitId: String, nowMs: Long): Boolean = idleness.isIdle(splitId, nowMs)

  /**
   * Applies a limit: returns the splits to pause and those to resume. A split is paused when its
   * watermark is above the limit, or `unconfirmed` (its watermark not yet answered for), and it is
   * not finished (FLINK-39728); resuming restarts its idleness clock.
   */
  def decide(
      watermarks: Map[String, Option[Long]],
      finished: Set[String],
      limit: Option[Long],
      unconfirmed: Set[String] = Set.empty): (Set[String], Set[String]) = {
    val now = clock()
    val toPause = mutable.Set[String]()
    val toResume = mutable.Set[String]()
    idleness.splitIds.foreach { id =>
      // a split whose watermark the coordinator has not seen yet waits for its answer: without
      // it, a split that starts far ahead would run until the next update
      val ahead = (unconfirmed.contains(id) && !finished.contains(id)) ||
        AlignmentPolicy.isAhead(watermarks.getOrElse(id, None), finished.contains(id), limit)
      if (idleness.setPaused(id, ahead, now)) {
        if (ahead) toPause += id else toResume += id
      }
    }
    (toPause.toSet, toResume.toSet)
  }
}

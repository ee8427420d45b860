package sluice.alignment

import scala.collection.mutable

import sluice.api._
import sluice.eventtime.{AlignmentSettings, EventTimeSettings, MaxDrift}

/**
 * A source's event time in the driver: per-split watermarks and idleness, and — when the
 * strategy asks for alignment — how each batch's ranges are cut under the group's limit.
 *
 * Planning is two steps, so that an alignment group can plan all its members in one round:
 * `prepare` looks at the splits as they stand (idleness, finished splits, where unread splits
 * start) and returns an `AlignedBatch` that plans against any frontier of the other members;
 * `applied` records the plan that was taken (paused splits, the figures for query progress).
 */
final class SourceEventTime(
    settings: EventTimeSettings,
    source: Source[SourceSplit, Any],
    allowUnalignedByDefault: Boolean,
    clock: () => Long) {

  private val watermarks = new SplitWatermarks(settings, clock)
  val alignment: Option[AlignmentSettings] = settings.alignment
  private var lastPlan: Option[SourcePlan] = None
  private var lastMode: Option[AlignmentMode] = None

  /**
   * The event time one record spanned when the read limit last cut this source: the next search's
   * first guess. Written by plans a group's round makes on another member's thread; only a hint.
   */
  @volatile private var msPerRecord: Option[Double] = None
  private var idle = Set.empty[String]
  private var finished = Set.empty[String]

  /** Event times of the record at (split, position), asked of the connector once each. */
  private val startTimes = mutable.Map[(String, Long), Option[Long]]()

  /** Latest event times up to (split, end): unchanged while the split does not grow. */
  private val latestTimes = mutable.Map[(String, Long), Option[Long]]()

  /**
   * Looks at the splits before a batch is planned: which are finished (`isFinished`), which went
   * idle. Returns the aligned planning of the batch, when the source aligns.
   *
   * @param withOthers whether other members share the group (unread splits are then placed in
   *                   event time even when an exact index could cut them)
   */
  def prepare(
      splits: Seq[SourceSplit],
      from: Map[String, Long],
      readableEnd: Map[String, Long],
      isFinished: String => Boolean,
      progress: String => SplitProgress,
      budgetRecords: Option[Long],
      positionsPerRecord: Map[String, Double],
      enumerator: SplitEnumerator[SourceSplit, Any],
      withOthers: Boolean): Option[AlignedBatch] = {
    finished = splits.map(_.splitId).filter(isFinished).toSet
    idle = splits
      .filter { s =>
        val id = s.splitId
        watermarks.observe(
          id,
          progress(id).records,
          readableEnd(id) - from(id),
          finished.contains(id))
      }
      .map(_.splitId)
      .toSet
    alignment.map { a =>
      val index = enumerator match {
        case i: SupportsEventTimeIndex[SourceSplit @unchecked] if i.hasEventTimeIndex => Some(i)
        case _ => None
      }
      val ranges = splits
        .filterNot(s => finished.contains(s.splitId))
        .map(s => SplitRange(s, from(s.splitId), readableEnd(s.splitId)))
      val latest =
        index.map(latestEventTimes(_, ranges.filterNot(_.isEmpty))).getOrElse(Map.empty)
      val mode =
        if (!splitsCanPause(ranges.map(_.split), a)) AlignmentMode.WholeSource
        else if (index.isDefined) AlignmentMode.SplitsByIndex
        else AlignmentMode.SplitsByWatermark
      // Where unread splits start matters without an index, and to the other members; a single
      // source cut by an exact index needs no look-up (a split starting later gets nothing).
      val placeUnread = mode != AlignmentMode.SplitsByIndex || withOthers
      val firsts =
        if (!placeUnread) Map.empty[String, Long]
        else
          firstEventTimes(
            enumerator,
            ranges.filter(r => !r.isEmpty && progress(r.split.splitId).maxEventTime.isEmpty))
      val toPlan = splits.map { s =>
        val id = s.splitId
        SplitToPlan(
          id,
          from(id),
          readableEnd(id),
          progress(id).maxEventTime,
          latest.get(id),
          idle.contains(id),
          finished.contains(id),
          positionsPerRecord.getOrElse(id, 1.0),
          firsts.get(id))
      }
      val timeIndex = index.map(i =>
        new TimeIndex {
          // a group's round may plan this batch against several frontiers: each time asked once
          private val answers = mutable.Map[Long, Map[String, Long]]()
          private val throughAnswers = mutable.Map[Long, Map[String, Long]]()
          override val exact: Boolean = i.exactEventTimeIndex
          override def positionsBefore(t: Long): Map[String, Long] =
            answers.getOrElseUpdate(t, i.positionsBefore(ranges.filterNot(_.isEmpty), t))
          override def positionsThrough(t: Long): Map[String, Long] =
            if (exact) positionsBefore(t)
            else
              throughAnswers
                .getOrElseUpdate(t, i.positionsThrough(ranges.filterNot(_.isEmpty), t))
          override def answered: Iterable[Long] = if (exact) answers.keys else throughAnswers.keys
        })
      def nextEventTimes(ids: Seq[String]) =
        firstEventTimes(
          enumerator,
          ranges.filter(r => ids.contains(r.split.splitId) && !r.isEmpty))
      new AlignedBatch(
        mode,
        { othersFrontier =>
          val plan = HorizonPlanner.plan(
            toPlan,
            settings.watermarkFor,
            settings.maxOutOfOrdernessMs,
            a.maxDriftMs,
            othersFrontier,
            budgetRecords,
            timeIndex,
            mode,
            nextEventTimes,
            msPerRecord)
          // what a search learnt about the density holds whichever frontier the round settles on
          plan.msPerRecord.foreach(rate => msPerRecord = Some(rate))
          plan
        })
    }
  }

  /** Records the plan the batch was given: its paused splits and the figures for query progress. */
  def applied(batch: AlignedBatch, plan: SourcePlan): Unit = {
    // look-ups stay valid while a split stays where it is; forget the ones it moved past
    startTimes.filterInPlace { case ((id, at), _) => plan.ends.get(id).contains(at) }
    watermarks.setPaused(plan.heldBack)
    lastPlan = Some(plan)
    lastMode = Some(batch.mode)
  }

  /** The connector's latest event time of each range, asked again only for a split that grew. */
  private def latestEventTimes(
      index: SupportsEventTimeIndex[SourceSplit],
      ranges: Seq[SplitRange[SourceSplit]]): Map[String, Long] = {
    val unknown = ranges.filterNot(r => latestTimes.contains((r.split.splitId, r.until)))
    if (unknown.nonEmpty) {
      val found = index.latestEventTimes(unknown)
      latestTimes.filterInPlace { case ((id, _), _) => !unknown.exists(_.split.splitId == id) }
      unknown.foreach(r => latestTimes((r.split.splitId, r.until)) = found.get(r.split.splitId))
    }
    ranges.flatMap(r => latestTimes((r.split.splitId, r.until)).map(r.split.splitId -> _)).toMap
  }

  /**
   * The event time of the record at each range's start — where a split not read yet starts, or
   * what a held-back split would read next — asked of the connector once per split and position
   * (a split held back for many batches is not looked up again).
   */
  private def firstEventTimes(
      enumerator: SplitEnumerator[SourceSplit, Any],
      ranges: Seq[SplitRange[SourceSplit]]): Map[String, Long] =
    enumerator match {
      case e: SupportsStartEventTime[SourceSplit @unchecked] =>
        val unknown = ranges.filterNot(r => startTimes.contains((r.split.splitId, r.from)))
        if (unknown.nonEmpty) {
          val found = e.firstEventTimes(unknown)
          unknown.foreach(r => startTimes((r.split.splitId, r.from)) = found.get(r.split.splitId))
        }
        ranges.flatMap(r => startTimes((r.split.splitId, r.from)).map(r.split.splitId -> _)).toMap
      case _ => Map.empty
    }

  /**
   * Where each split of an open batch stands in event time as it opens: the largest event
   * time read from it, else — under alignment — the event time of its next record, asked of the
   * connector. Readers then know every split's watermark from their first record, rather than
   * after the coordinator's first answer (the window FLIP-182 leaves open at a start).
   */
  def openingEventTimes(
      ranges: Seq[SplitRange[SourceSplit]],
      progress: String => Option[SplitProgress],
      enumerator: SplitEnumerator[SourceSplit, Any]): Map[String, Long] = {
    val read = ranges
      .flatMap(r => progress(r.split.splitId).flatMap(_.maxEventTime).map(r.split.splitId -> _))
      .toMap
    val unread = ranges.filter(r => !read.contains(r.split.splitId) && !r.isEmpty)
    read ++ (if (alignment.isEmpty || unread.isEmpty) Map.empty
             else firstEventTimes(enumerator, unread))
  }

  /**
   * Whether readers of open batches (real-time mode, continuous) pause the splits they hold on
   * the coordinator's word; None without alignment. Refuses as micro-batch planning does.
   */
  def livePausing(splits: Seq[SourceSplit]): Option[Boolean] =
    settings.alignment.map(a => splitsCanPause(splits, a))

  /**
   * FLIP-182: aligning several splits needs readers that can pause them; the source declares it
   * (`SupportsSplitPausing`). Without it, the source aligns as a whole when unaligned splits are
   * allowed, and fails otherwise.
   */
  private def splitsCanPause(unfinished: Seq[SourceSplit], a: AlignmentSettings): Boolean = {
    if (unfinished.size <= 1) return true
    val canPause = source match {
      case p: SupportsSplitPausing[SourceSplit @unchecked] => p.canPauseSplits(unfinished)
      case _ => false
    }
    if (!canPause && !a.allowUnalignedSourceSplits.getOrElse(allowUnalignedByDefault)) {
      throw new UnsupportedOperationException(
        s"This source reader does not support pause or resume splits. The ${source.sourceType} source " +
          s"reads ${unfinished.size} splits with watermark alignment (group '${a.group}'), which needs to pause " +
          s"them. Set the source option '${EventTimeSettings.AllowUnalignedSourceSplits.name}=true' (or the Spark " +
          s"setting ${EventTimeSettings.AllowUnalignedSourceSplitsConf}=true) to align this source as a whole only.")
    }
    canPause
  }

  /**
   * Each split's watermark and status as of the last report. A finished split (read to its stop,
   * or to the end of the current AvailableNow trigger at the last planning) holds the maximum watermark.
   */
  def splitStates(
      splits: Seq[SourceSplit],
      progress: String => Option[SplitProgress]): Seq[SplitEventTime] =
    splits.map { s =>
      val id = s.splitId
      val done = finished.contains(id) || s.stopPosition.exists(stop =>
        progress(id).exists(_.position >= stop))
      val wm =
        if (done) Some(Long.MaxValue)
        else watermarks.watermark(progress(id).flatMap(_.maxEventTime))
      val status =
        if (idle.contains(id) && !done) WatermarkStatus.Idle else WatermarkStatus.Active
      SplitEventTime(id, wm, status, watermarks.isPaused(id) && !done, done)
    }

  /** The watermarks of the splits that constrain the group (active, unfinished). */
  def constrainingWatermarks(states: Seq[SplitEventTime]): Seq[Long] =
    states.filter(s => s.status == WatermarkStatus.Active && !s.finished).flatMap(_.watermark)

  /** Figures for query progress; `groupSpread` as the group last saw it. */
  def metrics(states: Seq[SplitEventTime], groupSpread: Option[Long]): Map[String, String] = {
    val constraining = constrainingWatermarks(states)
    val unfinished = states.filterNot(_.finished)
    val sourceStatus =
      if (unfinished.nonEmpty && unfinished.forall(_.status == WatermarkStatus.Idle))
        WatermarkStatus.Idle
      else WatermarkStatus.Active
    val base = Map(
      EventTimeMetrics.Status -> sourceStatus.name,
      EventTimeMetrics.IdleSplits -> states.count(_.status == WatermarkStatus.Idle).toString,
      EventTimeMetrics.PausedSplits -> states.count(_.paused).toString,
      EventTimeMetrics.Splits -> SplitEventTime.json(states)) ++
      states
        .filterNot(_.finished)
        .flatMap(_.watermark)
        .minOption
        .map(EventTimeMetrics.WatermarkMs -> _.toString) ++
      (if (constraining.isEmpty) None
       else Some(EventTimeMetrics.SpreadMs -> (constraining.max - constraining.min).toString))
    val aligned = alignment.map(a =>
      Map(
        EventTimeMetrics.Group -> a.group,
        EventTimeMetrics.MaxDriftMs -> a.maxDriftMs.toString,
        // maxDrift "auto": the query's withWatermark delay it was resolved from
        EventTimeMetrics.MaxDriftAuto -> a.maxDrift.isInstanceOf[MaxDrift.FromWatermark].toString,
        EventTimeMetrics.Mode -> lastMode.map(_.toString).getOrElse("")) ++
        lastPlan.flatMap(_.limit).map(EventTimeMetrics.MaxAllowedWatermarkMs -> _.toString) ++
        lastPlan.flatMap(_.horizon).map(EventTimeMetrics.HorizonMs -> _.toString) ++
        lastPlan.flatMap(_.minimumSplit).map(EventTimeMetrics.MinimumSplit -> _) ++
        groupSpread.map(EventTimeMetrics.GroupSpreadMs -> _.toString))
    base ++ aligned.getOrElse(Map.empty)
  }
}

/** One source's batch, prepared for aligned planning: plans against any frontier of the others. */
final class AlignedBatch(val mode: AlignmentMode, planAgainst: Option[Long] => SourcePlan) {
  def plan(othersFrontier: Option[Long]): SourcePlan = planAgainst(othersFrontier)
}

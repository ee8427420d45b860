package sluice.hybrid

import scala.collection.mutable
import scala.util.control.NonFatal

import sluice.api._

/**
 * Where a hybrid source is: the active source, its enumerator's state, what earlier sources ended
 * with, and the records of each source's splits that left the checkpoint (finished).
 */
final case class HybridEnumeratorState(
    activeIndex: Int,
    childStateVersion: Int,
    childState: String,
    switches: Seq[SwitchRecord],
    recordsOfSplitsLeft: Map[Int, Long] = Map.empty)

/** A switch recorded in the offset log: the context the next source was built from, and when. */
final case class SwitchRecord(toIndex: Int, context: SourceSwitchContext, atMs: Long)

/**
 * Runs the active source's enumerator and switches to the next source once the active one is
 * finished: it will discover no more splits, and readers reached the end of every split it had.
 * The switch happens while a batch is planned, so the new source's splits are in that batch's
 * offset — written before the batch runs — together with the switch itself.
 *
 * Alignment sees the active source's splits through the active enumerator's event-time index;
 * earlier sources' splits are finished and constrain nobody.
 */
final class HybridEnumerator(hybrid: HybridSource, restored: Option[HybridEnumeratorState])
    extends SplitEnumerator[HybridSplit, HybridEnumeratorState]
    with SupportsEventTimeIndex[HybridSplit] {

  private var index = restored.map(_.activeIndex).getOrElse(0)
  private var switches: Seq[SwitchRecord] = restored.map(_.switches).getOrElse(Nil)
  private var active: Source[SourceSplit, Any] =
    hybrid.sourceAt(index, switches.lastOption.map(_.context))
  private var child: SplitEnumerator[SourceSplit, Any] = restored match {
    case Some(s) =>
      active.restoreEnumerator(
        active.enumeratorStateSerializer.deserialize(s.childStateVersion, s.childState))
    case None => active.createEnumerator()
  }

  /**
   * Switch state, not a home of positions. The active source's splits: those its enumerator
   * discovered (the runtime tracks them only once `discoverSplits` returns), each with the
   * position of the last `progressUpdated`, which the runtime hands over right before every
   * discovery. The switch is decided inside `discoverSplits`, which is handed no positions, so
   * that hand-over is what it decides from; nothing here moves a position.
   */
  private val activeSplits = mutable.LinkedHashMap[String, (SourceSplit, Long)]()

  /** Records read per source, summed from the last hand-over for `recordsPerSource`: a count, not a position. */
  private val progressBySource = mutable.Map[Int, Long]()

  /**
   * The last hand-over itself: the active source's end state (event times, counters) is derived
   * from it at the switch, and the next source's start estimated from it.
   */
  private var lastProgress: Seq[(HybridSplit, SplitProgress)] = Nil
  private var recordsOfSplitsLeft: Map[Int, Long] =
    restored.map(_.recordsOfSplitsLeft).getOrElse(Map.empty)

  /** Watches the next source's retention while the active one is read (None: nothing to watch). */
  private var guard: Option[RetentionGuard] = retentionGuard()

  override def progressUpdated(progress: Seq[(HybridSplit, SplitProgress)]): Unit = {
    lastProgress = progress
    progress.filter(_._1.sourceIndex == index).foreach { case (s, p) =>
      activeSplits(s.child.splitId) = (s.child, p.position)
    }
    progressBySource.clear()
    progress.foreach { case (s, p) =>
      progressBySource(s.sourceIndex) = progressBySource.getOrElse(s.sourceIndex, 0L) + p.records
    }
    child.progressUpdated(progress.collect {
      case (s, p) if s.sourceIndex == index => s.child -> p.copy(splitId = s.child.splitId)
    })
  }

  override def splitsLeft(finished: Seq[(HybridSplit, SplitProgress)]): Unit = {
    finished.foreach { case (s, p) =>
      recordsOfSplitsLeft += s.sourceIndex -> (recordsOfSplitsLeft.getOrElse(
        s.sourceIndex,
        0L) + p.records)
    }
    child.splitsLeft(finished.collect {
      case (s, p) if s.sourceIndex == index => s.child -> p.copy(splitId = s.child.splitId)
    })
  }

  override def discoverSplits(): Seq[HybridSplit] = {
    val found = mutable.ArrayBuffer[HybridSplit]()
    def discover(): Unit = child.discoverSplits().foreach { s =>
      activeSplits.getOrElseUpdate(s.splitId, (s, s.startPosition))
      found += HybridSplit(index, s)
    }
    discover()
    // the start is exact now: the records it needs must still be there as the switch happens
    if (activeIsFinished && index < hybrid.size - 1)
      guard.foreach(_.confirmBeforeSwitch(nextStart()))
    while (activeIsFinished && index < hybrid.size - 1) {
      switchToNext()
      discover()
    }
    guard.foreach(_.observe(nextStart()))
    found.toSeq
  }

  /** A guard for the source after the active one, when its records can age out and checks are on. */
  private def retentionGuard(): Option[RetentionGuard] =
    Option
      .when(index < hybrid.size - 1 && hybrid.retention.checkIntervalMs > 0)(
        hybrid.entries(index + 1))
      .collect {
        case HybridSource.Fixed(s: SupportsRetentionWatch) =>
          (s, s.asInstanceOf[Source[_, _]].sourceType)
        case HybridSource.StartAtPreviousEnd(s: SupportsRetentionWatch, _) =>
          (s, s.asInstanceOf[Source[_, _]].sourceType)
      }
      .map { case (s, sourceType) =>
        new RetentionGuard(
          index + 1,
          sourceType,
          s.retentionWatch(),
          hybrid.retention.checkIntervalMs,
          hybrid.retention.warnBelowMs)
      }

  /**
   * Where the next source would start, derived as the switch will derive it. Started at the
   * active source's last event time minus a margin: that end is at least the event time read so
   * far, and exactly known when the active source's event-time index bounds what is left to read.
   */
  private def nextStart(): Option[PlannedStart] = hybrid.entries(index + 1) match {
    case _: HybridSource.Fixed =>
      Some(PlannedStart(None, known = true, "at its own start positions"))
    case HybridSource.StartAtPreviousEnd(_, marginMs) =>
      val reached = lastProgress
        .collect { case (s, p) if s.sourceIndex == index => p.maxEventTime }
        .flatten
        .maxOption
      val unread = activeSplits.values
        .collect {
          case (s, at) if !child.isFinished(s, at) =>
            SplitRange(s, at, s.stopPosition.getOrElse(SplitRange.OpenEnd))
        }
        .filterNot(_.isEmpty)
        .toSeq
      val ahead =
        if (unread.isEmpty) Some(Map.empty[String, Long])
        else
          childIndex.flatMap { i =>
            try
              Some(i.latestEventTimes(unread)).filter(found =>
                unread.forall(r => found.contains(r.split.splitId)))
            catch {
              case NonFatal(_) => None
            } // unreachable now: the start is not known this time
          }
      (reached ++ ahead.toSeq.flatMap(_.values)).maxOption.map { end =>
        val known = ahead.isDefined && child.noMoreSplits
        PlannedStart(
          Some(math.max(0L, end - marginMs)),
          known,
          s"at its first record at or after ${math.max(0L, end - marginMs)}: source $index's last event time " +
            (if (known) s"$end" else s"(at least $end, reached so far)") + s" minus $marginMs ms")
      }
    case _: HybridSource.FromFactory => None
  }

  private def activeIsFinished: Boolean =
    child.noMoreSplits && activeSplits.values.forall { case (s, reached) =>
      child.isFinished(s, reached)
    }

  private def switchToNext(): Unit = {
    val endedIds = activeSplits.values.map { case (s, _) => s.splitId }.toSet
    val endProgress = lastProgress.collect {
      case (s, p) if s.sourceIndex == index && endedIds.contains(s.child.splitId) =>
        p.copy(splitId = s.child.splitId)
    }
    val ended = child.endState(endProgress)
    // a loss the next source goes on past (failOnDataLoss=false) is recorded with the switch, for good
    val lost = guard.flatMap(_.toleratedLoss).map(HybridMetrics.RetentionRecordsLost -> _)
    val context = SourceSwitchContext(index, ended.copy(details = ended.details ++ lost))
    // Build the next source before touching any state: a factory that throws leaves the switch
    // unrecorded, so a restarted (fixed) query switches again from the same end state.
    val next = hybrid.sourceAt(index + 1, Some(context))
    val nextEnumerator = next.createEnumerator()
    child.close()
    guard.foreach(_.close())
    index += 1
    active = next
    child = nextEnumerator
    alignedDriftMs.foreach(alignedWithin)
    activeSplits.clear()
    switches :+= SwitchRecord(index, context, System.currentTimeMillis())
    guard = retentionGuard()
  }

  override def availablePositions(splits: Seq[(HybridSplit, Long)]): Map[String, Long] = {
    val (current, earlier) = splits.partition(_._1.sourceIndex == index)
    val childPositions = child.availablePositions(current.map { case (s, at) => s.child -> at })
    current.map { case (s, _) => s.splitId -> childPositions(s.child.splitId) }.toMap ++
      // earlier sources' splits are finished: nothing more is read from them
      earlier.map { case (s, _) => s.splitId -> s.stopPosition.getOrElse(s.startPosition) }
  }

  override def noMoreSplits: Boolean = index == hybrid.size - 1 && child.noMoreSplits

  /** Earlier sources' splits are finished; the active source's, as its enumerator says. */
  override def isFinished(split: HybridSplit, position: Long): Boolean =
    split.sourceIndex < index || (split.sourceIndex == index && child.isFinished(
      split.child,
      position))

  /** The next source is built from the active one's end state, once it is finished. */
  override def keepsEndState: Boolean = index < hybrid.size - 1 || child.keepsEndState

  private def childIndex: Option[SupportsEventTimeIndex[SourceSplit]] = child match {
    case i: SupportsEventTimeIndex[SourceSplit @unchecked] if i.hasEventTimeIndex => Some(i)
    case _ => None
  }

  private def childStartTimes: Option[SupportsStartEventTime[SourceSplit]] = child match {
    case i: SupportsStartEventTime[SourceSplit @unchecked] => Some(i)
    case _ => None
  }

  override def hasEventTimeIndex: Boolean = childIndex.isDefined

  // kept for the sources switched to later, whose enumerators are made then
  private var alignedDriftMs: Option[Long] = None
  override def alignedWithin(maxDriftMs: Long): Unit = {
    alignedDriftMs = Some(maxDriftMs)
    child match {
      case i: SupportsEventTimeIndex[SourceSplit @unchecked] => i.alignedWithin(maxDriftMs)
      case _ =>
    }
  }

  /** Asks the active source's enumerator (if it can answer) about its ranges, under the hybrid's split ids. */
  private def viaChild[C](capability: Option[C], ranges: Seq[SplitRange[HybridSplit]])(
      ask: (C, Seq[SplitRange[SourceSplit]]) => Map[String, Long]): Map[String, Long] = {
    val active = ranges.filter(_.split.sourceIndex == index)
    capability
      .filter(_ => active.nonEmpty)
      .map { c =>
        val answers = ask(c, active.map(r => SplitRange(r.split.child, r.from, r.until)))
        active.flatMap(r => answers.get(r.split.child.splitId).map(r.split.splitId -> _)).toMap
      }
      .getOrElse(Map.empty)
  }

  override def positionsBefore(
      ranges: Seq[SplitRange[HybridSplit]],
      eventTimeMs: Long): Map[String, Long] =
    // earlier sources' ranges are empty (finished): nothing to cut there
    ranges.map(r => r.split.splitId -> r.from).toMap ++ viaChild(childIndex, ranges)(
      _.positionsBefore(_, eventTimeMs))

  override def exactEventTimeIndex: Boolean = childIndex.forall(_.exactEventTimeIndex)

  override def positionsThrough(
      ranges: Seq[SplitRange[HybridSplit]],
      eventTimeMs: Long): Map[String, Long] =
    ranges.map(r => r.split.splitId -> r.from).toMap ++ viaChild(childIndex, ranges)(
      _.positionsThrough(_, eventTimeMs))

  override def latestEventTimes(ranges: Seq[SplitRange[HybridSplit]]): Map[String, Long] =
    viaChild(childIndex, ranges)(_.latestEventTimes(_))

  override def firstEventTimes(ranges: Seq[SplitRange[HybridSplit]]): Map[String, Long] =
    viaChild(childStartTimes, ranges)(_.firstEventTimes(_))

  override def snapshotState(): HybridEnumeratorState = {
    val serializer = active.enumeratorStateSerializer
    HybridEnumeratorState(
      index,
      serializer.version,
      serializer.serialize(child.snapshotState()),
      switches,
      recordsOfSplitsLeft)
  }

  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState =
    child.endState(finished)

  override def metrics: Map[String, String] = child.metrics ++ Map(
    HybridMetrics.ActiveSource -> index.toString,
    HybridMetrics.ActiveSourceType -> active.sourceType,
    HybridMetrics.RecordsPerSource -> (0 until hybrid.size).map(recordsOf).mkString(",")) ++
    switches.lastOption.map(s => HybridMetrics.LastSwitchAtMs -> s.atMs.toString) ++
    Option.when(
      switches.exists(
        _.context.previousEndState.details.contains(HybridMetrics.RetentionRecordsLost)))(
      HybridMetrics.RetentionRecordsLost -> "true") ++ guard.map(_.metrics).getOrElse(Map.empty)

  /** The records read from source `i`: its splits in the checkpoint, and those that left it. */
  private def recordsOf(i: Int): Long =
    progressBySource.getOrElse(i, 0L) + recordsOfSplitsLeft.getOrElse(i, 0L)

  /** The active source's, over its splits (a hybrid reading Kafka reports Kafka's figures). */
  override def backlogMetrics(behind: Seq[(HybridSplit, Long)]): Map[String, String] =
    child.backlogMetrics(behind.collect { case (s, b) if s.sourceIndex == index => s.child -> b })

  override def close(): Unit = try child.close()
  finally guard.foreach(_.close())
}

package sluice.runtime

import scala.collection.mutable

import sluice.alignment._
import sluice.api._
import sluice.config.RecordLayout
import sluice.errors.SluiceError

/**
 * The driver side of one source of a query, whatever the execution mode: the enumerator, the
 * splits it discovered, the progress readers reported, event time and membership in an
 * alignment group. Execution modes are thin adapters over it: they restore it from a
 * checkpoint, ask it to plan a batch into per-split ranges, feed it the readers' reports and
 * write its checkpoints where their engine keeps them. Nothing here knows Spark.
 *
 * Planning runs on the engine's query thread; reports may arrive on another thread (when tasks
 * end), hence the locking.
 *
 * An alignment group plans a round from what its members were handed, never by asking the
 * engine: the binding tells a member where its next batch starts (`resumesAt`) before the engine
 * asks it, and each batch planned since moves that on.
 *
 * @param store        keeps reported progress until a checkpoint carries it
 * @param defaultLimit this source's own read limit, for rounds other members start
 */
final class SourceRuntime(
    source: Source[SourceSplit, Any],
    settings: RuntimeSettings,
    store: ProgressStore,
    defaultLimit: BatchLimit)
    extends AlignmentMember {

  private val tracker = new SplitProgressTracker

  /** Where this runtime stands in the engine's cycle; only the transitions below change it. */
  private var current: RuntimeState = RuntimeState.Created

  /** Where this runtime stands: read-only, asking changes nothing. */
  def state: RuntimeState = synchronized(current)
  private val progressWriter = new ProgressWriter(store, settings.displayName)
  private val splits = mutable.LinkedHashMap[String, SourceSplit]()
  private var enumerator: SplitEnumerator[SourceSplit, Any] = _

  /**
   * The checkpoint the enumerator was restored from, until it plans: the engine may hand back a
   * later one first (a restart replays the last logged batch, batch 0 included, before it plans
   * the next), and the next batch must be planned from that one's enumerator state.
   */
  private var restoredFrom: Option[SourceCheckpoint] = None
  private var progressRestored = false

  /** Under an AvailableNow trigger: how far each split may be read by it (fixed at its start). */
  private var availableNowRequested = false
  private var availableNowBound: Option[Map[String, Long]] = None

  /** How far each split could be read at the last planning, for the backlog in progress. */
  private var lastAvailable: Map[String, Long] = Map.empty

  /** The end of the batch planned last: where the next one starts. */
  private var lastEnd: Option[SourceCheckpoint] = None

  /** Where the engine will start this source's next batch, as the binding said before it asked. */
  private var handedStart: Option[SourceCheckpoint] = None

  /** The engine holds no checkpoint of this source yet: a round may start it, as the engine would. */
  private var startsFresh = false

  /** The first checkpoint `start` made: the engine asks for it again after a round started it. */
  private var firstCheckpoint: Option[SourceCheckpoint] = None

  /** A finished split's end state that could not be kept before its batch committed. */
  private var endStateNotKept: Option[Throwable] = None

  /** Latency markers of the ranges read since the batch planned last started (`LatencyWindow`). */
  private val latencyMarkers = new LatencyWindow

  /** What the splits that left the checkpoint (finished earlier) added up to. */
  private var finishedSplits = FinishedSplits.None

  /**
   * The splits this runtime took out of its checkpoints, so that an older checkpoint handed back
   * (Spark commits a batch after planning the next) does not bring them back.
   */
  private val retired = mutable.Set[String]()

  private val eventTime: Option[SourceEventTime] = Option.when(settings.eventTime.enabled)(
    new SourceEventTime(
      settings.eventTime,
      source,
      settings.allowUnalignedSourceSplitsByDefault,
      settings.clock))
  private val group: Option[AlignmentGroup] = settings.eventTime.alignment.map(a =>
    AlignmentCoordinator.join(settings.queryKey, a.group, settings.memberId, this))

  // ---- checkpoints ----------------------------------------------------------------------------

  /** A new query's first checkpoint: the splits discovered now, each at its start position. */
  def start(): SourceCheckpoint = synchronized {
    firstCheckpoint.getOrElse {
      enumerator = source.createEnumerator()
      tellAlignment()
      progressRestored = true
      discover()
      current = RuntimeState.Restored
      val first = checkpointAt(splits.values.map(s => s.splitId -> s.startPosition).toMap)
      firstCheckpoint = Some(first)
      first
    }
  }

  /**
   * Takes in a checkpoint the engine hands back. The first one after a restart rebuilds the
   * enumerator, the splits and their progress (plus what the store kept since); later ones only
   * add splits not known yet.
   */
  def restore(checkpoint: SourceCheckpoint): Unit = synchronized {
    if (enumerator == null) {
      restoreEnumerator(checkpoint)
      finishedSplits = checkpoint.finished
      current = RuntimeState.Restored
    }
    checkpoint.splits
      .filterNot(e => splits.contains(e.splitId) || retired.contains(e.splitId))
      .foreach { e =>
        splits(e.splitId) = source.splitSerializer.deserialize(e.splitVersion, e.split)
        tracker.restore(SplitProgress(e.splitId, e.reportedPosition, e.maxEventTime, e.records))
      }
    if (!progressRestored) {
      progressRestored = true
      store.read().filter(p => splits.contains(p.splitId)).foreach(tracker.restore)
    }
  }

  private def restoreEnumerator(checkpoint: SourceCheckpoint): Unit = {
    val stateSerializer = source.enumeratorStateSerializer
    if (enumerator != null) enumerator.close()
    enumerator = source.restoreEnumerator(
      stateSerializer.deserialize(checkpoint.enumeratorVersion, checkpoint.enumeratorState))
    tellAlignment()
    restoredFrom = Some(checkpoint)
  }

  /** An aligned source's index hears the group's drift before it discovers splits. */
  private def tellAlignment(): Unit = (enumerator, settings.eventTime.alignment) match {
    case (index: SupportsEventTimeIndex[_], Some(a)) =>
      index.alignedWithin(if (a.driftUnresolved) 0L else a.maxDriftMs)
    case _ =>
  }

  /**
   * The split ranges a batch reads from `start` to `end` (empty ones left out): read from the two
   * checkpoints alone, this runtime's state is neither read nor changed.
   */
  def ranges(
      start: Option[SourceCheckpoint],
      end: SourceCheckpoint): Seq[SplitRange[SourceSplit]] =
    end.splits.flatMap { e =>
      val split = source.splitSerializer.deserialize(e.splitVersion, e.split)
      val begin = start.map(_.positionOf(split)).getOrElse(split.startPosition)
      Some(SplitRange(split, begin, e.position)).filterNot(_.isEmpty)
    }

  /**
   * The tasks a batch from `start` to `end` runs: its ranges packed into at most `slots` tasks
   * (the engine's parallelism), so splits with little to read share one (`TaskPacking`), a
   * split's range with ranges of the same `placeOf` (the executor it is best read on) if any.
   * The engine hands `end` back here (after a restart, the batch it replays): it is taken in as
   * `restore` takes it, so that the sizes count the splits' records read so far.
   */
  def tasks(
      start: Option[SourceCheckpoint],
      end: SourceCheckpoint,
      slots: Int,
      minTasks: Option[Int] = None,
      placeOf: SourceSplit => Option[String] = _ => None): Seq[Seq[SplitRange[SourceSplit]]] = {
    restore(end)
    val batch = ranges(start, end)
    val ppr = synchronized(positionsPerRecord)
    def size(r: SplitRange[SourceSplit]) =
      (r.until - r.from) / ppr.getOrElse(r.split.splitId, 1.0)
    minTasks match {
      case Some(min) if min > batch.size => TaskPacking.divide(batch, min, size)
      // a minimum, as Spark's minPartitions: never fewer tasks than asked for, nor than slots
      case Some(min) => TaskPacking.pack(batch, math.max(slots, min), size, r => placeOf(r.split))
      case None => TaskPacking.pack(batch, slots, size, r => placeOf(r.split))
    }
  }

  // ---- reports --------------------------------------------------------------------------------

  /**
   * Folds what readers reported (idempotent: a range counts once however often it is reported)
   * and keeps it in the store, so that it survives the driver until a checkpoint carries it. Runs
   * on Spark's scheduler thread as tasks end: the store is written on the writer's own thread.
   */
  def fold(reports: Seq[SplitReport]): Unit = if (reports.nonEmpty) {
    import SourceRuntime.EndStateWriteTimeoutMs
    val constraining = synchronized {
      latencyMarkers.add(reports)
      if (tracker.fold(reports)) {
        progressWriter.submit(tracker.all)
        if (enumerator != null) {
          enumerator.progressUpdated(splitsWithProgress)
          // A split just finished and its end state will be derived from (a hybrid's switch):
          // keep it before this returns. Spark applies a task's accumulator updates before the
          // job, and so the batch, completes: the commit then never precedes the end state.
          // (the tracker's position, not the report's end: the parts of a divided range may end in any order)
          def finishesASplit = reports
            .map(_.splitId)
            .distinct
            .exists(id =>
              splits
                .get(id)
                .exists(s =>
                  s.stopPosition.exists(stop => tracker.get(id).exists(_.position >= stop))))
          if (enumerator.keepsEndState && finishesASplit) {
            // bounded, since this holds Spark's scheduler thread; thrown here it would only be
            // logged (Spark catches accumulator failures): the next planning writes it again
            try progressWriter.flush(Some(EndStateWriteTimeoutMs))
            catch { case scala.util.control.NonFatal(e) => endStateNotKept = Some(e) }
          }
        }
      }
      eventTime.map(et =>
        et.constrainingWatermarks(et.splitStates(splits.values.toSeq, tracker.get)))
    }
    // outside this runtime's lock: a group round takes the group's lock, then its members'
    constraining.foreach(w => group.foreach(_.reportWatermarks(settings.memberId, w)))
  }

  // ---- planning -------------------------------------------------------------------------------

  /** Under an AvailableNow trigger the end is fixed at the first planning: what exists then. */
  def prepareForAvailableNow(): Unit = synchronized { availableNowRequested = true }

  /**
   * The one planning call: each execution mode asks its question (`PlanRequest`) and gets the
   * matching answer. The steps the modes share are written once below: catching up to the start
   * (`catchUp`), retiring finished splits, discovering splits (`discover`), how far splits can be
   * read now (`readableNow`), admission and alignment (`prepare`).
   */
  def plan[R](request: PlanRequest[R]): R = request match {
    case PlanRequest.BoundedRange(start, limit) => planBoundedRange(start, limit)
    case PlanRequest.OpenRange(start) => openRange(start)
    case PlanRequest.Availability(start) => availability(start)
    case PlanRequest.BoundedRead() => boundedRead()
  }

  /**
   * Plans the batch that starts at `start`: the checkpoint it ends at, `start` itself when there
   * is nothing to read. In an alignment group, the first member asked plans the round of every
   * member and the others take their part of it.
   */
  private def planBoundedRange(start: SourceCheckpoint, limit: BatchLimit): SourceCheckpoint =
    synchronized {
      val part = group.flatMap(_.takePart(settings.memberId) {
        case p: PreparedBatch =>
          (p.owner eq this) && p.start.positions == start.positions && p.limit == limit
        case _ => false
      })
      part match {
        case Some(AlignmentGroup.Part(prepared: PreparedBatch, plan)) =>
          finish(prepared, Some(plan))
        case _ =>
          val prepared = prepare(start, limit)
          val plan = prepared.aligned.map { aligned =>
            group.map(_.planRound(settings.memberId, prepared)).getOrElse(aligned.plan(None))
          }
          finish(prepared, plan)
      }
    }

  /**
   * Where the engine will start this source's next batch, told before the engine asks it: after a
   * restart another member of its alignment group may open a round first, and the round plans this
   * member from here. Until this source plans a batch of its own (which then says where the next
   * one starts); without it, the member is planned late in such a round.
   */
  def resumesAt(checkpoint: SourceCheckpoint): Unit = synchronized {
    handedStart = Some(checkpoint)
  }

  /**
   * The engine holds no checkpoint of this source yet (a new query): a round another member opens
   * first starts this one (`start`, the first checkpoint the engine will ask for), at the same
   * moment the engine would have, rather than when the binding is built.
   */
  def resumesFresh(): Unit = synchronized {
    startsFresh = true
  }

  override def prepareForRound(): Option[PreparedMemberBatch] = synchronized {
    lastEnd
      .orElse(handedStart)
      .orElse(Option.when(startsFresh)(start()))
      .map(prepare(_, defaultLimit))
  }

  /**
   * Brings the runtime to `start` before a batch from there is planned, and lets the enumerator
   * discover splits (a hybrid may switch sources here).
   */
  private def catchUp(start: SourceCheckpoint): Unit = {
    endStateNotKept.foreach { e =>
      // all of it is still here: keep it now, before anything is derived from it, or stop
      progressWriter.submit(tracker.all)
      try progressWriter.flush()
      catch {
        case scala.util.control.NonFatal(again) =>
          again.addSuppressed(e)
          throw new IllegalStateException(
            s"Sluice: source '${settings.displayName}' could not keep what readers " +
              "reached in a finished split in the checkpoint; what is derived from it (a hybrid's next source) must " +
              "not be derived from less than was read. Check that the checkpoint location is writable.",
            again)
      }
      endStateNotKept = None
    }
    progressWriter.flush() // what the last batch read is kept before the next one is planned
    restore(start)
    // Restored from an earlier checkpoint than the one planning starts at (the initial offset,
    // then batch 0 replayed): what the enumerator found while planning the batches in between
    // (a file listed for batch 0) must not be found again, and split another way.
    if (restoredFrom.exists(_ != start)) {
      restoreEnumerator(start)
      // splits of the earlier checkpoint that `start` no longer holds left it, finished
      splits.keys.filterNot(start.byId.contains).toSeq.foreach { id =>
        forget(id)
        retired += id
      }
      finishedSplits = start.finished
    }
    restoredFrom = None
    // The engine plans a batch only after the previous one committed, so every range up to
    // `start` was read in full, even if its report died with a previous driver: a finished split
    // must not look unfinished forever (a hybrid would never switch).
    start.splits.foreach(e => tracker.advanceTo(e.splitId, e.position))
    retireFinished(start)
    // the batch that ended at `start` had its progress reported before this planning
    latencyMarkers.moveTo(start)
    enumerator.progressUpdated(splitsWithProgress)
    discover()
  }

  /**
   * Splits read to their end by the batch that ended at `start` (it committed: the engine plans
   * only after that) leave the checkpoint; what they read is added to `finishedSplits`. Not while
   * the enumerator derives something from their end state (a hybrid before its last source).
   */
  private def retireFinished(start: SourceCheckpoint): Unit = if (!enumerator.keepsEndState) {
    val leaving = start.splits.flatMap(e =>
      splits.get(e.splitId).filter(s => enumerator.isFinished(s, e.position)).map { s =>
        s -> tracker
          .get(e.splitId)
          .getOrElse(SplitProgress(e.splitId, e.position, e.maxEventTime, e.records))
      })
    leaving.foreach { case (s, p) =>
      finishedSplits = finishedSplits.add(p)
      forget(s.splitId)
      retired += s.splitId
    }
    if (leaving.nonEmpty) enumerator.splitsLeft(leaving)
  }

  private def forget(splitId: String): Unit = {
    splits.remove(splitId)
    tracker.forget(splitId)
    lastAvailable -= splitId
  }

  private def prepare(start: SourceCheckpoint, limit: BatchLimit): PreparedBatch = {
    catchUp(start)

    val available = readableNow()
    if (availableNowRequested) {
      // Fixed when the trigger starts; a split first seen during the trigger (a hybrid's next
      // source, a new partition) is bounded by what it held when it was first seen.
      availableNowBound = Some(available ++ availableNowBound.getOrElse(Map.empty))
    }
    val from = positionsIn(start)
    def bound(id: String) = availableNowBound.flatMap(_.get(id)).getOrElse(Long.MaxValue)
    val readableEnd = splits.keys
      .map(id => id -> math.max(from(id), math.min(available.getOrElse(id, from(id)), bound(id))))
      .toMap
    val readable = splits.keys.toSeq.map(id => id -> (readableEnd(id) - from(id)))
    val ppr = positionsPerRecord
    val shares = limit.maxRecords match {
      case Some(b) => AdmissionPlanner.shareRecords(readable, b, ppr)
      case None => readable.toMap
    }
    val unaligned = from.map { case (id, pos) => id -> (pos + shares.getOrElse(id, 0L)) }
    // a split read to its stop, or to the end of this AvailableNow trigger, is finished for alignment
    def finished(id: String) =
      enumerator.isFinished(splits(id), from(id)) || from(id) >= bound(id)
    val aligned = eventTime.flatMap(
      _.prepare(
        splits.values.toSeq,
        from,
        readableEnd,
        finished,
        id => tracker.get(id).get,
        limit.maxRecords,
        ppr,
        enumerator,
        withOthers = group.exists(_.hasOtherMembers(settings.memberId))))
    new PreparedBatch(this, start, limit, unaligned, aligned)
  }

  private def finish(prepared: PreparedBatch, plan: Option[SourcePlan]): SourceCheckpoint = {
    for (p <- plan; a <- prepared.aligned; et <- eventTime) et.applied(a, p)
    val ends = plan.map(_.ends).getOrElse(prepared.unaligned)
    val next = checkpointAt(prepared.unaligned ++ ends)
    val end = endOrStart(prepared.start, next)
    lastEnd = Some(end)
    current = RuntimeState.Planned
    end
  }

  // ---- open batches (real-time mode, continuous processing) -----------------------------------

  /**
   * An open batch from `start`: every split known now, each from where `start` has it
   * (new ones from their start) to its stop, open-ended where it has none. Readers keep reading
   * until the engine ends the batch; `endOfOpenBatch` turns where they got into the next
   * checkpoint.
   */
  private def openRange(start: SourceCheckpoint): OpenBatch = {
    // asked before this runtime's lock is taken: a group's round takes the group's lock, then its members'
    val sharedGroup = group.exists(_.hasOtherMembers(settings.memberId))
    synchronized(openRangeLocked(start, sharedGroup))
  }

  private def openRangeLocked(start: SourceCheckpoint, sharedGroup: Boolean): OpenBatch = {
    catchUp(start)
    val from = positionsIn(start)
    val begin = checkpointAt(from)
    val ranges = splits.values.toSeq
      .filterNot(s => enumerator.isFinished(s, from(s.splitId)))
      .map(s => SplitRange(s, from(s.splitId), s.stopPosition.getOrElse(SplitRange.OpenEnd)))
      .filterNot(_.isEmpty)
    lastEnd = Some(begin)
    current = RuntimeState.Running
    OpenBatch(
      begin,
      ranges,
      eventTimes =
        eventTime.map(_.openingEventTimes(ranges, tracker.get, enumerator)).getOrElse(Map.empty),
      pauseSplits = eventTime.flatMap(_.livePausing(ranges.map(_.split))).getOrElse(false),
      sharedGroup = sharedGroup)
  }

  /**
   * Whether the enumerator, told what readers reported so far, finds splits not known yet (a new
   * partition or file, a hybrid's next source once the active one is read): an engine running
   * an open batch then restarts its tasks, and the next `OpenRange` opens the new splits too.
   */
  def discoverNewSplits(): Boolean = synchronized {
    if (enumerator == null) false
    else {
      enumerator.progressUpdated(splitsWithProgress)
      discover().nonEmpty
    }
  }

  /**
   * How far each split of `start` could be read now, and how many records that is: what an engine
   * that only looks asks for (real-time mode's end offset, `minRecordsPerTrigger`'s count). Plans
   * nothing. It takes `start` in as `restore` does (a runtime the engine had not handed a
   * checkpoint yet is Restored after it), and the enumerator may note what it found (Kafka: a
   * partition that now ends below what was read); what it found is kept for the backlog in progress.
   */
  private def availability(start: SourceCheckpoint): Available = synchronized {
    restore(start)
    val readable = readableNow()
    val next = checkpointAt(positionsIn(start).map { case (id, p) =>
      id -> math.max(p, readable.getOrElse(id, p))
    })
    Available(endOrStart(start, next), recordsAvailableFrom(start))
  }

  /**
   * A bounded source read whole: every split the enumerator will ever discover, each from its
   * start to its stop. An enumerator may hold splits back until earlier ones are read (a hybrid
   * discovers its next member's splits only once it sees the active member finished): it is
   * told, as readers would tell it, that every split known so far was read to its stop, and asked
   * again until it will discover no more. The splits' stops must therefore not depend on what
   * readers find: a hybrid whose next member is derived from the previous one's end is refused
   * by the binding before. The runtime is Finished after it: nothing is checkpointed.
   */
  private def boundedRead(): Seq[SplitRange[SourceSplit]] = synchronized {
    // a runtime in use is left as it is
    if (current != RuntimeState.Created) {
      throw new IllegalStateException(
        s"Sluice: $this was asked for a bounded read in state $current; a bounded read is planned by a new runtime.")
    }
    // this one is closed (its progress writer's thread stopped) whatever the outcome
    try {
      if (source.boundedness != Boundedness.Bounded) {
        throw SluiceError.config(
          s"Sluice: the ${source.sourceType} source is unbounded; only a bounded " +
            "source can be read as a batch.")
      }
      enumerator = source.createEnumerator()
      discover()
      var empty = 0
      while (!enumerator.noMoreSplits) {
        splits.values.foreach(s => tracker.advanceTo(s.splitId, stopOf(s)))
        enumerator.progressUpdated(splitsWithProgress)
        if (discover().nonEmpty) empty = 0
        else {
          empty += 1
          if (empty >= SourceRuntime.MaxEmptyDiscoveries) {
            throw new IllegalStateException(
              s"Sluice: the enumerator of the bounded ${source.sourceType} source " +
                s"still expects splits after discovering ${splits.size} and finding no new ones $empty times in a row; " +
                "a batch read cannot wait for more. This is a bug in the connector's enumerator.")
          }
        }
      }
      splits.values.toSeq
        .map(s => SplitRange(s, s.startPosition, stopOf(s)))
        .filterNot(_.isEmpty)
    } finally close()
  }

  private def stopOf(split: SourceSplit): Long =
    split.stopPosition.getOrElse(
      throw new IllegalStateException(
        s"Sluice: split ${split.splitId} of the bounded ${source.sourceType} source has no stop position; " +
          "a batch read cannot tell where it ends. This is a bug in the connector."))

  // ---- steps every planning shares ------------------------------------------------------------

  /**
   * Lets the enumerator discover splits and tracks those it finds, each at its start; returns
   * those not tracked before (a split retired earlier is among them, but is not tracked again).
   */
  private def discover(): Seq[SourceSplit] = {
    val found = enumerator.discoverSplits().filterNot(s => splits.contains(s.splitId))
    found.foreach(track)
    found
  }

  /**
   * How far each split can be read now, kept for the backlog in progress. A split bounded by the
   * current AvailableNow trigger is read to that bound: the system is not asked again every batch
   * (what is left to read is then the trigger's backlog).
   */
  private def readableNow(): Map[String, Long] = {
    val fixed = availableNowBound.getOrElse(Map.empty)
    lastAvailable = fixed ++ enumerator.availablePositions(
      splits.values.filterNot(s => fixed.contains(s.splitId)).toSeq.map(s => s -> reached(s)))
    lastAvailable
  }

  /** `next`, or `start` itself when a batch from `start` to `next` reads nothing and finds no split. */
  private def endOrStart(start: SourceCheckpoint, next: SourceCheckpoint): SourceCheckpoint =
    if (next.readsNothingAfter(start)) start else next

  /**
   * Where an open batch from `start` ended: each split at the furthest position readers
   * reported (reports fold as usual, idempotently), the others where they started.
   */
  def endOfOpenBatch(start: SourceCheckpoint, reports: Seq[SplitReport]): SourceCheckpoint = {
    fold(reports)
    synchronized {
      restore(start)
      val reached = reports.groupMapReduce(_.splitId)(_.until)(math.max)
      val end = checkpointAt(positionsIn(start).map { case (id, p) =>
        id -> (if (start.byId.contains(id)) math.max(p, reached.getOrElse(id, p)) else p)
      })
      lastEnd = Some(end)
      current = RuntimeState.Planned
      end
    }
  }

  /**
   * Positions per record for each split: 1 where positions count records; for byte positions,
   * the bytes per record read so far over all such splits (a default before anything was read).
   */
  private def positionsPerRecord: Map[String, Double] = {
    val bytewise = splits.values.filterNot(_.positionsCountRecords).toSeq
    val read = bytewise
      .flatMap(s => tracker.get(s.splitId).map(p => (p.position - s.startPosition, p.records)))
      .filter(_._2 > 0)
    val bytesPerRecord =
      if (read.isEmpty) AdmissionPlanner.DefaultBytesPerRecord
      else math.max(1.0, read.map(_._1).sum.toDouble / read.map(_._2).sum)
    splits.values
      .map(s => s.splitId -> (if (s.positionsCountRecords) 1.0 else bytesPerRecord))
      .toMap
  }

  /** Where readers got in `split`: the tracker is the one home of split positions. */
  private def reached(split: SourceSplit): Long = tracker.get(split.splitId).get.position

  private def splitsWithProgress: Seq[(SourceSplit, SplitProgress)] =
    splits.values.toSeq.map(s => s -> tracker.get(s.splitId).get)

  private def track(split: SourceSplit): Unit =
    if (!splits.contains(split.splitId) && !retired.contains(split.splitId)) {
      splits(split.splitId) = split
      tracker.restore(SplitProgress(split.splitId, split.startPosition, None, 0L))
    }

  /** Where a batch from `start` reads each known split from: the one expression of a start position. */
  private def positionsIn(start: SourceCheckpoint): Map[String, Long] =
    splits.values.map(s => s.splitId -> start.positionOf(s)).toMap

  private def checkpointAt(positions: Map[String, Long]): SourceCheckpoint = {
    val serializer = source.splitSerializer
    SourceCheckpoint(
      source.sourceType,
      source.enumeratorStateSerializer.version,
      source.enumeratorStateSerializer.serialize(enumerator.snapshotState()),
      splits.values.toSeq.map { s =>
        val p = tracker.get(s.splitId).get
        SplitEntry(
          s.splitId,
          serializer.version,
          serializer.serialize(s),
          positions(s.splitId),
          p.position,
          p.maxEventTime,
          p.records)
      },
      finishedSplits)
  }

  /** The records that were available from `start` at the last look (positions over positions per record). */
  private def recordsAvailableFrom(start: SourceCheckpoint): Long = {
    val ppr = positionsPerRecord
    start.splits.map { e =>
      val ahead = math.max(0L, lastAvailable.getOrElse(e.splitId, e.position) - e.position)
      math.ceil(ahead / ppr.getOrElse(e.splitId, 1.0)).toLong
    }.sum + lastAvailable.keys
      .filterNot(start.byId.contains)
      .map { id =>
        // found by this planning: available from where they start
        splits
          .get(id)
          .map(s =>
            math
              .ceil(math.max(0L, lastAvailable(id) - s.startPosition) / ppr.getOrElse(id, 1.0))
              .toLong)
          .getOrElse(0L)
      }
      .sum
  }

  // ---- status ---------------------------------------------------------------------------------

  /**
   * Figures for query progress, from the state as it is: no enumerator call that reaches a
   * system, no write, nothing moved (asked twice, it answers the same; latency markers are those
   * of the current `LatencyWindow`, which the next planning moves). `consumed` is the checkpoint of the last batch run, for the backlog.
   */
  def metrics(consumed: Option[SourceCheckpoint]): Map[String, String] = synchronized {
    val progress = tracker.all
    val backlog = consumed.toSeq.flatMap(_.splits).flatMap { e =>
      lastAvailable.get(e.splitId).map(available => math.max(0L, available - e.position))
    }
    val m = mutable.LinkedHashMap[String, String](
      RuntimeMetrics.Source -> settings.displayName,
      RuntimeMetrics.SourceType -> source.sourceType,
      RuntimeMetrics.Splits -> (splits.size + finishedSplits.count).toString,
      RuntimeMetrics.RecordsRead -> (progress
        .map(_.records)
        .sum + finishedSplits.records).toString)
    // unknown after a restart until the first planning asks the enumerator again
    if (backlog.nonEmpty || consumed.exists(_.splits.isEmpty))
      m(RuntimeMetrics.BacklogRecords) = backlog.sum.toString
    if (finishedSplits.count > 0) m(RuntimeMetrics.FinishedSplits) = finishedSplits.count.toString
    (progress.flatMap(_.maxEventTime) ++ finishedSplits.maxEventTime).maxOption.foreach(ts =>
      m(RuntimeMetrics.MaxEventTimeMs) = ts.toString)
    if (enumerator != null) {
      m ++= enumerator.metrics
      // per split the last planning asked about, as Spark's Kafka source counts its partitions
      val ended = consumed.map(_.byId).getOrElse(Map.empty)
      val behind = lastAvailable.toSeq.flatMap { case (id, available) =>
        for (split <- splits.get(id); e <- ended.get(id)) yield split -> (available - e.position)
      }
      if (consumed.isDefined) m ++= enumerator.backlogMetrics(behind)
    }
    consumed.foreach(c => m(RuntimeMetrics.SplitProgress) = SplitStatus.json(splitStatuses(c)))
    eventTime.foreach { et =>
      m ++= et.metrics(et.splitStates(splits.values.toSeq, tracker.get), group.flatMap(_.spread))
    }
    if (settings.latencyTracking) {
      m ++= LatencyMarkers.metrics(latencyMarkers.markers)
    }
    if (settings.layout == RecordLayout.Compact)
      m(RuntimeMetrics.RecordLayout) = settings.layout.name
    progress
      .map(_.counters)
      .foldLeft(finishedSplits.counters)(SplitProgress.sumCounters)
      .toSeq
      .sortBy(_._1)
      .foreach { case (k, v) => m(k) = v.toString }
    m.toMap
  }

  /**
   * Each split as of the last batch run: what was read from it, where that batch ended, how far it
   * could be read at the last planning, and the records in between (byte positions over the bytes
   * per record read so far). Splits found by a planning after that batch are not in it yet, and
   * splits that planning found finished are not in it any more.
   */
  private def splitStatuses(consumed: SourceCheckpoint): Seq[SplitStatus] = {
    val ppr = positionsPerRecord
    // a split that left the checkpoint since (finished) is in the source's figures only
    consumed.splits.filter(e => splits.contains(e.splitId)).map { e =>
      val progress = tracker.get(e.splitId)
      val available = lastAvailable.get(e.splitId)
      SplitStatus(
        e.splitId,
        progress.map(_.records).getOrElse(e.records),
        e.position,
        available,
        available.map(a =>
          math.ceil(math.max(0L, a - e.position) / ppr.getOrElse(e.splitId, 1.0)).toLong),
        progress.flatMap(_.maxEventTime).orElse(e.maxEventTime))
    }
  }

  def close(): Unit = synchronized {
    current = RuntimeState.Finished
    try {
      try progressWriter.close()
      finally if (enumerator != null) enumerator.close()
    } finally {
      for (a <- settings.eventTime.alignment)
        AlignmentCoordinator.leave(settings.queryKey, a.group, settings.memberId)
    }
  }

  override def toString: String = s"SourceRuntime[${settings.displayName}]"
}

object SourceRuntime {

  /** How long a task's end may wait for an end state to be kept (see `fold`). */
  val EndStateWriteTimeoutMs = 30000L

  /** Discoveries in a row that may find nothing new before a bounded read gives an enumerator up. */
  private val MaxEmptyDiscoveries = 3

  /**
   * A runtime that plans one bounded read (`plan(PlanRequest.BoundedRead())`): no event time, no
   * alignment group, nothing kept (a batch read has no later batch and no checkpoint).
   */
  def forBoundedRead(source: Source[SourceSplit, Any]): SourceRuntime = new SourceRuntime(
    source,
    RuntimeSettings(
      source.sourceType,
      sluice.eventtime
        .EventTimeSettings(sluice.eventtime.EventTimeSettings.Kind.None, 0L, None, None, None),
      layout = RecordLayout.Full,
      latencyTracking = false,
      queryKey = "",
      memberId = ""),
    new ProgressStore.InMemory,
    BatchLimit(None))
}

/**
 * Where a `SourceRuntime` stands in the engine's cycle. Each event the engine sends is one
 * transition (`start`/`restore`, `plan` of a `BoundedRange` or an `OpenRange`, `endOfOpenBatch`,
 * `close`); what only looks (`plan` of an `Availability`, `ranges`, `metrics`) leaves it where it
 * is. A bounded read (`plan` of a `BoundedRead`) goes from Created to Finished.
 *
 * {{{
 *   Created --start / restore--> Restored --BoundedRange--> Planned --BoundedRange--> Planned
 *                                   |                       |
 *                                   +----OpenRange----> Running --endOfOpenBatch--> Planned
 *   any --close--> Finished
 * }}}
 */
sealed trait RuntimeState
object RuntimeState {

  /** Built: no enumerator yet; the engine has not handed it a checkpoint. */
  case object Created extends RuntimeState

  /** The enumerator is rebuilt (or new), nothing planned by this runtime yet. */
  case object Restored extends RuntimeState

  /** A batch is planned; its end is where the next one starts. */
  case object Planned extends RuntimeState

  /** An open batch runs: readers read until the engine ends it. */
  case object Running extends RuntimeState

  /** Closed with its stream: it left its alignment group. */
  case object Finished extends RuntimeState
}

/**
 * A batch prepared from where it starts: the ends without alignment, and the aligned planning.
 */
private final class PreparedBatch(
    val owner: SourceRuntime,
    val start: SourceCheckpoint,
    val limit: BatchLimit,
    val unaligned: Map[String, Long],
    val aligned: Option[AlignedBatch])
    extends PreparedMemberBatch {
  override def plan(othersFrontier: Option[Long]): SourcePlan = aligned match {
    case Some(a) => a.plan(othersFrontier)
    case None => SourcePlan(unaligned, None, None, Set.empty, None)
  }
}

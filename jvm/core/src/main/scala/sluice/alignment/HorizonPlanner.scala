package sluice.alignment

import scala.collection.mutable

import sluice.runtime.AdmissionPlanner

/**
 * One split of a source as alignment sees it while a batch is planned.
 *
 * @param from            where the batch starts reading it
 * @param end             how far it could be read this batch (data present, stop position,
 *                        Trigger.AvailableNow bound)
 * @param maxEventTime    the largest event time read from it so far
 * @param latestEventTime an upper bound of the event times in `[from, end)`, when the connector can tell
 * @param firstEventTime  the event time of the record at `from`, for a split not read yet, when the connector can tell
 * @param idle            marked idle (FLIP-180); an idle split constrains nobody
 * @param finished        read to its end, or to the end of this AvailableNow trigger
 */
final case class SplitToPlan(
    splitId: String,
    from: Long,
    end: Long,
    maxEventTime: Option[Long],
    latestEventTime: Option[Long],
    idle: Boolean,
    finished: Boolean,
    positionsPerRecord: Double = 1.0,
    firstEventTime: Option[Long] = None) {
  def readable: Long = math.max(0L, end - from)

  /** Where the split is in event time now: its largest event time read, else where it starts. */
  def position: Option[Long] = maxEventTime.orElse(firstEventTime)

  /** Where the split would be in event time after reading all it can. */
  def reach: Option[Long] = (maxEventTime ++ latestEventTime).maxOption
}

/** The connector's event-time index over the ranges being planned (see `SupportsEventTimeIndex`). */
trait TimeIndex {
  def positionsBefore(eventTimeMs: Long): Map[String, Long]

  /**
   * False when the index knows event times per block of records only (a Parquet row group's
   * statistics): the planner then cuts with `positionsThrough`, so a block that straddles the
   * horizon is read whole and no split stops inside a block at an event time nobody knows.
   */
  def exact: Boolean = true

  /** For an inexact index: the end of the last block that may hold a record below the time. */
  def positionsThrough(eventTimeMs: Long): Map[String, Long] = positionsBefore(eventTimeMs)

  /**
   * Event times this index has already answered for the ranges being planned, so asking again
   * is free: a group's round plans a member against several frontiers, and each search starts
   * from what the earlier ones learnt. (For an inexact index, the times `positionsThrough` answered.)
   */
  def answered: Iterable[Long] = Nil
}

/** How a source takes part in alignment. */
sealed trait AlignmentMode
object AlignmentMode {

  /** Every split aligns; ranges are cut exactly at the limit through the connector's time index. */
  case object SplitsByIndex extends AlignmentMode

  /** Every split aligns; without an index a split runs until a batch boundary shows it ahead. */
  case object SplitsByWatermark extends AlignmentMode

  /** The reader cannot pause splits and unaligned splits are allowed: the source aligns as a whole. */
  case object WholeSource extends AlignmentMode
}

/**
 * The outcome of planning one source's batch under alignment.
 *
 * @param ends     the planned end position of every split
 * @param limit    the group's maximum allowed watermark for this batch (None: no limit)
 * @param horizon  the exclusive event-time bound ranges were cut at, when cut by index
 * @param heldBack splits with data to read that alignment gave nothing this batch (paused)
 * @param frontier the smallest watermark the source's constraining splits will have after the
 *                 batch (None: it constrains nobody); what the other members align to
 * @param msPerRecord when the read limit lowered the horizon: the event time one record spanned
 *                 in this batch, from which the next batch guesses its horizon
 * @param minimumSplit the split of this source that set the group's minimum (the limit minus the
 *                 drift), which the limit never holds back; None when another member's frontier set
 *                 it, or when the source aligns as a whole
 */
final case class SourcePlan(
    ends: Map[String, Long],
    limit: Option[Long],
    horizon: Option[Long],
    heldBack: Set[String],
    frontier: Option[Long],
    msPerRecord: Option[Double] = None,
    minimumSplit: Option[String] = None)

/**
 * Plans one source's batch so that, at its end, no split's watermark is above the group's limit
 * (FLIP-217's `maxAllowedWatermark = min(watermarks) + maxDrift`), while reading as much as the
 * read limit allows.
 *
 * Micro-batches change when the limit must hold: Spark derives the next batch's watermark from
 * the rows of this one, so the splits must be aligned where this batch *ends*. The limit is
 * therefore computed from where each constraining split will be after reading what it can (its
 * `reach`), and every range is cut at the event-time horizon `limit + outOfOrderness`: a split
 * running ahead gets an empty range (it is paused), one behind reads up to the horizon. With a
 * read limit, the horizon is lowered (binary search over the index) until the ranges fit it, so
 * all splits move forward in event time together rather than in proportion to their backlog.
 *
 * A cut never stalls a source: when it would read nothing at all although splits whose watermark
 * is within the limit have data (their next record lies beyond the horizon — out-of-order
 * timestamps, sparse data, another member just behind), those splits read up to their next
 * record's event time, as Flink would let them emit it and pause them afterwards.
 */
object HorizonPlanner {

  /** At most this many index look-ups per batch when a read limit lowers the horizon. */
  val MaxSearchSteps = 48

  /**
   * A horizon the read limit lowered is good enough once the batch reads this close to the limit
   * (a fraction of it): each further look-up costs a request and would add a few records at most.
   */
  val SearchTolerance = 0.02

  def plan(
      splits: Seq[SplitToPlan],
      watermarkOf: Long => Long,
      maxOutOfOrdernessMs: Long,
      maxDriftMs: Long,
      othersFrontier: Option[Long],
      budgetRecords: Option[Long],
      index: Option[TimeIndex],
      mode: AlignmentMode,
      nextEventTimes: Seq[String] => Map[String, Long] = _ => Map.empty,
      msPerRecordHint: Option[Double] = None): SourcePlan = {
    val constraining = splits.filter(s => !s.idle && !s.finished)
    def current(s: SplitToPlan) = s.position.map(watermarkOf)
    mode match {
      case AlignmentMode.SplitsByIndex =>
        val idx = index.getOrElse(
          throw new IllegalArgumentException("planning by index needs a time index"))
        val ownMin = lowest(
          constraining.flatMap(s => s.reach.map(r => s.splitId -> watermarkOf(r))))
        val limit = AlignmentPolicy.limit(ownMin.map(_._2) ++ othersFrontier, maxDriftMs)
        val driftHorizon = limit.map(l => saturatingAdd(l, saturatingAdd(maxOutOfOrdernessMs, 1)))
        val cutIndex =
          if (idx.exact) idx
          else
            throughBlocks(
              idx,
              splits.filter(s => AlignmentPolicy.isAhead(current(s), s.finished, limit)))
        val Cut(cut, horizon, msPerRecord) =
          cutByIndex(splits, driftHorizon, budgetRecords, cutIndex, msPerRecordHint)
        val withinLimit = splits.filter(s =>
          !s.finished && s.readable > 0 && !AlignmentPolicy.isAhead(
            current(s),
            s.finished,
            limit))
        val ends =
          if (splits.exists(s => cut(s.splitId) > s.from)) cut
          else
            withinBudget(
              unstall(withinLimit, cut, cutIndex, nextEventTimes),
              splits,
              budgetRecords)
        // paused: ahead of the event time this batch reads up to; a split whose next record merely
        // lies past a horizon the read limit lowered is waiting its turn, not paused
        val paused = heldBack(splits, ends).filter { id =>
          val s = splits.find(_.splitId == id).get
          // a split not read yet and not looked up starts at or after the horizon: count it paused
          horizon.forall(h => s.position.forall(_ >= h)) || AlignmentPolicy.isAhead(
            current(s),
            s.finished,
            limit)
        }
        SourcePlan(
          ends,
          limit,
          horizon,
          paused,
          frontier(constraining, ends, horizon, watermarkOf, idx.exact),
          msPerRecord,
          settingMinimum(ownMin, othersFrontier))

      case AlignmentMode.SplitsByWatermark =>
        val ownMin = lowest(constraining.flatMap(s => current(s).map(s.splitId -> _)))
        val limit = AlignmentPolicy.limit(ownMin.map(_._2) ++ othersFrontier, maxDriftMs)
        val ahead = splits
          .filter(s => AlignmentPolicy.isAhead(current(s), s.finished, limit))
          .map(_.splitId)
          .toSet
        val ends = shareBudget(splits, ahead, budgetRecords)
        SourcePlan(
          ends,
          limit,
          None,
          heldBack(splits, ends),
          frontier(constraining, ends, None, watermarkOf),
          minimumSplit = settingMinimum(ownMin, othersFrontier))

      case AlignmentMode.WholeSource =>
        val limit = AlignmentPolicy.limit(othersFrontier, maxDriftMs)
        val sourceWatermark = constraining.flatMap(current).minOption
        val ahead =
          if (AlignmentPolicy.isAhead(sourceWatermark, finished = false, limit))
            splits.map(_.splitId).toSet
          else Set.empty[String]
        val ends = shareBudget(splits, ahead, budgetRecords)
        SourcePlan(
          ends,
          limit,
          None,
          heldBack(splits, ends),
          frontier(constraining, ends, None, watermarkOf))
    }
  }

  /** The split with the smallest watermark (the first by id among equals), and that watermark. */
  private def lowest(watermarks: Seq[(String, Long)]): Option[(String, Long)] =
    watermarks.sortBy(_._1).minByOption(_._2)

  /** The own split that set the group's minimum: below or at the other members' frontier. */
  private def settingMinimum(
      ownMin: Option[(String, Long)],
      othersFrontier: Option[Long]): Option[String] =
    ownMin.collect { case (split, wm) if othersFrontier.forall(wm <= _) => split }

  /**
   * An inexact index as the planner cuts with it: every block that may hold a record below the
   * time is read whole — one straddling the horizon too, so the split ends the batch at the
   * block's end, whose largest event time is known, rather than inside it at one that is not.
   * A split already above the limit stays where it is: once partly read, its block's smallest
   * event time no longer says where it stands.
   */
  private def throughBlocks(index: TimeIndex, ahead: Seq[SplitToPlan]): TimeIndex =
    new TimeIndex {
      override def positionsBefore(t: Long): Map[String, Long] =
        index.positionsThrough(t) ++ ahead.map(s => s.splitId -> s.from)
      override def answered: Iterable[Long] = index.answered
    }

  /** Lets splits within the limit read up to their next record's event time (at least one position). */
  private def unstall(
      candidates: Seq[SplitToPlan],
      ends: Map[String, Long],
      index: TimeIndex,
      nextEventTimes: Seq[String] => Map[String, Long]): Map[String, Long] = {
    if (candidates.isEmpty) return ends
    val next = nextEventTimes(candidates.map(_.splitId))
    val upTo = next.values.toSeq.distinct.flatMap { t =>
      val found = index.positionsBefore(saturatingAdd(t, 1))
      candidates
        .filter(s => next.get(s.splitId).contains(t))
        .map(s => s.splitId -> found.getOrElse(s.splitId, s.from))
    }.toMap
    ends ++ candidates.map(s =>
      s.splitId -> math.min(s.end, math.max(s.from + 1, upTo.getOrElse(s.splitId, s.from))))
  }

  /** `ends` shared by the read limit when they exceed it. */
  private def withinBudget(
      ends: Map[String, Long],
      splits: Seq[SplitToPlan],
      budget: Option[Long]): Map[String, Long] =
    budget match {
      case Some(b) =>
        val wanted = splits.map(s => s.splitId -> (ends(s.splitId) - s.from))
        val shares = AdmissionPlanner.shareRecords(
          wanted,
          b,
          id => splits.find(_.splitId == id).get.positionsPerRecord)
        splits.map(s => s.splitId -> (s.from + shares.getOrElse(s.splitId, 0L))).toMap
      case None => ends
    }

  private def saturatingAdd(a: Long, b: Long): Long =
    if (b > 0 && a > Long.MaxValue - b) Long.MaxValue else a + b

  private final case class Cut(
      ends: Map[String, Long],
      horizon: Option[Long],
      msPerRecord: Option[Double])

  /**
   * Cuts every range at `horizon` (all of it when None), lowered until the ranges fit the budget.
   *
   * Every look-up in the index is a request to the system (Kafka's `offsetsForTimes`), so the
   * search asks as few as it can: a time past every range's latest event time needs none (the
   * whole range lies below it), times the index already answered in this round are free, and
   * the first guess comes from `msPerRecordHint`, the event time a record spanned in the last
   * batch, which on steady data lands within the tolerance at once.
   */
  private def cutByIndex(
      splits: Seq[SplitToPlan],
      horizon: Option[Long],
      budget: Option[Long],
      index: TimeIndex,
      msPerRecordHint: Option[Double]): Cut = {
    val readable = splits.filter(s => !s.finished && s.readable > 0)
    val untouched = splits.map(s => s.splitId -> s.from).toMap
    if (readable.isEmpty) return Cut(untouched, horizon, None)
    val everything = untouched ++ readable.map(s => s.splitId -> s.end)
    // below this time nothing of any range is known to lie past it: every range is read whole
    val wholeFrom: Option[Long] =
      if (readable.forall(_.latestEventTime.isDefined))
        Some(saturatingAdd(readable.flatMap(_.latestEventTime).max, 1))
      else None
    def endsBefore(t: Option[Long]): Map[String, Long] = t match {
      case None => everything
      case Some(ts) if wholeFrom.exists(_ <= ts) => everything
      case Some(ts) =>
        val found = index.positionsBefore(ts)
        untouched ++ readable.map(s =>
          s.splitId -> math.min(s.end, math.max(s.from, found.getOrElse(s.splitId, s.from))))
    }
    def records(ends: Map[String, Long]): Long =
      readable.map(s => math.ceil((ends(s.splitId) - s.from) / s.positionsPerRecord).toLong).sum
    def share(bound: Map[String, Long], b: Long): Map[String, Long] = {
      val shares = AdmissionPlanner.shareRecords(
        readable.map(s => s.splitId -> (bound(s.splitId) - s.from)),
        b,
        id => readable.find(_.splitId == id).get.positionsPerRecord)
      untouched ++ shares.map { case (id, k) => id -> (untouched(id) + k) }
    }
    budget match {
      case Some(b) if records(everything) > b =>
        // count(t) grows with t; find a large t with count(t) <= b at or below the horizon.
        val cap = horizon.getOrElse(
          readable.flatMap(_.reach).maxOption.map(saturatingAdd(_, 1)).getOrElse(Long.MaxValue))
        val counts = mutable.TreeMap[Long, Long]()
        def count(t: Long): Long = counts.getOrElseUpdate(t, records(endsBefore(Some(t))))
        (index.answered ++ wholeFrom).filter(_ <= cap).foreach(count)
        val lowest = readable.flatMap(_.position).minOption
        val enough = b - (b * SearchTolerance).toLong // exact for small limits
        def cutAt(t: Long): Cut = {
          val n = counts(t)
          Cut(
            endsBefore(Some(t)),
            Some(t),
            lowest.filter(l => t > l && n > 0).map(l => (t - l).toDouble / n))
        }
        // the horizon itself, when known to fit
        if (horizon.exists(h => counts.get(h).exists(_ <= b)))
          return Cut(endsBefore(horizon), horizon, None)
        // a time already answered that reads within the tolerance of the limit
        counts.filter { case (_, n) => n >= enough && n <= b }.lastOption.foreach { case (t, _) =>
          return cutAt(t)
        }
        // the horizon fits unless a time at or below it is known to exceed the read limit
        if (!counts.exists(_._2 > b) && count(cap) <= b) {
          return if (horizon.isDefined) Cut(endsBefore(horizon), horizon, None)
          // no horizon, and records lie past every event time known: all that is known, else a share
          else if (count(cap) > 0) Cut(endsBefore(Some(cap)), Some(cap), None)
          else Cut(share(everything, b), None, None)
        }
        def over = counts.find(_._2 > b).get
        def under(below: Long) = counts.rangeUntil(below).filter(_._2 <= b).lastOption
        val base = math.min(over._1, lowest.getOrElse(over._1))
        val aim = (b + enough) / 2.0
        var steps = 0
        // the last batch's span per record guesses where the read limit falls now
        if (under(over._1).forall(_._2 < enough)) msPerRecordHint.filter(_ > 0).foreach { rate =>
          val guess = saturatingAdd(base, (aim * rate).toLong)
          if (guess > under(over._1).fold(base)(_._1) && guess < over._1) {
            count(guess); steps += 1
          }
        }
        var (hi, countHi) = over
        var (lo, countLo) = under(hi).getOrElse { count(base); steps += 1; base -> counts(base) }
        var step = 1000L
        while (countLo > b && steps < MaxSearchSteps / 2) {
          hi = lo
          countHi = countLo
          lo = if (base < Long.MinValue / 2 + step) Long.MinValue / 2 else base - step
          countLo = count(lo)
          step = if (step > Long.MaxValue / 8) step else step * 4
          steps += 1
        }
        // Stop once the batch is within the tolerance of the read limit. Records are spread
        // evenly in time more often than not, so the next guess interpolates between the bounds;
        // a guess that does not halve the interval is followed by a bisection, so the search is
        // never much slower than a binary one.
        var bisect = false
        while (hi - lo > 1 && countLo < enough && countLo <= b && steps < MaxSearchSteps) {
          val width = hi - lo
          val mid =
            if (bisect || countHi <= countLo) lo + width / 2
            else {
              val guess = lo + ((aim - countLo) / (countHi - countLo) * width.toDouble).toLong
              math.min(hi - 1, math.max(lo + 1, guess))
            }
          val c = count(mid)
          if (c <= b) { lo = mid; countLo = c }
          else { hi = mid; countHi = c }
          bisect = !bisect && hi - lo > width / 2
          steps += 1
        }
        val atLo = endsBefore(Some(lo))
        val n = count(lo)
        if (n > 0 && n <= b) cutAt(lo)
        else {
          // Even the earliest records exceed the budget (or the search could not get down to them):
          // read a budget's share of what lies below the bound, never nothing and never more.
          val (bound, t) = if (n > b) (atLo, lo) else (endsBefore(Some(hi)), hi)
          Cut(share(bound, b), Some(t), None)
        }
      case _ => Cut(endsBefore(horizon), horizon, None)
    }
  }

  /** All that can be read, except the splits held back, shared by the budget. */
  private def shareBudget(
      splits: Seq[SplitToPlan],
      held: Set[String],
      budget: Option[Long]): Map[String, Long] = {
    val candidates = splits.filter(s => !s.finished && !held.contains(s.splitId))
    val ppr = splits.map(s => s.splitId -> s.positionsPerRecord).toMap
    val shares = budget match {
      case Some(b) =>
        AdmissionPlanner.shareRecords(candidates.map(s => s.splitId -> s.readable), b, ppr)
      case None => candidates.map(s => s.splitId -> s.readable).toMap
    }
    splits.map(s => s.splitId -> (s.from + shares.getOrElse(s.splitId, 0L))).toMap
  }

  private def heldBack(splits: Seq[SplitToPlan], ends: Map[String, Long]): Set[String] =
    splits
      .filter(s => !s.finished && s.readable > 0 && ends(s.splitId) <= s.from)
      .map(_.splitId)
      .toSet

  /**
   * The smallest watermark among constraining splits once the batch is read: a split read to its
   * end reaches its `reach`, one cut at the horizon gets just below it, one that reads nothing
   * stays where it is (its last event time, or the time of its first record if it never read).
   *
   * With an inexact index a split read to its end stands at its block's largest event time (its
   * `reach`, known); one stopped inside its range was cut inside a block by the read limit, and
   * its rows read may end anywhere in the block's span: only where it stood is sure. Placing it
   * just below the horizon would let the other members run ahead of rows it has not read yet,
   * and a watermark over their union would drop them.
   */
  private def frontier(
      constraining: Seq[SplitToPlan],
      ends: Map[String, Long],
      horizon: Option[Long],
      watermarkOf: Long => Long,
      exactIndex: Boolean = true): Option[Long] =
    constraining
      .flatMap { s =>
        val end = ends(s.splitId)
        // reach unknown (no index): where the split starts is a lower bound of where it will be
        if (s.readable > 0 && end >= s.end) s.reach.orElse(s.position)
        else if (end > s.from && !exactIndex) s.position
        else if (end > s.from) (s.reach.toSeq ++ horizon.map(_ - 1)).minOption.orElse(s.position)
        else s.position
      }
      .map(watermarkOf)
      .minOption
}

package sluice.runtime

import scala.collection.mutable

import sluice.api.SplitProgress

/**
 * The driver's view of what readers have read in each split: folds reports in range order so that
 * records are counted once, however often a range is reported, and in whatever order the tasks
 * that read the parts of one divided range end.
 */
final class SplitProgressTracker {
  private val progress = mutable.LinkedHashMap[String, SplitProgress]()

  def get(splitId: String): Option[SplitProgress] = progress.get(splitId)
  def all: Seq[SplitProgress] = progress.values.toSeq

  /** Stops tracking a split (it left the checkpoint); later reports of it are ignored. */
  def forget(splitId: String): Unit = {
    progress.remove(splitId)
    ahead.remove(splitId)
    lastCounted.remove(splitId)
  }

  /** Starts tracking a split; keeps the more advanced of what is known and what is given. */
  def restore(p: SplitProgress): Unit = progress.get(p.splitId) match {
    case Some(known) if known.position > p.position =>
    case Some(known) if known.position == p.position =>
      progress(p.splitId) =
        known.copy(counters = SplitProgress.maxCounters(known.counters, p.counters))
    case _ => progress(p.splitId) = p
  }

  /**
   * Marks a split read up to `position` (the engine plans a batch only after the previous one
   * committed). Ranges reported ahead of what was counted count now, in order; a stretch no report
   * covers (its report was lost with a driver) is passed over, its records and event times unknown.
   */
  def advanceTo(splitId: String, position: Long): Unit = progress.get(splitId).foreach { _ =>
    ahead.get(splitId).foreach { parked =>
      parked.keys.filter(_ < position).toSeq.sorted.foreach { from =>
        val r = parked.remove(from).get
        progress.get(splitId).foreach { known =>
          if (from > known.position) progress(splitId) = known.copy(position = from)
        }
        foldOne(r)
      }
    }
    progress.get(splitId).foreach { known =>
      if (position > known.position) progress(splitId) = known.copy(position = position)
    }
    drain(splitId)
  }

  /**
   * Ranges that start beyond what is counted: another task's part of the same split (a range
   * divided among tasks), whose earlier part has not been reported yet. They count once the
   * ranges before them did, or when the next planning moves the split past the gap.
   */
  private val ahead = mutable.Map[String, mutable.Map[Long, SplitReport]]()

  /** The range counted last in each split, so that a second report of it replaces the first. */
  private val lastCounted = mutable.Map[String, SplitProgressTracker.Counted]()

  /**
   * Folds reports in; returns whether anything changed. A range is counted once: reported again
   * (a retried task, a re-executed batch, or a task stopped early by `limit` and then one that
   * read it all), the larger of the two reports counts.
   */
  def fold(reports: Seq[SplitReport]): Boolean = {
    val touched = reports.map(_.splitId).distinct
    val before = touched.map(progress.get)
    reports.sortBy(r => (r.splitId, r.from)).foreach { r =>
      if (progress.contains(r.splitId)) {
        foldOne(r)
        drain(r.splitId)
      }
    }
    touched.map(progress.get) != before
  }

  private def foldOne(r: SplitReport): Unit = progress.get(r.splitId).foreach { known =>
    val maxTs = (known.maxEventTime ++ r.maxEventTime).reduceOption(_ max _)
    progress(r.splitId) = lastCounted.get(r.splitId) match {
      case Some(c) if c.from == r.from =>
        val again = SplitProgressTracker.Counted(
          c.from,
          math.max(c.until, r.until),
          math.max(c.records, r.records),
          SplitProgress.maxCounters(c.counters, r.counters))
        lastCounted(r.splitId) = again
        SplitProgress(
          r.splitId,
          math.max(known.position, again.until),
          maxTs,
          known.records - c.records + again.records,
          SplitProgress.sumCounters(minus(known.counters, c.counters), again.counters))
      case _ if r.from == known.position && r.until > known.position =>
        lastCounted(r.splitId) =
          SplitProgressTracker.Counted(r.from, r.until, r.records, r.counters)
        SplitProgress(
          r.splitId,
          r.until,
          maxTs,
          known.records + r.records,
          SplitProgress.sumCounters(known.counters, r.counters))
      case _ if r.from > known.position =>
        // the part before it is not counted yet: keep it until it is (its event time counts now)
        val parked = ahead.getOrElseUpdate(r.splitId, mutable.Map.empty)
        parked(r.from) = parked.get(r.from).map(_.merge(r)).getOrElse(r)
        known.copy(maxEventTime = maxTs)
      case _ =>
        // A range counted before the last one (a re-executed batch): only the event time may add anything.
        known.copy(maxEventTime = maxTs)
    }
  }

  /** Counts the ranges kept ahead that now follow on from what is counted. */
  private def drain(splitId: String): Unit = ahead.get(splitId).foreach { parked =>
    var next = progress.get(splitId).flatMap(p => parked.remove(p.position))
    while (next.isDefined) {
      foldOne(next.get)
      next = progress.get(splitId).flatMap(p => parked.remove(p.position))
    }
    if (parked.isEmpty) ahead.remove(splitId)
  }

  private def minus(a: Map[String, Long], b: Map[String, Long]): Map[String, Long] =
    a.map { case (k, v) => k -> (v - b.getOrElse(k, 0L)) }
}

private object SplitProgressTracker {
  final case class Counted(from: Long, until: Long, records: Long, counters: Map[String, Long])
}

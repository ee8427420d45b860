package sluice.runtime

import scala.collection.mutable

import sluice.api.SplitProgress

/**
 * The driver's view of what readers have read in each split: folds reports in range order so that
 * records are counted once, however often a range is reported.
 */
final class SplitProgressTracker {
  private val progress = mutable.LinkedHashMap[String, SplitProgress]()

  def get(splitId: String): Option[SplitProgress] = progress.get(splitId)
  def all: Seq[SplitProgress] = progress.values.toSeq

  /** Starts tracking a split; keeps the more advanced of what is known and what is given. */
  def restore(p: SplitProgress): Unit = progress.get(p.splitId) match {
    case Some(known) if known.position > p.position =>
    case Some(known) if known.position == p.position =>
      progress(p.splitId) = known.copy(counters = SplitProgress.maxCounters(known.counters, p.counters))
    case _ => progress(p.splitId) = p
  }

  /**
   * Marks a split read up to `position` without a report for it (its report was lost with a
   * driver); records and event times of that stretch stay unknown.
   */
  def advanceTo(splitId: String, position: Long): Unit = progress.get(splitId).foreach { known =>
    if (position > known.position) progress(splitId) = known.copy(position = position)
  }

  /** The range counted last in each split, so that a second report of it replaces the first. */
  private val lastCounted = mutable.Map[String, SplitProgressTracker.Counted]()

  /**
   * Folds reports in; returns whether anything changed. A range is counted once: reported again
   * (a retried task, a re-executed batch, or a task stopped early by `limit` and then one that
   * read it all), the larger of the two reports counts.
   */
  def fold(reports: Seq[SplitReport]): Boolean = {
    var changed = false
    reports.sortBy(r => (r.splitId, r.from)).foreach { r =>
      progress.get(r.splitId).foreach { known =>
        val maxTs = (known.maxEventTime ++ r.maxEventTime).reduceOption(_ max _)
        val next = lastCounted.get(r.splitId) match {
          case Some(c) if c.from == r.from =>
            val again = SplitProgressTracker.Counted(c.from, math.max(c.until, r.until), math.max(c.records, r.records),
              SplitProgress.maxCounters(c.counters, r.counters))
            lastCounted(r.splitId) = again
            SplitProgress(r.splitId, math.max(known.position, again.until), maxTs,
              known.records - c.records + again.records,
              SplitProgress.sumCounters(minus(known.counters, c.counters), again.counters))
          case _ if r.from >= known.position && r.until > known.position =>
            // from > position: the ranges in between were read by a driver that died before it
            // could persist their reports; their records are missing from the count, but the
            // position and event time here are exact again.
            lastCounted(r.splitId) = SplitProgressTracker.Counted(r.from, r.until, r.records, r.counters)
            SplitProgress(r.splitId, r.until, maxTs, known.records + r.records,
              SplitProgress.sumCounters(known.counters, r.counters))
          case _ =>
            // A range counted before the last one (a re-executed batch): only the event time may add anything.
            known.copy(maxEventTime = maxTs)
        }
        if (next != known) {
          progress(r.splitId) = next
          changed = true
        }
      }
    }
    changed
  }

  private def minus(a: Map[String, Long], b: Map[String, Long]): Map[String, Long] =
    a.map { case (k, v) => k -> (v - b.getOrElse(k, 0L)) }
}

private object SplitProgressTracker {
  final case class Counted(from: Long, until: Long, records: Long, counters: Map[String, Long])
}

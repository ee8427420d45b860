package sluice.alignment

import scala.collection.mutable

/**
 * FLIP-180's idleness of splits (Flink's `WatermarksWithIdleness`), the one rule both paths
 * apply: the driver at every batch boundary (`SplitWatermarks`) and a running task of an open
 * batch (`LiveSplitGate`).
 *
 * A split is idle once `idleTimeoutMs` passed without a record read from it and with nothing
 * waiting to be read; its next record (or records waiting) makes it active again. A split paused
 * by alignment is never idle, and its clock does not run while it is paused: pausing or resuming
 * restarts it (FLINK-35886, FLINK-36751, FLINK-40093). Without a timeout nothing is idle.
 *
 * Callers pass the time in (the driver's clock, a task's clock): the rule reads none itself.
 */
final class SplitIdleness(idleTimeoutMs: Option[Long]) {
  private final class Split(
      var lastActiveMs: Long,
      var records: Long,
      var waiting: Boolean,
      var paused: Boolean)
  private val splits = mutable.LinkedHashMap[String, Split]()

  def tracks(splitId: String): Boolean = splits.contains(splitId)

  /**
   * Starts watching a split, unless it is watched already: `records` read from it so far, its
   * last record read at `lastActiveMs` (now, or by an earlier task: idleness outlives a task).
   */
  def track(splitId: String, lastActiveMs: Long, records: Long = 0L): Unit =
    if (!splits.contains(splitId))
      splits(splitId) = new Split(lastActiveMs, records, waiting = false, paused = false)

  /**
   * What a watched split looks like at `nowMs`: how many records were read from it so far, and
   * whether records are waiting to be read. A record read since, or records waiting, make it
   * active.
   */
  def observe(splitId: String, records: Long, waiting: Boolean, nowMs: Long): Unit =
    splits.get(splitId).foreach { s =>
      if (records != s.records || waiting) s.lastActiveMs = nowMs
      s.records = records
      s.waiting = waiting
    }

  /** A record of the split was read at `nowMs`: it is active again. */
  def recordRead(splitId: String, nowMs: Long): Unit =
    splits.get(splitId).foreach(_.lastActiveMs = nowMs)

  /** Pauses or resumes a watched split; either restarts its clock. Returns whether it changed. */
  def setPaused(splitId: String, paused: Boolean, nowMs: Long): Boolean =
    splits.get(splitId).exists { s =>
      val changed = s.paused != paused
      if (changed) {
        s.paused = paused
        s.lastActiveMs = nowMs
      }
      changed
    }

  def isPaused(splitId: String): Boolean = splits.get(splitId).exists(_.paused)

  /** The watched splits, in the order they were first tracked. */
  def splitIds: Iterator[String] = splits.keysIterator

  /** When the split last read a record: `nowMs` while it is paused, whose time paused does not count. */
  def lastActive(splitId: String, nowMs: Long): Option[Long] =
    splits.get(splitId).map(s => if (s.paused) nowMs else s.lastActiveMs)

  /** FLIP-180: idle at `nowMs`, as the rule above says. */
  def isIdle(splitId: String, nowMs: Long): Boolean = splits.get(splitId).exists { s =>
    !s.paused && !s.waiting && idleTimeoutMs.exists(nowMs - s.lastActiveMs >= _)
  }
}

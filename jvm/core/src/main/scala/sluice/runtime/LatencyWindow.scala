package sluice.runtime

import scala.collection.mutable

/**
 * The latency markers query progress reports: those of the ranges read since the batch the
 * engine last planned from. Reading them changes nothing, so progress may be asked for any
 * number of times and gets the same figures. The window moves when the engine plans the next
 * batch from `start` (it plans only after it reported the previous batch's progress): markers
 * of ranges that end at or before `start`, or of splits `start` no longer holds, were reported
 * and leave.
 */
final class LatencyWindow {
  private val held = mutable.ArrayBuffer[LatencyWindow.Marked]()

  /** Markers as readers reported them, with the range they were taken in. */
  def add(reports: Seq[SplitReport]): Unit = reports.foreach { r =>
    if (r.latencyMarkersMs.nonEmpty)
      held += LatencyWindow.Marked(r.splitId, r.until, r.latencyMarkersMs)
  }

  /** The markers in the window (milliseconds), read-only. */
  def markers: Seq[Long] = held.toSeq.flatMap(_.markersMs)

  /** The engine plans a batch from `start`: markers of what was read before it leave. */
  def moveTo(start: SourceCheckpoint): Unit =
    held.filterInPlace(m => start.byId.get(m.splitId).exists(e => m.until > e.position))
}

private object LatencyWindow {
  final case class Marked(splitId: String, until: Long, markersMs: Seq[Long])
}

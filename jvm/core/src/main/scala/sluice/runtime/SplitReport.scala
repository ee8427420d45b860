package sluice.runtime

import sluice.api.SplitProgress

/**
 * What one task read from one split range `[from, until)`: the largest event time it saw, how
 * many records it emitted, the reader's own counters for the range (e.g. records dropped as
 * malformed, records lost to retention), and the latency markers it took (milliseconds from a
 * record's arrival to its emission) when latency tracking is on.
 */
final case class SplitReport(
    splitId: String,
    from: Long,
    until: Long,
    maxEventTime: Option[Long],
    records: Long,
    counters: Map[String, Long] = Map.empty,
    latencyMarkersMs: Seq[Long] = Nil) {
  def merge(other: SplitReport): SplitReport = SplitReport(
    splitId,
    from,
    math.max(until, other.until),
    (maxEventTime ++ other.maxEventTime).reduceOption(_ max _),
    math.max(records, other.records),
    SplitProgress.maxCounters(counters, other.counters),
    // a retried task took its own markers; keep one attempt's, not both
    if (other.latencyMarkersMs.size > latencyMarkersMs.size) other.latencyMarkersMs
    else latencyMarkersMs)
}

package sluice.spark

import java.util.{HashMap => JHashMap}

import scala.jdk.CollectionConverters._

import org.apache.spark.util.AccumulatorV2

import sluice.api.SplitProgress

/**
 * What one task read from one split range `[from, until)`: the largest
 * event time it saw, how many records it emitted, the reader's own counters for the range
 * (e.g. records dropped as malformed, records lost to retention), and the latency markers it
 * took (milliseconds from a record's arrival to its emission) when latency tracking is on.
 */
final case class SplitReport(
    splitId: String,
    from: Long,
    until: Long,
    maxEventTime: Option[Long],
    records: Long,
    counters: Map[String, Long] = Map.empty,
    latencyMarkersMs: Seq[Long] = Nil) {
  def merge(other: SplitReport): SplitReport = SplitReport(splitId, from, math.max(until, other.until),
    (maxEventTime ++ other.maxEventTime).reduceOption(_ max _), math.max(records, other.records),
    SplitProgress.maxCounters(counters, other.counters),
    // a retried task took its own markers; keep one attempt's, not both
    if (other.latencyMarkersMs.size > latencyMarkersMs.size) other.latencyMarkersMs else latencyMarkersMs)
}

/**
 * The executor → driver progress channel. Reports are keyed by (split, range start), and merged
 * by maximum, so a retried task or a re-executed batch reports the same thing twice harmlessly.
 */
final class SplitProgressAccumulator extends AccumulatorV2[SplitReport, Seq[SplitReport]] {
  private val reports = new JHashMap[(String, Long), SplitReport]()

  override def isZero: Boolean = synchronized(reports.isEmpty)
  override def copy(): SplitProgressAccumulator = synchronized {
    val c = new SplitProgressAccumulator
    c.reports.putAll(reports)
    c
  }
  override def reset(): Unit = synchronized(reports.clear())
  override def add(report: SplitReport): Unit = synchronized {
    reports.merge((report.splitId, report.from), report, (a, b) => a.merge(b))
  }
  override def merge(other: AccumulatorV2[SplitReport, Seq[SplitReport]]): Unit =
    other.value.foreach(add)
  override def value: Seq[SplitReport] = synchronized(reports.values().asScala.toSeq)

  /** Returns what arrived so far and forgets it. */
  def drain(): Seq[SplitReport] = synchronized {
    val all = reports.values().asScala.toSeq
    reports.clear()
    all
  }
}

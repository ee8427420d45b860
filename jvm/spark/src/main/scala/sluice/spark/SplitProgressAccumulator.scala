package sluice.spark

import java.util.{HashMap => JHashMap}

import scala.jdk.CollectionConverters._

import org.apache.spark.util.AccumulatorV2

import sluice.runtime.SplitReport

/**
 * The executor → driver progress channel: tasks add a report per split range when they end.
 * Reports are keyed by (split, range start) and merged by maximum, so a retried task or a
 * re-executed batch reports the same thing twice harmlessly.
 *
 * On the driver the registered instance is a conduit, not a store: Spark merges each finished
 * task's reports into it, and it hands them straight to the source's runtime (`deliverTo`), so
 * progress has one home and is kept before the batch is committed.
 */
final class SplitProgressAccumulator extends AccumulatorV2[SplitReport, Seq[SplitReport]] {
  private val reports = new JHashMap[(String, Long), SplitReport]()
  @transient private var receiver: Seq[SplitReport] => Unit = _

  /** On the driver: where merged task reports go. */
  def deliverTo(receiver: Seq[SplitReport] => Unit): this.type = {
    this.receiver = receiver; this
  }

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
  override def merge(other: AccumulatorV2[SplitReport, Seq[SplitReport]]): Unit = {
    val r = receiver
    if (r != null) r(other.value) else other.value.foreach(add)
  }
  override def value: Seq[SplitReport] = synchronized(reports.values().asScala.toSeq)
}

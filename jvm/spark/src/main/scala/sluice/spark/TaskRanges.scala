package sluice.spark

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.connector.metric.CustomTaskMetric

import sluice.api.{ReaderContext, RecordsWithSplitIds, SourceSplit, SplitRange}
import sluice.runtime.SplitReport

/**
 * What one task has read of each of its ranges, whichever way it hands records to Spark (rows or
 * column batches): per split the position reached, the record count and the largest event time.
 * Its reports travel to the driver when the task ends (the progress accumulator), or at a long
 * batch's end (`SluicePartitionOffset`); its figures are the scan's SQL metrics.
 */
private[spark] final class TaskRanges(
    ranges: Seq[SplitRange[SourceSplit]],
    context: ReaderContext.Local,
    sourceType: String) {

  final class Stats(val range: SplitRange[SourceSplit]) {
    var maxEventTime: Long = RecordsWithSplitIds.NoTimestamp
    var records: Long = 0L

    /** Where the split stands after the current record; the next record must start inside the range. */
    var position: Long = range.from

    /** Where the current record starts, and whether rows of it are still to be handed out. */
    var recordStart: Long = range.from
    var midRecord = false
    val latencyMarkers: ArrayBuffer[Long] = ArrayBuffer[Long]()

    def sawEventTime(t: Long): Unit = if (t > maxEventTime) maxEventTime = t

    /** A record starting at `start` moves the split to `position`; it must start inside the range. */
    def moveTo(start: Long, position: Long): Unit = {
      if (start >= range.until) readPastRange(start)
      recordStart = start
      this.position = position
    }

    /** A record that starts past the range belongs to the next batch: emitting it would read it twice. */
    def readPastRange(start: Long): Nothing =
      throw new IllegalStateException(s"Sluice: the $sourceType reader returned a record of split " +
        s"${range.split.splitId} that starts at position $start, past the range [${range.from}, ${range.until}) " +
        "this task reads; it would be read again by the next batch. This is a bug in the connector's reader.")
  }

  val stats: Map[String, Stats] = ranges.map(r => r.split.splitId -> new Stats(r)).toMap

  /** Splits whose range the reader has not reported finished. */
  var unfinished: Set[String] = stats.keySet

  /**
   * Per range: how far this task got, what it saw. A range read to its end counts to `until`.
   * Latency markers travel once, in the report the task's end sends: positions are reported
   * again and again (continuous processing: every epoch), markers must not be.
   */
  def reports(latencyMarkers: Boolean): Seq[SplitReport] = stats.values.toSeq.flatMap { s =>
    val maxTs =
      if (s.maxEventTime == RecordsWithSplitIds.NoTimestamp) None else Some(s.maxEventTime)
    val id = s.range.split.splitId
    // an open range is never read to its end (a split given up, e.g. a deleted partition, stays where it got)
    // a record handed out in part is read again from its start: at least once, never a row lost
    val reached =
      if (!unfinished.contains(id) && !s.range.isOpen) s.range.until
      else if (s.midRecord) s.recordStart
      else s.position
    Option.when(reached > s.range.from)(
      SplitReport(
        id,
        s.range.from,
        reached,
        maxTs,
        s.records,
        context.countersOf(id),
        if (latencyMarkers) s.latencyMarkers.toSeq else Nil))
  }

  /**
   * The task's last reports, sent when its reader closes. A failed task's accumulators are
   * dropped by Spark, but a task may succeed without reading its ranges to the end (`limit`,
   * `take`, `isEmpty` in foreachBatch): it reports how far it got, and the task that reads the
   * range in full reports again (the larger report counts).
   */
  def sendReports(progress: Option[SplitProgressAccumulator]): Unit =
    progress.foreach(channel => reports(latencyMarkers = true).foreach(channel.add))

  /** The splits' figures in arrays, summed at each refresh of the metrics without an iterator. */
  private val statsInOrder: Array[Stats] = stats.values.toArray
  private val splitIds: Array[String] = statsInOrder.map(_.range.split.splitId)
  // byte positions (files) are the bytes read; other readers count their own (Kafka: key and value sizes)
  private val positionsAreBytes: Array[Boolean] =
    statsInOrder.map(!_.range.split.positionsCountRecords)

  private val figures = new ReaderMetrics.TaskFigures

  /** `context.counterUpdates` when the counters were last summed into the figures (-1: never). */
  private var countersSummedAt = -1L

  /**
   * The task's figures so far, as the scan's SQL metrics: the same objects at every call, set
   * anew (`ReaderMetrics.TaskFigures`). Records and bytes are summed at each call; the counters,
   * which rarely move, only when one was counted since the last call.
   */
  def metrics(): Array[CustomTaskMetric] = {
    var records = 0L
    var bytes = context.bytesRead
    var i = 0
    while (i < statsInOrder.length) {
      val s = statsInOrder(i)
      records += s.records
      if (positionsAreBytes(i)) bytes += s.position - s.range.from
      i += 1
    }
    val updates = context.counterUpdates
    if (updates != countersSummedAt) {
      countersSummedAt = updates
      figures.setCounted(splitIds.map(context.countersOf))
    }
    figures.answer(records, bytes)
  }
}

package sluice.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

import sluice.api.{ReaderContext, RecordsWithSplitIds, Source, SourceSplit, SplitRange}
import sluice.eventtime.EventTimeSettings
import sluice.runtime.{LatencyMarkers, SplitReport}

/** The split ranges one Spark task reads. */
final case class SluiceInputPartition(ranges: Seq[SplitRange[SourceSplit]]) extends InputPartition

/** What a task does with each record besides handing it to Spark. */
final case class RecordTiming(
    eventTime: EventTimeSettings,
    timestamps: TimestampSupport) {
  /** A task's context: its own counters, the layout the binding chose. */
  def readerContext: ReaderContext.Local = ReaderContext(timestamps.layout)
}

/**
 * Serialised to executors with the source's options, its record timing settings and the progress
 * accumulator. A batch read (`spark.read`) has no runtime waiting for progress, hence no accumulator.
 */
final class SluiceReaderFactory(
    source: Source[SourceSplit, Any],
    timing: RecordTiming,
    progress: Option[SplitProgressAccumulator]) extends PartitionReaderFactory {
  def this(source: Source[SourceSplit, Any], timing: RecordTiming, progress: SplitProgressAccumulator) =
    this(source, timing, Some(progress))

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val context = timing.readerContext
    val appender = Option.when(timing.eventTime.enabled)(
      new EventTimeAppender(timing.eventTime, source.schema(context.recordLayout)))
    val latency = timing.timestamps.latencyTrackingIntervalMs.map(new LatencyMarkers(_))
    new SluicePartitionReader(partition.asInstanceOf[SluiceInputPartition], source, context, appender,
      tracksEventTime = timing.timestamps.force, latency, progress)
  }
}

/**
 * Drives a source's `SplitReader` over the task's ranges and hands its rows to Spark, keeping per
 * split the largest event time and the record count, which it reports through the accumulator
 * when the task ends. Under a watermark strategy, event time comes from the strategy's column
 * (or the connector's record time) and is appended to each row as `event_time`. Compact sources
 * (`tracksEventTime` false) read no record time at all; with latency tracking on, markers are
 * taken here and travel in the report, never as rows.
 */
final class SluicePartitionReader(
    partition: SluiceInputPartition,
    source: Source[SourceSplit, Any],
    context: ReaderContext.Local,
    eventTime: Option[EventTimeAppender],
    tracksEventTime: Boolean,
    latency: Option[LatencyMarkers],
    progress: Option[SplitProgressAccumulator]) extends PartitionReader[InternalRow] {

  private final class Stats(val range: SplitRange[SourceSplit]) {
    var maxEventTime: Long = RecordsWithSplitIds.NoTimestamp
    var records: Long = 0L
    /** Where the split stands after the current record; the next record must start inside the range. */
    var position: Long = range.from
    val latencyMarkers = scala.collection.mutable.ArrayBuffer[Long]()
  }

  private val stats: Map[String, Stats] = partition.ranges.map(r => r.split.splitId -> new Stats(r)).toMap
  private var unfinished: Set[String] = stats.keySet
  private val reader = source.createReader(context)
  try reader.handleSplitsChanges(partition.ranges) catch {
    case e: Throwable =>
      reader.close() // Spark never sees this reader, so it would never close it
      throw e
  }

  private var fetched: RecordsWithSplitIds = _
  private var current: Stats = _
  private var row: InternalRow = _

  override def next(): Boolean = {
    while (true) {
      if (current != null) {
        if (fetched.nextRecord()) {
          val position = fetched.position
          if (position != current.position) { // a new record (several rows may share one)
            // where it starts: its own position where positions count records, else where the last one ended
            val start = if (current.range.split.positionsCountRecords) position - 1 else current.position
            if (start >= current.range.until) readPastRange(current, start)
            current.position = position
          }
          current.records += 1
          eventTime match {
            case Some(appender) =>
              val t = appender.eventTimeMs(fetched.row, fetched.eventTime)
              row = appender.append(fetched.row, t)
              if (t > current.maxEventTime) current.maxEventTime = t
            case None =>
              row = fetched.row
              if (tracksEventTime) {
                val t = fetched.eventTime
                if (t > current.maxEventTime) current.maxEventTime = t
              }
          }
          if (latency.isDefined) mark(current)
          return true
        }
        current = null
      }
      if (fetched != null) {
        val splitId = fetched.nextSplit()
        if (splitId != null) current = stats(splitId)
        else {
          unfinished --= fetched.finishedSplits
          fetched = null
        }
      } else if (unfinished.isEmpty) {
        return false
      } else {
        fetched = reader.fetch()
      }
    }
    false
  }

  override def get(): InternalRow = row

  override def currentMetricsValues(): Array[org.apache.spark.sql.connector.metric.CustomTaskMetric] =
    ReaderMetrics.current(context, stats.keys)

  /** A record that starts past the range belongs to the next batch: emitting it would read it twice. */
  private def readPastRange(stats: Stats, start: Long): Nothing = {
    val r = stats.range
    throw new IllegalStateException(s"Sluice: the ${source.sourceType} reader returned a record of split " +
      s"${r.split.splitId} that starts at position $start, past the range [${r.from}, ${r.until}) " +
      "this task reads; it would be read again by the next batch. This is a bug in the connector's reader.")
  }

  private def mark(stats: Stats): Unit = {
    val marker = latency.get.maybeMark(fetched.arrivalTime)
    if (marker >= 0 && stats.latencyMarkers.size < LatencyMarkers.MaxPerRange) stats.latencyMarkers += marker
  }

  override def close(): Unit = {
    try progress.foreach { channel =>
      stats.values.foreach { s =>
        val maxTs = if (s.maxEventTime == RecordsWithSplitIds.NoTimestamp) None else Some(s.maxEventTime)
        val id = s.range.split.splitId
        // A failed task's accumulators are dropped by Spark, but a task may succeed without reading
        // its ranges to the end (`limit`, `take`, `isEmpty` in foreachBatch): it reports how far it
        // got, and the task that reads the range in full reports again (the larger report counts).
        val reached = if (!unfinished.contains(id)) s.range.until else s.position
        if (reached > s.range.from) {
          channel.add(SplitReport(id, s.range.from, reached, maxTs, s.records, context.countersOf(id),
            s.latencyMarkers.toSeq))
        }
      }
    } finally reader.close()
  }
}

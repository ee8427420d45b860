package sluice.spark

import java.util.Optional

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.api._

/**
 * A Sluice source inside Spark's micro-batch engine. The driver side of FLIP-27: the enumerator
 * lives here, and every batch is planned from (1) splits the enumerator discovered, (2) the
 * progress executors reported for earlier batches, (3) read limits. All of it goes into the
 * offset before the batch runs, so a restarted query replays exactly the same batch.
 */
final class SluiceMicroBatchStream(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    metadataPath: String,
    spark: SparkSession)
  extends MicroBatchStream
  with SupportsAdmissionControl
  with SupportsTriggerAvailableNow
  with ReportsSourceMetrics
  with Logging {

  private val displayName = options.name.getOrElse(source.sourceType)
  private val accumulator = {
    val acc = new SplitProgressAccumulator
    spark.sparkContext.register(acc) // unnamed: named accumulators are rendered into the UI and event log per task
    acc
  }
  private val metadata = new SourceMetadata(metadataPath, spark.sessionState.newHadoopConf())
  private val tracker = new SplitProgressTracker
  private val splits = mutable.LinkedHashMap[String, SourceSplit]()
  private var enumerator: SplitEnumerator[SourceSplit, Any] = _
  /** Under Trigger.AvailableNow: how far each split may be read by this trigger (fixed at its start). */
  private var availableNowRequested = false
  private var availableNowBound: Option[Map[String, Long]] = None
  private var lastAvailable: Map[String, Long] = Map.empty
  /** Watermarks, idleness and alignment, under a watermark strategy. */
  private val eventTime: Option[SourceEventTime] = Option.when(options.eventTime.enabled) {
    // sources/<id> under the checkpoint: the parent of `sources` names the query
    val queryKey = new org.apache.hadoop.fs.Path(metadataPath).getParent.getParent.toString
    new SourceEventTime(options.eventTime, source, queryKey, memberId = metadataPath,
      allowUnalignedByDefault = spark.conf.getOption(sluice.eventtime.EventTimeSettings.AllowUnalignedSourceSplitsConf)
        .exists(_.trim.equalsIgnoreCase("true")))
  }

  // ---- offsets --------------------------------------------------------------------------------

  /**
   * Spark asks for the initial offset more than once (and again when it replays batch 0 after a
   * restart). Start positions are resolved once — "latest" or a timestamp must not move — and
   * kept in the source's checkpoint folder.
   */
  override def initialOffset(): SparkOffset = synchronized {
    if (initial == null) {
      initial = metadata.readInitialOffset() match {
        case Some(json) =>
          val offset = SluiceOffset.fromJson(json)
          absorb(offset)
          offset
        case None =>
          enumerator = source.createEnumerator()
          progressRestored = true
          enumerator.discoverSplits().foreach(track)
          val offset = offsetAt(splits.values.map(s => s.splitId -> s.startPosition).toMap)
          metadata.writeInitialOffset(offset.json())
          offset
      }
    }
    initial
  }
  private var initial: SluiceOffset = _

  override def deserializeOffset(json: String): SparkOffset = {
    val offset = SluiceOffset.fromJson(json)
    if (offset.sourceType != source.sourceType) {
      throw new IllegalStateException(
        s"Sluice: the checkpoint was written by a '${offset.sourceType}' source, but this query " +
          s"reads a '${source.sourceType}' source. Use a new checkpoint location for a different source.")
    }
    offset
  }

  override def getDefaultReadLimit: ReadLimit =
    options.maxRecordsPerTrigger.map(ReadLimit.maxRows).getOrElse(ReadLimit.allAvailable())

  override def latestOffset(): SparkOffset =
    throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used instead")

  override def latestOffset(startOffset: SparkOffset, limit: ReadLimit): SparkOffset = synchronized {
    val start = SluiceOffset.of(startOffset)
    absorb(start)
    foldReports()
    // Spark plans a batch only after the previous one committed, so every range up to `start`
    // was read in full, even if its report died with a previous driver: a finished split must
    // not look unfinished forever (a hybrid would never switch).
    start.splits.foreach(e => tracker.advanceTo(e.splitId, e.position))
    enumerator.progressUpdated(splitsWithProgress)
    enumerator.discoverSplits().foreach(track)

    val available = enumerator.availablePositions(splits.values.toSeq)
    lastAvailable = available
    if (availableNowRequested) {
      // Fixed when the trigger starts; a split first seen during the trigger (a hybrid's next
      // source, a new partition) is bounded by what it held when it was first seen.
      availableNowBound = Some(available ++ availableNowBound.getOrElse(Map.empty))
    }
    val from = splits.keys.map(id => id -> start.byId.get(id).map(_.position).getOrElse(splits(id).startPosition)).toMap
    def bound(id: String) = availableNowBound.flatMap(_.get(id)).getOrElse(Long.MaxValue)
    val readableEnd = splits.keys.map(id => id -> math.max(from(id), math.min(available.getOrElse(id, from(id)), bound(id)))).toMap
    val readable = splits.keys.toSeq.map(id => id -> (readableEnd(id) - from(id)))
    val budget = maxRows(limit)
    val ppr = positionsPerRecord
    val shares = budget match {
      case Some(b) => AdmissionPlanner.shareRecords(readable, b, ppr)
      case None => readable.toMap
    }
    val unaligned = from.map { case (id, pos) => id -> (pos + shares.getOrElse(id, 0L)) }
    val ends = eventTime match {
      case Some(et) =>
        // a split read to its stop, or to the end of this AvailableNow trigger, is finished for alignment
        def finished(id: String) = splits(id).stopPosition.exists(from(id) >= _) || from(id) >= bound(id)
        et.planBatch(splits.values.toSeq, from, readableEnd, finished, id => tracker.get(id).get, budget, ppr,
          enumerator, unaligned)
      case None => unaligned
    }
    val next = offsetAt(ends)
    if (next.splits.map(s => s.splitId -> s.position) == start.splits.map(s => s.splitId -> s.position)) start
    else next
  }

  override def reportLatestOffset(): SparkOffset = null

  private def maxRows(limit: ReadLimit): Option[Long] = limit match {
    case rows: ReadMaxRows => Some(rows.maxRows())
    case composite: CompositeReadLimit =>
      composite.getReadLimits.collect { case rows: ReadMaxRows => rows.maxRows() }.minOption
    case _ => None
  }

  /**
   * Positions per record for each split: 1 where positions count records; for byte positions,
   * the bytes per record read so far over all such splits (a default before anything was read).
   */
  private def positionsPerRecord: Map[String, Double] = {
    val bytewise = splits.values.filterNot(_.positionsCountRecords).toSeq
    val read = bytewise.flatMap(s => tracker.get(s.splitId).map(p => (p.position - s.startPosition, p.records)))
      .filter(_._2 > 0)
    val bytesPerRecord =
      if (read.isEmpty) AdmissionPlanner.DefaultBytesPerRecord
      else math.max(1.0, read.map(_._1).sum.toDouble / read.map(_._2).sum)
    splits.values.map(s => s.splitId -> (if (s.positionsCountRecords) 1.0 else bytesPerRecord)).toMap
  }

  private def splitsWithProgress: Seq[(SourceSplit, SplitProgress)] =
    splits.values.toSeq.map(s => s -> tracker.get(s.splitId).get)

  private def track(split: SourceSplit): Unit = if (!splits.contains(split.splitId)) {
    splits(split.splitId) = split
    tracker.restore(SplitProgress(split.splitId, split.startPosition, None, 0L))
  }

  private def offsetAt(positions: Map[String, Long]): SluiceOffset = {
    val serializer = source.splitSerializer
    SluiceOffset(
      source.sourceType,
      source.enumeratorStateSerializer.version,
      source.enumeratorStateSerializer.serialize(enumerator.snapshotState()),
      splits.values.toSeq.map { s =>
        val p = tracker.get(s.splitId).get
        SplitEntry(s.splitId, serializer.version, serializer.serialize(s), positions(s.splitId),
          p.position, p.maxEventTime, p.records)
      })
  }

  /**
   * After a restart, rebuilds the enumerator, the splits and their progress from the first offset
   * Spark hands back (a replayed batch's end, or the start of the next batch), plus the progress
   * persisted at the last commit. Later offsets only add splits not known yet.
   */
  private def absorb(offset: SluiceOffset): Unit = {
    if (enumerator == null) {
      val stateSerializer = source.enumeratorStateSerializer
      enumerator = source.restoreEnumerator(stateSerializer.deserialize(offset.enumeratorVersion, offset.enumeratorState))
    }
    val fresh = offset.splits.filterNot(e => splits.contains(e.splitId))
    fresh.foreach { e =>
      splits(e.splitId) = source.splitSerializer.deserialize(e.splitVersion, e.split)
      tracker.restore(SplitProgress(e.splitId, e.reportedPosition, e.maxEventTime, e.records))
    }
    if (!progressRestored) {
      progressRestored = true
      metadata.readProgress().filter(p => splits.contains(p.splitId)).foreach(tracker.restore)
    }
  }
  private var progressRestored = false

  // ---- planning and reading -------------------------------------------------------------------

  override def planInputPartitions(start: SparkOffset, end: SparkOffset): Array[InputPartition] = {
    val from = SluiceOffset.of(start).byId
    val to = SluiceOffset.of(end)
    synchronized(absorb(to))
    to.splits.flatMap { e =>
      val split = source.splitSerializer.deserialize(e.splitVersion, e.split)
      val begin = from.get(e.splitId).map(_.position).getOrElse(split.startPosition)
      val range = SplitRange(split, begin, e.position)
      if (range.isEmpty) None else Some(SluiceInputPartition(Seq(range)))
    }.toArray
  }

  override def createReaderFactory(): PartitionReaderFactory =
    new SluiceReaderFactory(source, RecordTiming(options.eventTime, options.timestamps), accumulator)

  override def commit(end: SparkOffset): Unit = synchronized {
    absorb(SluiceOffset.of(end))
    foldReports()
  }

  /**
   * Folds what executors reported and persists it. Called when Spark reports a finished batch's
   * progress (`metrics`, right after the batch) and when it commits a batch (`commit`, after the
   * next offset is written), so a driver that dies in between loses nothing it could have kept.
   */
  private def foldReports(): Unit = {
    val reports = accumulator.drain()
    latencyMarkers ++= reports.flatMap(_.latencyMarkersMs)
    if (tracker.fold(reports)) metadata.writeProgress(tracker.all)
  }
  /** Latency markers that arrived since the last progress report. */
  private val latencyMarkers = mutable.ArrayBuffer[Long]()

  /** Spark calls this before restoring offsets; the bound is taken at the first planning. */
  override def prepareForTriggerAvailableNow(): Unit = synchronized {
    availableNowRequested = true
  }

  override def stop(): Unit = synchronized {
    try {
      if (enumerator != null) {
        try foldReports() finally enumerator.close()
      }
    } finally eventTime.foreach(_.close())
  }

  // ---- metrics --------------------------------------------------------------------------------

  override def metrics(latestConsumedOffset: Optional[SparkOffset]): java.util.Map[String, String] = synchronized {
    // The batch just run has reported; show it (once its splits are known).
    if (enumerator != null) foldReports()
    val consumed = latestConsumedOffset.map[Option[SluiceOffset]](o => Some(SluiceOffset.of(o))).orElse(None)
    val progress = tracker.all
    if (enumerator != null && splits.keys.exists(id => !lastAvailable.contains(id))) {
      lastAvailable = enumerator.availablePositions(splits.values.toSeq) // after a restart
    }
    val backlog = consumed.toSeq.flatMap(_.splits).map { e =>
      math.max(0L, lastAvailable.getOrElse(e.splitId, e.position) - e.position)
    }
    val m = mutable.LinkedHashMap[String, String](
      "source" -> displayName,
      "sourceType" -> source.sourceType,
      "splits" -> splits.size.toString,
      "recordsRead" -> progress.map(_.records).sum.toString,
      "backlogRecords" -> backlog.sum.toString)
    progress.flatMap(_.maxEventTime).maxOption.foreach(ts => m("maxEventTimeMs") = ts.toString)
    if (enumerator != null) {
      enumerator.progressUpdated(splitsWithProgress)
      m ++= enumerator.metrics
    }
    eventTime.foreach(et => m ++= et.metrics(splits.values.toSeq, tracker.get))
    if (options.timestamps.latencyTrackingIntervalMs.isDefined) {
      m ++= LatencyMarkers.metrics(latencyMarkers.toSeq)
      latencyMarkers.clear()
    }
    if (!options.timestamps.force) m("recordLayout") = "compact"
    progress.map(_.counters).foldLeft(Map.empty[String, Long])(SplitProgress.sumCounters)
      .toSeq.sortBy(_._1).foreach { case (k, v) => m(k) = v.toString }
    m.asJava
  }

  override def toString: String = s"SluiceMicroBatchStream[$displayName]"
}

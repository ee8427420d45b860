package sluice.spark

import java.util.Optional

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.alignment.LiveSplitState
import sluice.api._
import sluice.errors.SluiceError
import sluice.eventtime.EventTimeSettings
import sluice.runtime.{BatchLimit, OpenBatch, PlanRequest, RuntimeSettings, SourceCheckpoint, SourceRuntime, TaskPacking}

/**
 * What every Sluice stream shares, whatever engine runs it: the source's `SourceRuntime`, its
 * checkpoint folder, offsets, the executor -> driver progress channel and query-progress metrics;
 * and the open batches (the runtime's `OpenBatch`) of real-time mode and continuous processing, whose readers run
 * until the engine ends the batch (or the epoch) and report where they got (`mergeOffsets`).
 * `SluiceMicroBatchStream` and `SluiceContinuousStream` are the engines' adapters over it.
 */
abstract class SluiceStream(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    metadataPath: String,
    spark: SparkSession)
    extends SparkDataStream
    with ReportsSourceMetrics
    with Logging {

  /**
   * The hybrid factories this query reads, pinned while it runs: a switch always finds its
   * factory, even if the definition gave it up meanwhile. The provider pins them before it builds
   * the stream (`HybridFactories.pinnedWhile`: nothing is joined when a factory is gone already,
   * and a stream that fails to build gives them back); `stop()` gives them back once.
   */
  private val factoryIds = HybridFactories.idsOf(source)
  private val factoriesPinned = new java.util.concurrent.atomic.AtomicBoolean(true)

  protected val displayName: String = options.name.getOrElse(source.sourceType)
  private val metadata = new SourceMetadata(metadataPath, spark.sessionState.newHadoopConf())
  private val member = OffsetLogLookup.memberName(metadataPath)

  /** sources/<n> under the checkpoint: the parent of `sources` names the query. */
  private val queryKey = new Path(metadataPath).getParent.getParent.toString

  protected val runtime = new SourceRuntime(
    source,
    RuntimeSettings(
      displayName,
      options.eventTime,
      options.layout,
      latencyTracking = options.latencyTrackingIntervalMs.isDefined,
      queryKey = queryKey,
      memberId = metadataPath,
      allowUnalignedSourceSplitsByDefault = spark.conf
        .getOption(EventTimeSettings.AllowUnalignedSourceSplitsConf)
        .exists(_.trim.equalsIgnoreCase("true"))),
    store = metadata,
    defaultLimit = BatchLimit(options.maxRecordsPerTrigger))

  private val accumulator = {
    val acc = new SplitProgressAccumulator().deliverTo { reports =>
      runtime.fold(reports)
      // a test's fault injection (off in production: one read of a constant)
      if (SwitchHalt.armed) SwitchHalt.afterReports(reports)
    }
    spark.sparkContext.register(
      acc
    ) // unnamed: named accumulators are rendered into the UI and event log per task
    acc
  }

  /**
   * The offset Spark logs for `checkpoint`; a large checkpoint is kept in the source's folder
   * first. Under the lock a commit deletes kept checkpoints with (an engine may commit from
   * another thread, as async progress tracking does): a checkpoint just kept is listed as planned
   * before any commit can look for what is no longer named.
   */
  protected def offset(checkpoint: SourceCheckpoint): SluiceOffset = synchronized {
    val o = SluiceOffset.keep(checkpoint, Some(member), metadata)
    plannedSince :+= o
    o
  }

  /** The checkpoint of an offset Spark hands over (restored ones come as Spark's own type). */
  protected def checkpointOf(o: SparkOffset): SourceCheckpoint = read(o.json(), o).checkpoint

  /**
   * Spark turns offsets into JSON and back at every trigger, idle ones included: an offset this
   * stream handed out, or the last one read, is not read again from its kept file.
   */
  private def read(json: String, known: SparkOffset = null): SluiceOffset = known match {
    case o: SluiceOffset => o
    case _ =>
      synchronized {
        plannedSince.find(_.json() == json).orElse(lastRead.filter(_.json() == json)).getOrElse {
          val o = SluiceOffset.fromJson(json, Some(metadata))
          lastRead = Some(o)
          o
        }
      }
  }
  private var lastRead: Option[SluiceOffset] = None

  /**
   * The offsets this stream handed out, in order, from the one committed last on. Not a home of
   * positions: Spark holds these offsets and hands them back; this keeps their parsed form (so a
   * kept checkpoint is not read again) and says which kept checkpoints a commit may delete. The
   * runtime never plans from here.
   */
  private var plannedSince = Vector.empty[SluiceOffset]

  // ---- offsets --------------------------------------------------------------------------------

  /**
   * Spark asks for the initial offset more than once (and again when it replays batch 0 after a
   * restart). Start positions are resolved once — "latest" or a timestamp must not move — and
   * kept in the source's checkpoint folder.
   */
  override def initialOffset(): SparkOffset =
    try initialOnce()
    catch SparkErrors.surface

  private def initialOnce(): SparkOffset = synchronized {
    if (initial == null) {
      initial = metadata.readInitialOffset() match {
        case Some(json) =>
          // named as this stream names its offsets (an initial offset kept before they named their member)
          val restored = SluiceOffset.fromJson(json, Some(metadata)).copy(member = Some(member))
          runtime.restore(restored.checkpoint)
          restored
        case None =>
          val fresh = offset(runtime.start())
          metadata.writeInitialOffset(fresh.json())
          fresh
      }
    }
    initial
  }
  private var initial: SluiceOffset = _

  /**
   * Tells the runtime where Spark will start this source's next batch (the latest logged batch's
   * offset, or the initial one), when its alignment group may plan a round before Spark asks this
   * source: after a restart Spark hands a source its start only when it asks it. Read here, when
   * the stream is built, so that nothing below the binding asks back up for it.
   */
  protected def handOverResumePoint(): Unit = if (options.eventTime.alignment.isDefined) {
    // Only reads files: nothing is started or resolved here (Spark has not taken this stream into
    // its query yet, and would never stop it if building failed), and what cannot be read is left
    // for Spark's own reading of the checkpoint to report, as it would without a group.
    def cannot(why: String): Unit =
      logInfo(s"$this cannot take part in its alignment group's round yet: $why")
    try
      OffsetLogLookup.latest(spark, metadataPath, metadata) match {
        case Right(Some(logged)) => runtime.resumesAt(logged.checkpoint)
        case Right(None) =>
          metadata.readInitialOffset() match {
            case Some(json) =>
              runtime.resumesAt(SluiceOffset.fromJson(json, Some(metadata)).checkpoint)
            case None => runtime.resumesFresh() // "latest" is resolved when a round needs it
          }
        case Left(why) => cannot(why)
      }
    catch { case scala.util.control.NonFatal(e) => cannot(e.toString) }
  }

  override def deserializeOffset(json: String): SparkOffset =
    try {
      val offset = read(json)
      if (offset.sourceType != source.sourceType) {
        throw SluiceError.invalidCheckpoint(
          s"Sluice: the checkpoint was written by a '${offset.sourceType}' source, but this query " +
            s"reads a '${source.sourceType}' source. Use a new checkpoint location for a different source.")
      }
      offset
    } catch SparkErrors.surface

  /**
   * Progress reached the runtime as tasks ended; a commit makes sure the splits are known, and
   * drops the kept checkpoints no offset Spark may hand back names any more.
   */
  override def commit(end: SparkOffset): Unit =
    try {
      val committed = read(end.json(), end)
      runtime.restore(committed.checkpoint)
      retainFrom(committed)
    } catch SparkErrors.surface

  /**
   * After `committed`, a restart starts at it, or replays a batch planned after it: the
   * checkpoints those offsets name, the initial offset's (batch 0 may be replayed), the previous
   * commit's and the one planned before `committed` (margins) are kept, all others deleted. A
   * commit of an offset an earlier run handed out (after a restart) deletes nothing.
   */
  private def retainFrom(committed: SluiceOffset): Unit = synchronized {
    val at = plannedSince.lastIndexWhere(_.json() == committed.json())
    if (at >= 0) {
      val previous = plannedSince.lift(at - 1).flatMap(_.storedAs)
      plannedSince = plannedSince.drop(at)
      // after a restart Spark does not ask for the initial offset: its file names it
      val initialName = Option(initial)
        .map(_.storedAs)
        .getOrElse(metadata.readInitialOffset().flatMap(SluiceOffset.storedNameOf))
      // housekeeping: a failure to delete is tried again at the next commit, never fails the query
      try
        metadata.retainOnly(
          plannedSince.flatMap(_.storedAs).toSet ++ previous ++ initialName ++ lastCommitted)
      catch {
        case scala.util.control.NonFatal(e) =>
          logWarning(s"$this could not delete checkpoints no offset names: $e")
      }
    }
    lastCommitted = committed.storedAs
  }
  private var lastCommitted: Option[String] = None

  override def stop(): Unit =
    try runtime.close()
    finally
      try liveAlignment.foreach(m => LiveAlignmentChannel.coordinator.forget(m.queryKey, m.group))
      finally // once: a second stop must not take another query's pin
        if (factoriesPinned.getAndSet(false)) sluice.hybrid.SourceFactories.unpin(factoryIds)

  override def metrics(
      latestConsumedOffset: Optional[SparkOffset]): java.util.Map[String, String] = {
    val consumed =
      latestConsumedOffset.map[Option[SourceCheckpoint]](o => Some(checkpointOf(o))).orElse(None)
    val kept = metadata.bytesWritten
    (runtime.metrics(consumed) ++ liveAlignment
      .map(LiveAlignmentChannel.metrics)
      .getOrElse(Map.empty) ++
      Option.when(kept > 0)(CheckpointBodies.BytesWrittenMetric -> kept.toString)).asJava
  }

  protected def timing: RecordTiming =
    RecordTiming(options.eventTime, options.layout, options.latencyTrackingIntervalMs)

  protected def readerFactory: SluiceReaderFactory =
    new SluiceReaderFactory(source, timing, accumulator, liveAlignment)

  // ---- open batches (real-time mode, continuous processing) -----------------------------------

  /** Set by the engine before it plans: readers run until the engine ends the batch. */
  @volatile protected var readsOpenBatches = false

  /** The open batch running now: where it started, as the runtime opened it. */
  @volatile protected var openBatch: Option[OpenBatch] = None

  /** Prepares the driver side of live alignment before readers start. */
  protected def startOpenBatches(): Unit = {
    readsOpenBatches = true
    if (options.eventTime.alignment.isDefined) LiveAlignmentChannel.serve()
  }

  /** Who this source is in its live alignment group, for the readers' reports. */
  private def liveAlignment: Option[LiveAlignmentMember] = Option
    .when(readsOpenBatches)(())
    .flatMap(_ =>
      options.eventTime.alignment.map(a =>
        LiveAlignmentMember(queryKey, a.group, metadataPath, a.maxDriftMs, a.updateIntervalMs)))

  /**
   * An open batch reads every split from where `start` has it, open-ended: the tasks run until
   * the engine ends the batch, so all of them must run at once. Splits share tasks so that a
   * source needs no more task slots than the cluster has. `mode` says which engine runs it.
   */
  protected def planOpenBatch(start: SparkOffset, mode: TaskMode): Array[InputPartition] = {
    val batch = runtime.plan(PlanRequest.OpenRange(checkpointOf(start)))
    openBatch = Some(batch)
    val lastActive = liveAlignment.map(LiveAlignmentChannel.lastActive).getOrElse(Map.empty)
    val initialLimit = liveAlignment.flatMap(
      LiveAlignmentChannel.seed(
        _,
        batch.ranges.map { r =>
          val id = r.split.splitId
          LiveSplitState.at(id, batch.eventTimes.get(id), options.eventTime, finished = false)
        }))
    // Nothing to read (all read, nothing there yet) is still one task that waits for the batch
    // to end: an open batch without tasks would end at once, and the engine would start the next
    // one right away, again and again.
    val tasks =
      TaskPacking.pack[SourceSplit](batch.ranges, spark.sparkContext.defaultParallelism, _ => 1.0)
    (if (tasks.isEmpty) Seq(Seq.empty[SplitRange[SourceSplit]]) else tasks).map { ranges =>
      val ids = ranges.map(_.split.splitId).toSet
      SluiceInputPartition(
        ranges,
        mode = mode,
        eventTimes = batch.eventTimes.filter { case (id, _) => ids.contains(id) },
        initialLimit = initialLimit,
        pauseSplits = batch.pauseSplits,
        limitComplete = !batch.sharedGroup,
        lastActiveMs = lastActive.filter { case (id, _) => ids.contains(id) }): InputPartition
    }.toArray
  }

  /** Where the open batch's readers got is where the next batch (or epoch) starts. */
  protected def endOfOpenBatch(offsets: Array[PartitionOffset]): SparkOffset = {
    val batch = openBatch.getOrElse(
      throw new IllegalStateException(s"$this: mergeOffsets before planInputPartitions"))
    val reports = offsets.toSeq.flatMap {
      case o: SluicePartitionOffset => o.reports
      case other =>
        throw new IllegalStateException(s"$this: not a Sluice partition offset: $other")
    }
    offset(runtime.endOfOpenBatch(batch.start, reports))
  }
}

package sluice.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sluice.ExecutorLocations
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.api._
import sluice.runtime.{BatchLimit, PlanRequest}

/**
 * A Sluice source inside Spark's micro-batch engine: a thin adapter over the source's
 * `SourceRuntime` (see `SluiceStream`). Spark's offsets are the runtime's checkpoints, written to
 * the offset log before each batch runs, so a restarted query replays exactly the same batch; the
 * readers' reports reach the runtime through the progress accumulator as tasks end.
 *
 * Real-time mode (`Trigger.RealTime`) runs the same engine with open batches whose end is not
 * known in advance: the runtime opens a batch (every split from where it stands, open-ended),
 * tasks read as records arrive until Spark ends the batch, and `mergeOffsets` turns where the
 * readers got into the next offset. Alignment then works live, through the driver's
 * `LiveAlignmentChannel` (see `SluicePartitionReader`).
 */
final class SluiceMicroBatchStream(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    metadataPath: String,
    spark: SparkSession)
    extends SluiceStream(source, options, metadataPath, spark)
    with MicroBatchStream
    with SupportsAdmissionControl
    with SupportsTriggerAvailableNow
    with SupportsRealTimeMode {

  // a micro-batch group plans its members' batches in rounds (see `AlignmentGroup`)
  handOverResumePoint()

  override def getDefaultReadLimit: ReadLimit = {
    val limits =
      options.minRecordsPerTrigger.map(ReadLimit.minRows(_, options.maxTriggerDelayMs)).toSeq ++
        options.maxRecordsPerTrigger.map(ReadLimit.maxRows)
    limits match {
      case Seq() => ReadLimit.allAvailable()
      case Seq(one) => one
      case both => ReadLimit.compositeLimit(both.toArray)
    }
  }

  /** When the last batch with data was planned, for `minRecordsPerTrigger` (0: none yet, so the first runs). */
  private var lastTriggerMs = 0L
  private var availableNow = false

  override def latestOffset(): SparkOffset =
    throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used instead")

  /**
   * Micro-batch: plans the next batch. Real-time mode asks too, once per open batch, but takes the
   * batch's end from `mergeOffsets`: it gets what exists now, and nothing is planned.
   */
  override def latestOffset(startOffset: SparkOffset, limit: ReadLimit): SparkOffset =
    try planNext(startOffset, limit)
    catch SparkErrors.surface

  private def planNext(startOffset: SparkOffset, limit: ReadLimit): SparkOffset = {
    val start = checkpointOf(startOffset)
    // asked at every trigger, data or not, as Spark's Kafka source asks: the delay counts from the
    // last trigger. Before planning: a batch planned and then not run would have moved the runtime
    // (and an alignment group's round) on to an end that was never read.
    if (!readsOpenBatches && delayed(start, limit)) return startOffset
    val end =
      if (readsOpenBatches) runtime.plan(PlanRequest.Availability(start)).end
      else runtime.plan(PlanRequest.BoundedRange(start, BatchLimit(maxRows(limit))))
    if (end eq start) startOffset else offset(end)
  }

  /**
   * Spark's `minOffsetsPerTrigger`: with fewer records available than the minimum, this trigger
   * runs no batch, unless `maxTriggerDelay` has passed since the last one (Spark's Kafka source
   * decides the same way). An AvailableNow trigger reads everything it found instead: a skipped
   * batch would end it with records unread.
   */
  private def delayed(start: sluice.runtime.SourceCheckpoint, limit: ReadLimit): Boolean = {
    val min = limit match {
      case m: ReadMinRows => Some(m)
      case composite: CompositeReadLimit =>
        composite.getReadLimits.collectFirst { case m: ReadMinRows => m }
      case _ => None
    }
    min.filterNot(_ => availableNow || readsOpenBatches).exists { m =>
      val now = System.currentTimeMillis()
      // what exists now, asked without planning anything
      val wait =
        now - lastTriggerMs < m.maxTriggerDelayMs && runtime
          .plan(PlanRequest.Availability(start))
          .records < m.minRows
      if (!wait) lastTriggerMs = now
      wait
    }
  }

  override def reportLatestOffset(): SparkOffset = null

  private def maxRows(limit: ReadLimit): Option[Long] = limit match {
    case rows: ReadMaxRows => Some(rows.maxRows())
    case composite: CompositeReadLimit =>
      composite.getReadLimits.collect { case rows: ReadMaxRows => rows.maxRows() }.minOption
    case _ => None
  }

  // ---- planning and reading -------------------------------------------------------------------

  /**
   * No more tasks than the cluster runs at once: splits with little to read share one. A task
   * whose splits keep state on executors between ranges prefers their executors, and is packed
   * with ranges that prefer the same (`TaskLocality`).
   */
  override def planInputPartitions(start: SparkOffset, end: SparkOffset): Array[InputPartition] =
    try tasksOf(start, end)
    catch SparkErrors.surface

  private def tasksOf(start: SparkOffset, end: SparkOffset): Array[InputPartition] = {
    // asked only when a split has a key: it is a call to the block manager's master
    lazy val executors = ExecutorLocations.sorted()
    def keyed(ranges: Seq[SplitRange[SourceSplit]]) = ranges.exists(_.split.localityKey.isDefined)
    val tasks = runtime.tasks(
      Some(checkpointOf(start)),
      checkpointOf(end),
      spark.sparkContext.defaultParallelism,
      options.minPartitions,
      s => if (s.localityKey.isEmpty) None else TaskLocality.placeOf(s, executors))
    // a test's fault injection (off in production: one read of a constant)
    if (SwitchHalt.armed)
      SwitchHalt.atPlanning(
        source,
        checkpointOf(start),
        checkpointOf(end),
        tasks.flatten,
        Option(spark.sparkContext.getLocalProperty("streaming.sql.batchId")))
    val columnar = SluiceReaderFactory.readsColumnar(source, timing, tasks.flatten)
    tasks.map { ranges =>
      SluiceInputPartition(
        ranges,
        locations = if (keyed(ranges)) TaskLocality.preferred(ranges, executors) else Nil,
        columnar = columnar): InputPartition
    }.toArray
  }

  override def createReaderFactory(): PartitionReaderFactory = readerFactory

  /** Spark calls this before restoring offsets; the bound is taken at the first planning. */
  override def prepareForTriggerAvailableNow(): Unit = {
    availableNow = true
    runtime.prepareForAvailableNow()
  }

  // ---- real-time mode -------------------------------------------------------------------------

  override def prepareForRealTimeMode(): Unit = startOpenBatches()

  override def planInputPartitions(start: SparkOffset): Array[InputPartition] =
    try planOpenBatch(start, TaskMode.RealTime)
    catch SparkErrors.surface

  override def mergeOffsets(offsets: Array[PartitionOffset]): SparkOffset =
    try endOfOpenBatch(offsets)
    catch SparkErrors.surface

  override def toString: String = s"SluiceMicroBatchStream[$displayName]"
}

package sluice.spark

import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory}

import sluice.api.{Source, SourceSplit, SplitRange}
import sluice.runtime.{PlanRequest, SourceRuntime}

/**
 * `spark.read.format("sluice")`: a bounded source read whole in one Spark job, FLIP-27's batch
 * mode. The runtime in core plans every split from its start to its stop; each non-empty range
 * is one task, read by the same readers as a micro-batch's, so the rows are the stream's rows.
 * No progress travels back: there is no later batch to plan and no query progress to report.
 */
final class SluiceBatch(source: Source[SourceSplit, Any], options: StreamOptions) extends Batch {

  /** Planned once: Spark may ask again, and a stop resolved as "latest" must not move between asks. */
  private lazy val ranges: Seq[SplitRange[SourceSplit]] =
    SourceRuntime.forBoundedRead(source).plan(PlanRequest.BoundedRead())

  // latency markers are reported in streaming query progress only; a batch read takes none
  private val timing =
    RecordTiming(options.eventTime, options.layout, latencyTrackingIntervalMs = None)

  override def planInputPartitions(): Array[InputPartition] =
    try {
      val columnar = SluiceReaderFactory.readsColumnar(source, timing, ranges)
      ranges
        .map(range => SluiceInputPartition(Seq(range), columnar = columnar): InputPartition)
        .toArray
    } catch SparkErrors.surface

  override def createReaderFactory(): PartitionReaderFactory =
    new SluiceReaderFactory(source, timing, progress = None)
}

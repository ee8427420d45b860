package sluice.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming._
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

import sluice.api._

/**
 * A Sluice source inside Spark's continuous engine (`Trigger.Continuous`): one open batch per
 * set of splits, whose tasks read until the query stops or the set changes. Every epoch Spark
 * collects where each task's splits got and `mergeOffsets` turns that into the epoch's offset.
 *
 * When the runtime finds splits the running tasks do not hold — a new Kafka partition, a new
 * file, or a hybrid's next source once the active one is read — `needsReconfiguration` asks
 * Spark to restart the tasks, which plans a new batch from the last epoch's offset.
 */
final class SluiceContinuousStream(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    metadataPath: String,
    spark: SparkSession)
    extends SluiceStream(source, options, metadataPath, spark)
    with ContinuousStream {

  startOpenBatches()

  override def planInputPartitions(start: SparkOffset): Array[InputPartition] =
    try planOpenBatch(start, TaskMode.Continuous)
    catch SparkErrors.surface

  override def createContinuousReaderFactory(): ContinuousPartitionReaderFactory = readerFactory

  override def mergeOffsets(offsets: Array[PartitionOffset]): SparkOffset =
    try endOfOpenBatch(offsets)
    catch SparkErrors.surface

  override def needsReconfiguration(): Boolean =
    openBatch.exists(_ => runtime.discoverNewSplits())

  override def toString: String = s"SluiceContinuousStream[$displayName]"
}

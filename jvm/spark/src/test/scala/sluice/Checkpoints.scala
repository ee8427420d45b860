package sluice

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration

import sluice.spark.{SluiceOffset, SourceMetadata}

/**
 * What a stopped query left behind, read from disk rather than guessed from timing: the offset
 * log (written before each batch runs) and a file sink's own log of the batches it committed.
 */
object Checkpoints {

  /** The batch ids of a log folder (`offsets`, `commits`, a file sink's `_spark_metadata`). */
  def batchIds(dir: File): Seq[Long] =
    Option(dir.listFiles()).toSeq.flatten
      .map(_.getName.stripSuffix(".compact"))
      .filter(n => n.nonEmpty && n.forall(_.isDigit))
      .map(_.toLong)
      .sorted

  /** The last batch a file sink (parquet, json, ...) at `path` committed: what reading `path` sees. */
  def lastSinkBatch(path: String): Option[Long] = batchIds(
    new File(path, "_spark_metadata")).lastOption

  /** The batches of the query's offset log. */
  def offsetBatches(checkpoint: String): Seq[Long] = batchIds(new File(checkpoint, "offsets"))

  /**
   * The `source`-th Sluice source's offset at the end of batch `batchId`, as the offset log holds
   * it (`v1`, the batch metadata, then one line per source).
   */
  def offset(checkpoint: String, batchId: Long, source: Int = 0): SluiceOffset = {
    val lines = Files
      .readAllLines(new File(new File(checkpoint, "offsets"), batchId.toString).toPath, UTF_8)
      .asScala
    // a large checkpoint is kept in the source's folder, named by the offset
    SluiceOffset.fromJson(
      lines(2 + source),
      Some(new SourceMetadata(s"$checkpoint/sources/$source", new Configuration())))
  }

  /** Each split's position at the end of batch `batchId`. */
  def positions(checkpoint: String, batchId: Long, source: Int = 0): Map[String, Long] =
    offset(checkpoint, batchId, source).splits.map(e => e.splitId -> e.position).toMap
}

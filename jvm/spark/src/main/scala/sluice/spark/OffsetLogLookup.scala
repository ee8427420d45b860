package sluice.spark

import scala.util.Try

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.checkpointing.{OffsetMap, OffsetSeqBase, OffsetSeqLog}

/**
 * Finds a source's offset in the latest batch of its query's offset log, before Spark hands it
 * over: an alignment group plans all its members in one round when the first of them is asked,
 * and after a restart the others have not been told where they start yet.
 */
object OffsetLogLookup {

  /** The member name a source's offsets carry: its folder in the query checkpoint. */
  def memberName(metadataPath: String): String = s"sources/${new Path(metadataPath).getName}"

  /**
   * The source's offset in the latest logged batch; `Right(None)` when the log has no batch yet,
   * `Left` when the log has batches but none of its offsets can be told to be this source's.
   */
  def latest(
      spark: SparkSession,
      metadataPath: String,
      bodies: CheckpointBodies): Either[String, Option[SluiceOffset]] = {
    val checkpointRoot = new Path(metadataPath).getParent.getParent
    val log = new OffsetSeqLog(spark, new Path(checkpointRoot, "offsets").toString)
    log.getLatest() match {
      case None => Right(None)
      case Some((batchId, seq)) =>
        find(
          seq,
          memberName(metadataPath),
          Try(new Path(metadataPath).getName.toInt).toOption,
          bodies)
          .map(o => Right(Some(o)))
          .getOrElse(Left(
            s"batch $batchId of the offset log has no offset of ${memberName(metadataPath)}"))
    }
  }

  /**
   * The offset that names `member`. Offsets written before they named their member are matched
   * by position: Spark numbers a query's sources (`sources/<n>`) in the order it logs their
   * offsets (format 1; format 2 keys them by that number).
   */
  private def find(
      seq: OffsetSeqBase,
      member: String,
      index: Option[Int],
      bodies: CheckpointBodies): Option[SluiceOffset] = {
    val (all, byIndex) = seq match {
      case m: OffsetMap =>
        (
          m.offsetsMap.values.toSeq.flatten,
          index.flatMap(i => m.offsetsMap.get(i.toString)).flatten)
      case s => (s.offsets.flatten, index.flatMap(i => s.offsets.lift(i)).flatten)
    }
    // only this member's checkpoint is read (the others' may be kept in their own folders); one
    // that cannot be read fails, naming why, rather than look like an old offset log
    all
      .map(_.json())
      .find(json => SluiceOffset.memberOf(json).contains(member))
      .map(SluiceOffset.fromJson(_, Some(bodies)))
      .orElse(
        byIndex
          .map(_.json())
          .filter(json => SluiceOffset.memberOf(json).isEmpty)
          .flatMap(json => Try(SluiceOffset.fromJson(json, Some(bodies))).toOption))
  }
}

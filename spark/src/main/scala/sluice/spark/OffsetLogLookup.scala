package sluice.spark

import scala.util.Try

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog

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
   * `Left` when the log has batches but none of its offsets names this source (it was written
   * before offsets named their member, or the source is new in the query).
   */
  def latest(spark: SparkSession, metadataPath: String): Either[String, Option[SluiceOffset]] = {
    val checkpointRoot = new Path(metadataPath).getParent.getParent
    val log = new OffsetSeqLog(spark, new Path(checkpointRoot, "offsets").toString)
    val member = memberName(metadataPath)
    log.getLatest() match {
      case None => Right(None)
      case Some((batchId, seq)) =>
        val mine = Try(seq.offsets).toOption.toSeq.flatten.flatten
          .flatMap(o => Try(SluiceOffset.fromJson(o.json())).toOption)
          .find(_.member.contains(member))
        mine.map(o => Right(Some(o))).getOrElse(Left(s"batch $batchId of the offset log has no offset of $member"))
    }
  }
}

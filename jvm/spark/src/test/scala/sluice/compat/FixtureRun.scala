package sluice.compat

import java.nio.file.{Files, Path}
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}

/**
 * A fixture's query, its rows kept by batch id (`foreachBatch` runs on the driver; a batch run
 * again replaces its rows), so that the rows of the committed batches can be told from those of
 * a batch the stop cut short, which the restart runs again.
 */
final class FixtureRun(df: DataFrame, checkpoint: Path, trigger: Trigger) {
  private val byBatch = new ConcurrentHashMap[Long, Seq[String]]()

  val query: StreamingQuery = df.writeStream
    .foreachBatch { (batch: DataFrame, id: Long) =>
      byBatch.put(id, batch.collect().toSeq.map(_.getString(0)))
      ()
    }
    .option("checkpointLocation", checkpoint.toString)
    .trigger(trigger)
    .start()

  /** The batches Spark's commit log holds: done, and not run again on restart. */
  private def committedBatches: Seq[Long] = {
    val dir = checkpoint.resolve("commits")
    if (!Files.isDirectory(dir)) Nil
    else
      Files
        .list(dir)
        .iterator()
        .asScala
        .map(_.getFileName.toString)
        .filter(n => n.nonEmpty && n.forall(_.isDigit))
        .map(_.toLong)
        .toSeq
  }

  /** The rows of the committed batches. */
  def committed: Seq[String] = committedBatches.flatMap(b => Option(byBatch.get(b))).flatten

  /** The rows of every batch that ran. */
  def all: Seq[String] = byBatch.values().asScala.toSeq.flatten
}

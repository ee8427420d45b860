package sluice.compat

import java.nio.file.{Files, Path}
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, ForeachWriter, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}

/**
 * A fixture's query, its rows kept by batch id (a batch run again replaces its rows), so that the
 * rows of the committed batches can be told from those of a batch the stop cut short, which the
 * restart runs again. Micro-batches hand their rows over in `foreachBatch` on the driver; real-time
 * mode allows no such sink, so its rows come through a `ForeachWriter`, per batch and task (local
 * mode: the writer's tasks run in this JVM).
 */
final class FixtureRun(
    df: DataFrame,
    checkpoint: Path,
    trigger: Trigger,
    realTime: Boolean,
    failAt: Option[Long] = None) {
  private val byBatch = new ConcurrentHashMap[Long, Seq[String]]()
  private val run = UUID.randomUUID().toString

  val query: StreamingQuery = {
    val writer = df.writeStream.option("checkpointLocation", checkpoint.toString).trigger(trigger)
    if (realTime) writer.outputMode("update").foreach(FixtureRun.writer(run)).start()
    else
      writer
        .foreachBatch { (batch: DataFrame, id: Long) =>
          // before its tasks run: the checkpoint a driver killed once Spark logged the batch leaves
          if (failAt.contains(id)) throw new IllegalStateException(s"${FixtureRun.InFlight} $id")
          byBatch.put(id, batch.collect().toSeq.map(_.getString(0)))
          ()
        }
        .start()
  }

  private def rowsByBatch: Map[Long, Seq[String]] =
    if (realTime) FixtureRun.rowsOf(run) else byBatch.asScala.toMap

  /** The batches Spark's commit log holds: done, and not run again on restart. */
  def committedBatches: Seq[Long] = {
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
  def committed: Seq[String] = {
    val rows = rowsByBatch
    committedBatches.flatMap(rows.get).flatten
  }

  /** The rows of every batch that ran. */
  def all: Seq[String] = rowsByBatch.values.toSeq.flatten
}

object FixtureRun {

  /** What the batch `failAt` fails with: the writer stops there, the batch logged and not committed. */
  val InFlight = "fixture stopped in flight at batch"

  /** Whether `e` is the failure `failAt` made. */
  def stoppedInFlight(e: Throwable): Boolean =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .exists(t => Option(t.getMessage).exists(_.contains(InFlight)))

  /** Rows per (run, batch, task): a task run again for its batch starts its rows afresh. */
  private val rows = new ConcurrentHashMap[(String, Long, Long), java.util.Vector[String]]()

  def writer(run: String): ForeachWriter[Row] = new ForeachWriter[Row] {
    private var key: (String, Long, Long) = _
    override def open(partitionId: Long, epochId: Long): Boolean = {
      key = (run, epochId, partitionId)
      rows.put(key, new java.util.Vector[String]())
      true
    }
    override def process(row: Row): Unit = rows.get(key).add(row.getString(0))
    override def close(errorOrNull: Throwable): Unit = ()
  }

  def rowsOf(run: String): Map[Long, Seq[String]] =
    rows.asScala.toSeq
      // a copy (Vector's toArray holds its lock): a task may still be adding rows while a test
      // reads them, which iterating the Vector would fail on
      .collect {
        case ((r, batch, _), values) if r == run =>
          batch -> values.toArray(Array.empty[String]).toSeq
      }
      .groupBy(_._1)
      .map { case (batch, parts) => batch -> parts.flatMap(_._2) }
}

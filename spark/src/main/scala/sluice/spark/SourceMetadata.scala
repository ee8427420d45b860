package sluice.spark

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

import sluice.api.{SplitProgress, SplitProgressJson}
import sluice.runtime.ProgressStore

/**
 * The files a Sluice source keeps in its own folder of the query checkpoint
 * (`<checkpoint>/sources/<n>`), each written atomically:
 *  - the initial offset, written once when a new query first asks for it, so that a restart
 *    replays batch 0 from the same resolved start positions (Spark asks more than once);
 *  - the progress readers reported, written as their tasks end (the runtime's `ProgressStore`),
 *    so that a driver that dies before the next offset is written does not forget what the
 *    batch read (DESIGN.md).
 */
final class SourceMetadata(metadataPath: String, hadoopConf: Configuration) extends ProgressStore {
  private val root = new Path(metadataPath)
  private val initialFile = new Path(root, "sluice-initial-offset.json")
  private val progressFile = new Path(root, "sluice-progress.json")
  private lazy val files = CheckpointFileManager.create(root, hadoopConf)
  private val mapper = new ObjectMapper()

  def readInitialOffset(): Option[String] = read(initialFile)
  def writeInitialOffset(json: String): Unit = write(initialFile, json)

  override def write(progress: Seq[SplitProgress]): Unit = {
    val doc = mapper.createObjectNode()
    doc.put("version", 1)
    val splits = doc.putArray("splits")
    progress.foreach(p => SplitProgressJson.write(p, splits.addObject()))
    write(progressFile, mapper.writeValueAsString(doc))
  }

  override def read(): Seq[SplitProgress] = read(progressFile).toSeq.flatMap { text =>
    mapper.readTree(text).get("splits").elements().asScala.map(SplitProgressJson.read)
  }

  private def read(file: Path): Option[String] =
    if (!files.exists(file)) None
    else {
      val in = files.open(file)
      try Some(new String(in.readAllBytes(), StandardCharsets.UTF_8)) finally in.close()
    }

  private def write(file: Path, text: String): Unit = {
    if (!files.exists(root)) files.mkdirs(root) // Spark creates the folder only when it first needs it
    val out = files.createAtomic(file, true)
    try out.write(text.getBytes(StandardCharsets.UTF_8)) catch {
      case e: Throwable =>
        out.cancel()
        throw e
    }
    out.close()
  }
}

package sluice.spark

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

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
 *    batch read (DESIGN.md);
 *  - checkpoints too large for the offset log (`sluice-checkpoints/<sha-256>.json`, the
 *    [[CheckpointBodies]]), each named by an offset.
 */
final class SourceMetadata(metadataPath: String, hadoopConf: Configuration) extends ProgressStore with CheckpointBodies {
  private val root = new Path(metadataPath)
  private val initialFile = new Path(root, "sluice-initial-offset.json")
  private val progressFile = new Path(root, "sluice-progress.json")
  private val bodies = new Path(root, "sluice-checkpoints")
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

  override def keep(json: String): String = {
    val bytes = json.getBytes(StandardCharsets.UTF_8)
    val name = MessageDigest.getInstance("SHA-256").digest(bytes).map(b => f"${b & 0xff}%02x").mkString
    val file = bodyFile(name)
    if (!files.exists(file)) {
      if (!files.exists(bodies)) files.mkdirs(bodies)
      write(file, bytes)
    }
    name
  }

  override def load(name: String): String = read(bodyFile(name)).getOrElse(throw new IllegalStateException(
    s"Sluice: the offset log names checkpoint file ${bodyFile(name)}, which is missing. The query's checkpoint " +
      "was damaged (files deleted or not copied with it); restore it whole, or start from a new checkpoint location."))

  /** Also deletes what a write cut short left behind (a temporary file) and checksums of deleted files. */
  override def retainOnly(names: Set[String]): Unit = if (files.exists(bodies)) {
    val kept = names.flatMap(n => Seq(s"$n.json", s".$n.json.crc"))
    files.list(bodies).map(_.getPath).filterNot(p => kept.contains(p.getName)).foreach(p => files.delete(p))
  }

  private def bodyFile(name: String): Path = {
    // a name comes from an offset: it must not lead out of the folder
    require(name.nonEmpty && name.forall(c => c.isDigit || (c >= 'a' && c <= 'f')), s"not a checkpoint name: '$name'")
    new Path(bodies, s"$name.json")
  }

  private def read(file: Path): Option[String] =
    if (!files.exists(file)) None
    else {
      val in = files.open(file)
      try Some(new String(in.readAllBytes(), StandardCharsets.UTF_8)) finally in.close()
    }

  private def write(file: Path, text: String): Unit = write(file, text.getBytes(StandardCharsets.UTF_8))

  private def write(file: Path, bytes: Array[Byte]): Unit = {
    if (!files.exists(root)) files.mkdirs(root) // Spark creates the folder only when it first needs it
    val out = files.createAtomic(file, true)
    try out.write(bytes) catch {
      case e: Throwable =>
        out.cancel()
        throw e
    }
    out.close()
  }
}

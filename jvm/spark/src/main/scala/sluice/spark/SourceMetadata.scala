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
 *    batch read (DESIGN.md);
 *  - checkpoints too large for the offset log (`sluice-checkpoints/`, the [[KeptCheckpoints]]),
 *    each named by an offset.
 */
final class SourceMetadata(metadataPath: String, hadoopConf: Configuration)
    extends ProgressStore
    with CheckpointBodies {
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

  private lazy val kept = new KeptCheckpoints(
    new Path(root, "sluice-checkpoints"),
    files,
    new KeptCheckpoints.FileIo {
      override def write(file: Path, bytes: Array[Byte]): Unit =
        SourceMetadata.this.write(file, bytes)
      override def read(file: Path): Option[Array[Byte]] = readBytes(file)
    })

  override def keep(json: String): String = kept.keep(json)
  override def load(name: String): String = kept.load(name)
  override def retainOnly(names: Set[String]): Unit = kept.retainOnly(names)
  override def bytesWritten: Long = kept.bytesWritten

  private def read(file: Path): Option[String] =
    readBytes(file).map(new String(_, StandardCharsets.UTF_8))

  private def readBytes(file: Path): Option[Array[Byte]] =
    if (!files.exists(file)) None
    else {
      val in = files.open(file)
      try Some(in.readAllBytes())
      finally in.close()
    }

  private def write(file: Path, text: String): Unit =
    write(file, text.getBytes(StandardCharsets.UTF_8))

  private lazy val fileSystem = root.getFileSystem(hadoopConf)
  private lazy val isLocal = fileSystem.getScheme == "file"

  /**
   * Writes `file` whole or not at all (a temporary file, then a rename). On the local file
   * system with `java.nio`, not through `CheckpointFileManager`: Hadoop's local file system runs
   * `chmod` and `readlink` as processes for each create and rename, tens of milliseconds each
   * under load; a batch writes its progress and may write tens of checkpoint chunks (profiled:
   * most of a 1,024-split batch's planning time).
   */
  private def write(file: Path, bytes: Array[Byte]): Unit =
    if (isLocal) {
      // as Hadoop's local file system maps a path (its URI's decoded path), whatever the characters
      val target = new java.io.File(fileSystem.makeQualified(file).toUri.getPath).toPath
      java.nio.file.Files.createDirectories(target.getParent)
      val temp =
        target.resolveSibling(s".${target.getFileName}.${java.util.UUID.randomUUID()}.tmp")
      try {
        java.nio.file.Files.write(temp, bytes)
        // a checksum Hadoop wrote beside an earlier version (an earlier build, or a write through
        // Hadoop) would no longer match: it goes first, so no crash leaves it beside new content
        java.nio.file.Files.deleteIfExists(target.resolveSibling(s".${target.getFileName}.crc"))
        java.nio.file.Files.move(
          temp,
          target,
          java.nio.file.StandardCopyOption.ATOMIC_MOVE,
          java.nio.file.StandardCopyOption.REPLACE_EXISTING)
      } finally java.nio.file.Files.deleteIfExists(temp)
    } else {
      if (!files.exists(file.getParent))
        files.mkdirs(file.getParent) // Spark creates the folder only when it first needs it
      val out = files.createAtomic(file, true)
      try out.write(bytes)
      catch {
        case e: Throwable =>
          out.cancel()
          throw e
      }
      out.close()
    }
}

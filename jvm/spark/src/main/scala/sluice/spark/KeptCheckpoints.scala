package sluice.spark

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

import sluice.errors.SluiceError

/**
 * The [[CheckpointBodies]] of one source, in `folder` (`<checkpoint>/sources/<n>/sluice-checkpoints`):
 *  - `<sha-256>.json`, one per checkpoint: the list of its chunks (and its length); one kept by
 *    an earlier build (named by a version 2 offset) holds the whole checkpoint and is still read;
 *  - `chunks/<sha-256>`, the checkpoints' bytes cut by [[ContentChunks]], each named by its content.
 *
 * Successive checkpoints of a large source differ in a few places (a split's position, files
 * appended to those found), so they share all their chunks but a few: a batch writes what
 * changed plus a list, not the whole checkpoint again (a file source that found 100,000 files
 * would otherwise write megabytes per batch, as Spark's file source does not: it keeps a
 * compacted log). A chunk is deleted once no kept checkpoint lists it.
 *
 * Every file is written atomically (temporary file, then rename) and never changed, and a list
 * is written after its chunks: a crash leaves at most chunks no list names, which the next
 * `retainOnly` deletes. Reading a checkpoint checks its content against its name. Calls are
 * serialized: the engine may read offsets from other threads while a commit deletes.
 */
final class KeptCheckpoints(
    folder: Path,
    files: CheckpointFileManager,
    io: KeptCheckpoints.FileIo)
    extends CheckpointBodies {
  import KeptCheckpoints._

  private val chunkFolder = new Path(folder, "chunks")
  private val mapper = new ObjectMapper()

  /** Chunks known to be in the folder (listed once, then kept up to date): saves a look-up per chunk. */
  private var writtenChunks: mutable.Set[String] = _

  /** What the lists read or written hold: a commit needs them all, every time. */
  private val listed = mutable.Map[String, Listed]()
  @volatile private var written = 0L

  override def bytesWritten: Long = written

  private def write(file: Path, bytes: Array[Byte]): Unit = {
    io.write(file, bytes)
    written += bytes.length
  }

  override def keep(json: String): String = synchronized {
    val bytes = json.getBytes(StandardCharsets.UTF_8)
    val name = sha256(bytes)
    if (!files.exists(listFile(name))) {
      val chunks = ContentChunks.split(bytes).map { chunk =>
        val chunkName = sha256(chunk)
        if (!chunksWritten.contains(chunkName)) {
          write(new Path(chunkFolder, chunkName), chunk)
          chunksWritten += chunkName
        }
        chunkName
      }
      val list = mapper.createObjectNode()
      list.put("version", 1)
      list.put("bytes", bytes.length)
      val names = list.putArray("chunks")
      chunks.foreach(names.add)
      write(listFile(name), mapper.writeValueAsBytes(list))
      listed(name) = Chunks(chunks)
    }
    name
  }

  override def load(name: String): String = synchronized {
    val bytes = chunksOf(name).getOrElse(throw damaged(listFile(name))) match {
      case WholeFile => io.read(listFile(name)).getOrElse(throw damaged(listFile(name)))
      case Chunks(parts) =>
        val out = new java.io.ByteArrayOutputStream()
        parts.foreach { c =>
          val file = new Path(chunkFolder, c)
          out.write(io.read(file).getOrElse(throw damaged(file)))
        }
        out.toByteArray
    }
    if (sha256(bytes) != name) {
      throw SluiceError.invalidCheckpoint(
        s"Sluice: checkpoint file ${listFile(name)} and its chunks do not hold the " +
          s"checkpoint it is named after: the query's checkpoint was damaged. $RestoreAdvice")
    }
    new String(bytes, StandardCharsets.UTF_8)
  }

  /** Also deletes what a write cut short left behind (a temporary file) and checksums of deleted files. */
  override def retainOnly(names: Set[String]): Unit = synchronized {
    if (files.exists(folder)) retain(names)
  }

  private def retain(names: Set[String]): Unit = {
    deleteAllBut(folder, names.map(n => s"${checkName(n)}.json"), spare = Set("chunks"))
    // the chunks of every list still there (not only of those named: one that could not be
    // deleted must stay readable), read before any chunk goes; an unreadable list deletes nothing
    val lists = files
      .list(folder)
      .map(_.getPath.getName)
      .filter(_.endsWith(".json"))
      .map(_.stripSuffix(".json"))
      .filter(n => n.nonEmpty && n.forall(isHex))
      .toSet
    val keptChunks = lists.flatMap(n => chunksOf(n).toSeq.flatMap(_.chunks))
    // forgotten before they go: a delete that fails half way must not leave a chunk that is gone
    // known as written (the next checkpoint with its content would list it without writing it)
    listed.filterInPlace { case (n, _) => lists.contains(n) }
    if (writtenChunks != null) writtenChunks.filterInPlace(keptChunks.contains)
    if (files.exists(chunkFolder)) deleteAllBut(chunkFolder, keptChunks, spare = Set.empty)
  }

  private def deleteAllBut(dir: Path, kept: Set[String], spare: Set[String]): Unit = {
    val keep = kept ++ kept.map(n => s".$n.crc") ++ spare
    files
      .list(dir)
      .map(_.getPath)
      .filterNot(p => keep.contains(p.getName))
      .foreach(p => files.delete(p))
  }

  /** What the file of checkpoint `name` holds, or None when it is missing. */
  private def chunksOf(name: String): Option[Listed] = listed.get(name).orElse {
    io.read(listFile(name)).map { bytes =>
      val chunks = Option(mapper.readTree(bytes).get("chunks"))
      // a version 2 offset names a checkpoint kept whole, before there were chunks (its content
      // is checked against its name like any other)
      val held = chunks.fold[Listed](WholeFile)(c =>
        Chunks(c.elements().asScala.map(n => checkName(n.asText())).toSeq))
      listed(name) = held
      held
    }
  }

  /** The chunks already in the folder, listed once (a look-up per chunk costs a round trip on object stores). */
  private def chunksWritten: mutable.Set[String] = {
    if (writtenChunks == null) {
      writtenChunks = mutable.Set[String]()
      if (files.exists(chunkFolder)) {
        writtenChunks ++= files
          .list(chunkFolder)
          .map(_.getPath.getName)
          .filter(n => n.forall(isHex))
      }
    }
    writtenChunks
  }

  private def listFile(name: String): Path = new Path(folder, s"${checkName(name)}.json")

  private def damaged(file: Path) = SluiceError.invalidCheckpoint(
    s"Sluice: an offset in the log needs checkpoint file " +
      s"$file, which is missing. The query's checkpoint was damaged (files deleted or not copied with it); $RestoreAdvice")
}

object KeptCheckpoints {

  /** What a checkpoint's file holds: the list of its chunks, or (written before chunks) all of it. */
  private sealed trait Listed { def chunks: Seq[String] }
  private final case class Chunks(chunks: Seq[String]) extends Listed
  private case object WholeFile extends Listed { def chunks: Seq[String] = Nil }

  /** Atomic whole-file writes and reads, as the source's other metadata files are written. */
  trait FileIo {
    def write(file: Path, bytes: Array[Byte]): Unit
    def read(file: Path): Option[Array[Byte]]
  }

  private val RestoreAdvice = "restore it whole, or start from a new checkpoint location."

  private def isHex(c: Char): Boolean = c.isDigit || (c >= 'a' && c <= 'f')

  /** A name comes from an offset or a list: it must not lead out of the folder. */
  private def checkName(name: String): String = {
    require(name.nonEmpty && name.forall(isHex), s"not a checkpoint name: '$name'")
    name
  }

  private def sha256(bytes: Array[Byte]): String =
    MessageDigest.getInstance("SHA-256").digest(bytes).map(b => f"${b & 0xff}%02x").mkString
}

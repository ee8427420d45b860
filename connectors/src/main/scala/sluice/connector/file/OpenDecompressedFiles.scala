package sluice.connector.file

import java.io.InputStream
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

/**
 * Compressed files left open where a range ended, for the range that continues there: a
 * compressed stream cannot be entered mid-way, so without this every batch that reads on in a
 * compressed file would decompress it again from its start (quadratic in the batches a file is
 * read in). One per JVM: the next batch's task usually runs on the same executor.
 *
 * An entry is taken only by a range of the same file (path, length, modification time) starting
 * exactly where the parked one ended, so reuse cannot change what a range reads; a miss opens
 * the file again. Few entries are kept (each holds a decompressor's window), the oldest and those
 * idle for a while are closed.
 */
private[file] object OpenDecompressedFiles {
  private val MaxOpen = 8
  private val MaxIdleMs = 120000L

  /** A parked file: its decompressed stream and the line reader standing at `position`. */
  final class Parked(val stream: InputStream, val lines: LineReader, val headerStart: Long) {
    private[OpenDecompressedFiles] var parkedAtMs = 0L
    def close(): Unit = try stream.close() catch { case _: java.io.IOException => }
  }

  private final case class Key(path: String, fileLength: Long, modificationTime: Long, position: Long)

  private val open = mutable.LinkedHashMap[Key, Parked]()
  /** How many ranges took up a file left open (for tests). */
  val resumed = new AtomicLong()

  private def key(split: FileSplit, position: Long) = Key(split.path, split.fileLength, split.modificationTime, position)

  /** Keeps `parked`, which stands at `position` of `split`'s decompressed stream. */
  def park(split: FileSplit, position: Long, parked: Parked): Unit = {
    val closing = synchronized {
      parked.parkedAtMs = System.currentTimeMillis()
      val replaced = open.put(key(split, position), parked).toSeq
      val stale = expired() ++ (if (open.size > MaxOpen) open.keys.take(open.size - MaxOpen).toSeq else Nil)
      replaced ++ stale.flatMap(open.remove)
    }
    closing.foreach(_.close()) // outside the lock: closing may touch storage
  }

  /** The file parked at `position` of `split`, if there is one; the caller owns it then. */
  def take(split: FileSplit, position: Long): Option[Parked] = {
    val (found, stale) = synchronized {
      val f = open.remove(key(split, position))
      (f, expired().flatMap(open.remove))
    }
    stale.foreach(_.close())
    found.foreach(_ => resumed.incrementAndGet())
    found
  }

  private def expired(): Seq[Key] = {
    val now = System.currentTimeMillis()
    open.collect { case (k, p) if now - p.parkedAtMs > MaxIdleMs => k }.toSeq
  }
}

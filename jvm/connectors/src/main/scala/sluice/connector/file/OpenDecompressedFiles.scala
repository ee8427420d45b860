package sluice.connector.file

import java.io.InputStream
import java.util.concurrent.{ScheduledThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

/**
 * Compressed files left open where a range ended, for the range that continues there: a
 * compressed stream cannot be entered mid-way, so without this every batch that reads on in a
 * compressed file would decompress it again from its start (quadratic in the batches a file is
 * read in). One per JVM: the binding gives a compressed file's ranges the same preferred
 * executor batch after batch (`FileSplit.localityKey`), so the next range's task usually runs
 * where the last one left the file open.
 *
 * An entry is taken only by a range of the same file (path, length, modification time) starting
 * exactly where the parked one ended, so reuse cannot change what a range reads; a miss opens
 * the file again (counted as `compressedFileOpens`). Each entry holds a decompressor's window, so
 * few are kept (`maxOpenCompressedFiles`, the oldest closed first) and one idle for longer than
 * `openCompressedFileIdleMs` is closed: at the next use of these entries, or by a daemon thread
 * when that time is up, so that files a stopped query left open do not hold their windows for
 * as long as the executor lives.
 */
private[file] object OpenDecompressedFiles {

  /** A parked file: its decompressed stream and the line reader standing at `position`. */
  final class Parked(val stream: InputStream, val lines: LineReader, val headerStart: Long) {
    private[OpenDecompressedFiles] var parkedAtMs = 0L
    private[OpenDecompressedFiles] var maxIdleMs = 0L
    def close(): Unit = try stream.close()
    catch { case _: java.io.IOException => }
  }

  private final case class Key(
      path: String,
      fileLength: Long,
      modificationTime: Long,
      position: Long)

  private val open = mutable.LinkedHashMap[Key, Parked]()

  /** How many ranges took up a file left open (for tests). */
  val resumed = new AtomicLong()

  private def key(split: FileSplit, position: Long) =
    Key(split.path, split.fileLength, split.modificationTime, position)

  /**
   * Keeps `parked`, which stands at `position` of `split`'s decompressed stream, for at most
   * `maxIdleMs`; then at most `maxOpen` files stay open (the parking source's limit: the JVM's
   * sources share these entries).
   */
  def park(
      split: FileSplit,
      position: Long,
      parked: Parked,
      maxOpen: Int,
      maxIdleMs: Long): Unit = {
    val closing = synchronized {
      parked.parkedAtMs = System.currentTimeMillis()
      parked.maxIdleMs = maxIdleMs
      val replaced = open.put(key(split, position), parked).toSeq
      val stale =
        expired() ++ (if (open.size > maxOpen) open.keys.take(open.size - maxOpen).toSeq else Nil)
      replaced ++ stale.distinct.flatMap(open.remove)
    }
    closing.foreach(_.close()) // outside the lock: closing may touch storage
    sweeper.schedule(
      new Runnable { def run(): Unit = sweep() },
      maxIdleMs + 1,
      TimeUnit.MILLISECONDS)
  }

  /** Closes what has been idle for too long. */
  private def sweep(): Unit = synchronized(expired().flatMap(open.remove)).foreach(_.close())

  /** One daemon thread per JVM, started with the first parked file; a sweep per parked file. */
  private lazy val sweeper = {
    val executor = new ScheduledThreadPoolExecutor(
      1,
      (task: Runnable) => {
        val t = new Thread(task, "sluice-open-compressed-files-sweeper")
        t.setDaemon(true)
        t
      })
    executor.setRemoveOnCancelPolicy(true)
    executor
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
    open.collect { case (k, p) if now - p.parkedAtMs > p.maxIdleMs => k }.toSeq
  }
}

package sluice.api

import scala.collection.mutable

import sluice.config.RecordLayout

/**
 * What the binding decides for every reader it creates (Flink's `SourceReaderContext`): which rows
 * to build, which clock to read, and where the reader's per-split counters go (records dropped as
 * malformed, offsets lost to retention, ...: summed into query progress). Given once, when the
 * reader is created; connectors never take these from their own options.
 */
trait ReaderContext {

  /** Full rows, or the payload only (compact). */
  def recordLayout: RecordLayout

  /** Wall-clock milliseconds, for the reader's own timeouts. */
  def currentTimeMillis(): Long

  /** Adds `delta` (0 makes the counter appear) to counter `name` of the split being read. */
  def count(splitId: String, name: String, delta: Long): Unit

  /**
   * Adds `n` to the bytes this reader read, for the scan's SQL metrics only (not per split, not
   * in query progress): cheap enough to call once per record, from the thread that reads.
   * Readers whose positions are bytes (files) need not call it: the binding counts their
   * positions. Kafka readers add each record's serialized key and value sizes.
   */
  def addBytesRead(n: Long): Unit = ()
}

object ReaderContext {

  /** A context that keeps the counters itself: one per task in the binding, or one per test. */
  def apply(layout: RecordLayout = RecordLayout.Full): Local = new Local(layout)

  final class Local(override val recordLayout: RecordLayout) extends ReaderContext {
    private val counters = mutable.Map[String, mutable.Map[String, Long]]()
    private var updates = 0L
    private var bytes = 0L

    override def currentTimeMillis(): Long = System.currentTimeMillis()

    override def count(splitId: String, name: String, delta: Long): Unit = synchronized {
      val split = counters.getOrElseUpdate(splitId, mutable.Map.empty)
      split(name) = split.getOrElse(name, 0L) + delta
      updates += 1
    }

    /**
     * How many times `count` was called so far: while it stays the same, so does every counter
     * (the scan's metrics sum the counters again only when it moved).
     */
    def counterUpdates: Long = synchronized(updates)

    override def addBytesRead(n: Long): Unit = bytes += n

    /** What `addBytesRead` added so far. */
    def bytesRead: Long = bytes

    /** The counters of one split so far. */
    def countersOf(splitId: String): Map[String, Long] = synchronized {
      counters.get(splitId).map(_.toMap).getOrElse(Map.empty)
    }
  }
}

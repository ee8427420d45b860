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
}

object ReaderContext {
  /** A context that keeps the counters itself: one per task in the binding, or one per test. */
  def apply(layout: RecordLayout = RecordLayout.Full): Local = new Local(layout)

  final class Local(override val recordLayout: RecordLayout) extends ReaderContext {
    private val counters = mutable.Map[String, mutable.Map[String, Long]]()

    override def currentTimeMillis(): Long = System.currentTimeMillis()

    override def count(splitId: String, name: String, delta: Long): Unit = synchronized {
      val split = counters.getOrElseUpdate(splitId, mutable.Map.empty)
      split(name) = split.getOrElse(name, 0L) + delta
    }

    /** The counters of one split so far. */
    def countersOf(splitId: String): Map[String, Long] = synchronized {
      counters.get(splitId).map(_.toMap).getOrElse(Map.empty)
    }
  }
}

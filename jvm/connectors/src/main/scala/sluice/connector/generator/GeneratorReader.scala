package sluice.connector.generator

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.unsafe.types.UTF8String

import sluice.api.{PausableSplitReader, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout

/**
 * Computes records on the fly. Supports pause/resume, so the generator can stand in for a
 * pausable connector in alignment tests.
 */
final class GeneratorReader(config: GeneratorConfig, layout: RecordLayout)
    extends PausableSplitReader[GeneratorSplit] {
  import GeneratorReader._

  private final class Cursor(val split: GeneratorSplit, var next: Long, val until: Long) {

    /**
     * Read to its end or open-ended (real-time mode): records exist as the rate makes them, from
     * the split's start time. (A micro-batch range ends where the rate had got when it was planned.)
     */
    private val pacedSince =
      if (until == SplitRange.OpenEnd || split.stopPosition.contains(until))
        config.rowsPerSecond.map(_ =>
          split.generatingSinceMs.getOrElse(
            System.currentTimeMillis() - next * 1000 / config.rowsPerSecond.get))
      else None
    def end: Long = pacedSince.fold(until)(since =>
      GeneratorEnumerator.available(config, split, since, System.currentTimeMillis()))
  }

  private val active = mutable.LinkedHashMap[String, Cursor]()
  private val paused = mutable.Set[String]()

  override def handleSplitsChanges(ranges: Seq[SplitRange[GeneratorSplit]]): Unit =
    ranges.foreach(r => active(r.split.splitId) = new Cursor(r.split, r.from, r.until))

  override def pauseOrResumeSplits(
      toPause: Seq[GeneratorSplit],
      toResume: Seq[GeneratorSplit]): Unit = {
    // Splits this reader does not own (any more) are ignored, never an error (FLINK-39728).
    toPause.map(_.splitId).filter(active.contains).foreach(paused += _)
    toResume.map(_.splitId).foreach(paused -= _)
  }

  override def fetch(): RecordsWithSplitIds = {
    val finished = active.values.filter(c => c.next >= c.until).map(_.split.splitId).toSet
    finished.foreach(active.remove)
    val readable = active.values.filterNot(c => paused.contains(c.split.splitId)).toIndexedSeq
    new Batch(readable, finished)
  }

  override def close(): Unit = active.clear()

  private final class Batch(cursors: IndexedSeq[Cursor], override val finishedSplits: Set[String])
      extends RecordsWithSplitIds {
    private var splitIdx = -1
    private var cursor: Cursor = _
    private var remaining = 0L
    private var current = -1L
    private val compact = layout == RecordLayout.Compact
    private val values = new Array[Any](if (compact) 2 else 4)
    private val theRow = new GenericInternalRow(values)

    override def nextSplit(): String = {
      splitIdx += 1
      if (splitIdx >= cursors.size) null
      else {
        cursor = cursors(splitIdx)
        remaining = math.max(0L, math.min(RecordsPerFetch, cursor.end - cursor.next))
        cursor.split.splitId
      }
    }

    override def nextRecord(): Boolean = {
      if (remaining <= 0) return false
      remaining -= 1
      current = cursor.next
      cursor.next += 1
      val s = cursor.split.index
      if (compact) {
        values(0) = config.recordId(s, current)
        values(1) = UTF8String.fromString(config.payload(s, current))
      } else {
        values(0) = config.recordId(s, current)
        values(1) = s
        values(2) = config.eventTimeMs(s, current) * 1000L
        values(3) = UTF8String.fromString(config.payload(s, current))
      }
      true
    }

    override def row: InternalRow = theRow
    override def eventTime: Long =
      if (compact) RecordsWithSplitIds.NoTimestamp
      else config.eventTimeMs(cursor.split.index, current)
    override def position: Long = current + 1
  }
}

private object GeneratorReader {
  val RecordsPerFetch = 4096L
}

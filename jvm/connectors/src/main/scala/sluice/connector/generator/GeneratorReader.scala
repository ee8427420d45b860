package sluice.connector.generator

import scala.collection.mutable

import sluice.api.{EmittedRecords, PausableSplitReader, RecordsWithSplitIds, SplitRange, SplitRecords}
import sluice.config.RecordLayout

/**
 * Computes records on the fly. Supports pause/resume, so the generator can stand in for a
 * pausable connector in alignment tests. It only says which records exist now (Flink's split):
 * `GeneratorRecordEmitter` makes their rows.
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
  private val emitter = new GeneratorRecordEmitter(config, layout)
  private val record = new GeneratedRecord

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
    new EmittedRecords(new Generated(readable, finished), emitter)
  }

  override def close(): Unit = active.clear()

  /**
   * Up to `RecordsPerFetch` records of each readable split, as far as the rate has made them:
   * the raw records of one fetch (one `GeneratedRecord`, moved along); `emitter` makes the rows.
   */
  private final class Generated(
      cursors: IndexedSeq[Cursor],
      override val finishedSplits: Set[String])
      extends SplitRecords[GeneratedRecord] {
    private var splitIdx = -1
    private var cursor: Cursor = _
    private var remaining = 0L

    override def nextSplit(): String = {
      splitIdx += 1
      if (splitIdx >= cursors.size) null
      else {
        cursor = cursors(splitIdx)
        remaining = math.max(0L, math.min(RecordsPerFetch, cursor.end - cursor.next))
        record.split = cursor.split
        cursor.split.splitId
      }
    }

    override def nextRecord(): GeneratedRecord =
      if (remaining <= 0) null
      else {
        remaining -= 1
        record.index = cursor.next
        cursor.next += 1
        record
      }
  }
}

private object GeneratorReader {
  val RecordsPerFetch = 4096L
}

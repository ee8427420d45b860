package sluice.api

import org.apache.spark.sql.catalyst.InternalRow

/**
 * A split to read from `from` (inclusive) to `until` (exclusive). An open range (`until` =
 * `SplitRange.OpenEnd`) is read for as long as the engine keeps the reader, as real-time mode
 * and continuous processing do: its reader waits for new data instead of reporting it finished,
 * and a gap between the end of the data and `until` is no loss.
 */
final case class SplitRange[SplitT <: SourceSplit](split: SplitT, from: Long, until: Long) {
  def isEmpty: Boolean = from >= until
  def isOpen: Boolean = until == SplitRange.OpenEnd
}

object SplitRange {
  val OpenEnd: Long = Long.MaxValue
}

/**
 * The executor-side half of a source: a pull-based reader of one or more split ranges (FLIP-27's
 * SplitReader). The engine adds ranges, then calls `fetch()` until every range is finished.
 * Records are Spark `InternalRow`s of the source's schema, built directly by the reader, or by
 * its `RecordEmitter` from the raw records it fetched (Flink's split: Kafka, the generator).
 */
trait SplitReader[SplitT <: SourceSplit] extends AutoCloseable {

  /** Adds ranges to read; a split appears at most once among all ranges given to a reader. */
  def handleSplitsChanges(ranges: Seq[SplitRange[SplitT]]): Unit

  /**
   * Returns the next records, possibly none. Each range is reported in `finishedSplits` of exactly
   * one result once its `until` is reached. May block briefly while waiting for data.
   */
  def fetch(): RecordsWithSplitIds

  /**
   * As `fetch()`, blocking for at most about `maxWaitMs` while waiting for data: an open batch
   * (real-time mode) ends at a deadline and must not wait a whole poll past it.
   * Readers that never block need not override it.
   */
  def fetch(maxWaitMs: Long): RecordsWithSplitIds = fetch()
}

/**
 * The records of one fetch, grouped by split, read like a cursor to avoid an object per record:
 * `nextSplit()` moves to the next split (null when done), `nextRecord()` to its next record.
 */
trait RecordsWithSplitIds {
  def nextSplit(): String
  def nextRecord(): Boolean
  def row: InternalRow

  /** Event time of the current record in epoch milliseconds, or `RecordsWithSplitIds.NoTimestamp`. */
  def eventTime: Long

  /**
   * When the current record arrived where the connector reads it from (the Kafka record
   * timestamp, a file's modification time), for latency markers; read only when latency
   * tracking is on.
   */
  def arrivalTime: Long = eventTime

  /**
   * The split position just after the current record. The engine checks it against the range's
   * `until`: a reader that reads past its range would hand the next batch's records to this one.
   */
  def position: Long

  /** Splits whose range is fully read as of this fetch. */
  def finishedSplits: Set[String]

  /**
   * Whether the current record has rows still to come (a JSON array in one Kafka message or one
   * line): an engine that reports positions while reading must not report one past a record it
   * has only partly handed out.
   */
  def recordHasMoreRows: Boolean = false
}

object RecordsWithSplitIds {
  val NoTimestamp: Long = Long.MinValue

  /** A fetch that returns nothing but may finish splits. */
  def empty(finished: Set[String]): RecordsWithSplitIds = new RecordsWithSplitIds {
    override def nextSplit(): String = null
    override def nextRecord(): Boolean = false
    override def row: InternalRow = throw new NoSuchElementException("no record")
    override def eventTime: Long = NoTimestamp
    override def position: Long = throw new NoSuchElementException("no record")
    override def finishedSplits: Set[String] = finished
  }
}

/**
 * FLIP-217: a reader that can stop and restart fetching from some of its splits while it keeps
 * reading the others. Its source declares it with `SupportsSplitPausing`, so the driver knows
 * without creating a reader.
 */
trait PausableSplitReader[SplitT <: SourceSplit] extends SplitReader[SplitT] {

  /** Pausing a split this reader does not hold, or one already finished, is a no-op (FLINK-39728). */
  def pauseOrResumeSplits(toPause: Seq[SplitT], toResume: Seq[SplitT]): Unit
}

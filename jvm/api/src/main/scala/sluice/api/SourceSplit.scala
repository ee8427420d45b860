package sluice.api

/**
 * A portion of a source's data that one reader reads independently: a Kafka partition, a file, a
 * generator stream. Positions inside a split are `Long`s (an offset, a byte position, a record
 * index), so that the engine can plan a batch as a half-open range `[from, until)` per split.
 */
trait SourceSplit extends Serializable {

  /** Unique and stable within its source; it names the split in offsets and metrics. */
  def splitId: String

  /** Where reading starts when the split is first assigned. */
  def startPosition: Long

  /** Where a bounded split ends (exclusive), if it is bounded. */
  def stopPosition: Option[Long]

  /**
   * True when one position step is one record (Kafka offsets, generator indexes); false when
   * positions are bytes (files), in which case record limits are converted with the bytes per
   * record observed so far.
   */
  def positionsCountRecords: Boolean = true

  /**
   * True when a range of this split may be cut at any position and its parts read by different
   * tasks at once (every position is where a record starts and a reader can start at it: Kafka
   * offsets, generator indexes); false for byte positions (files), where a part could start
   * mid-line.
   */
  def divisible: Boolean = positionsCountRecords

  /**
   * Ranges of splits with the same key are best read on the same executor, batch after batch:
   * its reader keeps something there between ranges that another executor would have to rebuild
   * (a compressed file left open where the last range ended). The binding then prefers one
   * executor per key, stable while the executors stay the same. None (the default): any executor.
   */
  def localityKey: Option[String] = None
}

package sluice.api

/**
 * An enumerator that can tell where a split starts in event time — the event time of the first
 * record of its range — so that alignment places a split that has not been read yet instead of
 * letting it run ahead blindly in its first batch.
 */
trait SupportsStartEventTime[SplitT <: SourceSplit] {

  /** For each non-empty range, the event time of its first record (absent when it has none). */
  def firstEventTimes(ranges: Seq[SplitRange[SplitT]]): Map[String, Long]
}

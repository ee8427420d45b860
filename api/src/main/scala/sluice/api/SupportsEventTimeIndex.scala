package sluice.api

/**
 * An enumerator that can locate event times inside its splits, so that alignment can plan each
 * range to end exactly where a split would pass the group's limit (Kafka's offsetsForTimes, a
 * generator's formula). Event time here is the connector's record time.
 */
trait SupportsEventTimeIndex[SplitT <: SourceSplit] extends SupportsStartEventTime[SplitT] {

  /** False when the index cannot answer now (e.g. a hybrid whose active source has none). */
  def hasEventTimeIndex: Boolean = true

  /**
   * For each range, the first position `p` in `[from, until]` such that every record in
   * `[from, p)` has an event time below `eventTimeMs` (`until` when all of them do).
   */
  def positionsBefore(ranges: Seq[SplitRange[SplitT]], eventTimeMs: Long): Map[String, Long]

  /**
   * For each range, an upper bound of the event times of its records, as tight as the connector
   * can tell (e.g. the partition's largest timestamp); absent when the range is empty.
   */
  def latestEventTimes(ranges: Seq[SplitRange[SplitT]]): Map[String, Long]
}

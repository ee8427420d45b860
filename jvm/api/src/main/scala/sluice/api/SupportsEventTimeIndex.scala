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
   * Whether the index finds the position of an event time exactly (Kafka's offsetsForTimes, a
   * generator's formula). An inexact index knows event times only per block of records — a
   * Parquet row group's min/max statistics — and answers at block boundaries: a position it
   * gives inside a block's span says nothing of the event times read up to it. Alignment then
   * reads a block that straddles its horizon whole (`positionsThrough`), so a split never stops
   * inside a block at an event time nobody knows.
   */
  def exactEventTimeIndex: Boolean = true

  /**
   * Asked of an inexact index only: for each range, the end of the last block that may hold a
   * record with an event time below `eventTimeMs` (`from` when no block may), so that reading
   * `[from, p)` takes every block straddling the time whole. For an exact index this is
   * `positionsBefore`, the default.
   */
  def positionsThrough(ranges: Seq[SplitRange[SplitT]], eventTimeMs: Long): Map[String, Long] =
    positionsBefore(ranges, eventTimeMs)

  /**
   * For each range, an upper bound of the event times of its records, as tight as the connector
   * can tell (e.g. the partition's largest timestamp); absent when the range is empty.
   */
  def latestEventTimes(ranges: Seq[SplitRange[SplitT]]): Map[String, Long]

  /**
   * Told right after the enumerator is made or restored, before it discovers splits, when its
   * source is in an alignment group: the group's drift in milliseconds (0 while `auto` is not
   * resolved). Alignment reads a block straddling its horizon whole, so the watermark can run past
   * the horizon by a block's span: an inexact index that can choose its blocks (a table's data
   * file whole, or by row group) chooses the smaller ones.
   */
  def alignedWithin(maxDriftMs: Long): Unit = ()
}

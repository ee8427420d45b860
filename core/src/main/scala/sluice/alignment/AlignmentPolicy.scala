package sluice.alignment

/**
 * What alignment knows of one split at a batch boundary (FLIP-180/182/217).
 *
 * @param watermark    the split's watermark, if it has one yet (its largest event time minus
 *                     the allowed out-of-orderness, or the event time where it starts)
 * @param hasData      whether anything is left to read in it now
 * @param idle         marked idle by the user's idleness timeout; never true while paused
 * @param finished     read to its end (a bounded split, or the end of an AvailableNow trigger)
 * @param paused       paused by alignment at the previous boundary
 */
final case class SplitAlignmentState(
    splitId: String,
    watermark: Option[Long],
    hasData: Boolean,
    idle: Boolean,
    finished: Boolean,
    paused: Boolean)

/** The limit for the next batch and the splits to pause and to resume. */
final case class AlignmentDecision(maxAllowedWatermark: Option[Long], pause: Set[String], resume: Set[String])

/**
 * FLIP-217's split alignment policy, with the traps Flink fell into designed out:
 *  - only splits that constrain the group count for its minimum: not idle, not finished, with a
 *    watermark; a split with nothing to read and no watermark blocks nobody (FLINK-32414);
 *  - no constraining split at all means no limit (`None`), never `Long.MaxValue + drift`
 *    (FLINK-31632), and never a group that stays paused (FLINK-25982, FLINK-32496);
 *  - a finished split is never paused, and pausing a split that is not there is a no-op
 *    (FLINK-39728).
 */
object AlignmentPolicy {

  /** `min(watermarks of constraining splits) + maxDrift`, saturating; `None` when nothing constrains. */
  def maxAllowedWatermark(splits: Seq[SplitAlignmentState], maxDriftMs: Long): Option[Long] =
    limit(splits.filter(s => !s.idle && !s.finished).flatMap(_.watermark), maxDriftMs)

  /** `min(watermarks) + maxDrift` over the watermarks that constrain, saturating; `None` for none. */
  def limit(constrainingWatermarks: Iterable[Long], maxDriftMs: Long): Option[Long] = {
    require(maxDriftMs >= 0, s"maxDrift must be >= 0, not $maxDriftMs")
    constrainingWatermarks.minOption.map(min => if (min > Long.MaxValue - maxDriftMs) Long.MaxValue else min + maxDriftMs)
  }

  /** Whether a split with this watermark must be paused under `limit`: strictly above it, and not finished. */
  def isAhead(watermark: Option[Long], finished: Boolean, limit: Option[Long]): Boolean =
    !finished && limit.exists(l => watermark.exists(_ > l))

  /** Pause what runs ahead of the limit, resume what is back under it (FLIP-217's policy). */
  def decide(splits: Seq[SplitAlignmentState], maxDriftMs: Long): AlignmentDecision =
    decide(splits, maxAllowedWatermark(splits, maxDriftMs))

  /** The same against a limit computed elsewhere (e.g. over several sources of one group). */
  def decide(splits: Seq[SplitAlignmentState], limit: Option[Long]): AlignmentDecision = {
    def ahead(s: SplitAlignmentState) = isAhead(s.watermark, s.finished, limit)
    AlignmentDecision(limit,
      pause = splits.filter(s => ahead(s) && !s.paused).map(_.splitId).toSet,
      resume = splits.filter(s => s.paused && !ahead(s)).map(_.splitId).toSet)
  }
}

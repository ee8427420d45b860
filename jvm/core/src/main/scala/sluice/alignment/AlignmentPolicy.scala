package sluice.alignment

/**
 * FLIP-217's split alignment policy, with the traps Flink fell into designed out:
 *  - only splits that constrain the group count for its minimum: not idle, not finished, with a
 *    watermark; a split with nothing to read and no watermark blocks nobody (FLINK-32414);
 *  - no constraining split at all means no limit (`None`), never `Long.MaxValue + drift`
 *    (FLINK-31632), and never a group that stays paused (FLINK-25982, FLINK-32496);
 *  - a finished split is never paused (FLINK-39728: readers ignore pausing a split they do not hold).
 */
object AlignmentPolicy {

  /** `min(watermarks) + maxDrift` over the watermarks that constrain, saturating; `None` for none. */
  def limit(constrainingWatermarks: Iterable[Long], maxDriftMs: Long): Option[Long] = {
    require(maxDriftMs >= 0, s"maxDrift must be >= 0, not $maxDriftMs")
    constrainingWatermarks.minOption.map(min =>
      if (min > Long.MaxValue - maxDriftMs) Long.MaxValue else min + maxDriftMs)
  }

  /** Whether a split with this watermark must be paused under `limit`: strictly above it, and not finished. */
  def isAhead(watermark: Option[Long], finished: Boolean, limit: Option[Long]): Boolean =
    !finished && limit.exists(l => watermark.exists(_ > l))
}

package sluice.api

/**
 * A source whose system deletes old records by itself (Kafka's retention): before it is started —
 * while a hybrid source still reads the members before it — it can tell whether the records its
 * start will need are still there, and for how long they will be.
 */
trait SupportsRetentionWatch {

  /** A watch of this source's records, to be closed by its owner; created in the driver. */
  def retentionWatch(): RetentionWatch
}

/**
 * Looks at the system's oldest records and its retention. `check` calls the system and may block
 * or throw (the system unreachable); its caller runs it off the planning thread.
 */
trait RetentionWatch extends AutoCloseable {

  /**
   * Whether the records the source will start at are still there.
   *
   * @param startAtTimestamp the source will start at its first record at or after this event time
   *                         (a hybrid's start at the previous source's end); None: at its own
   *                         configured start positions
   * @param nowMs            the wall-clock time retention is measured against
   */
  def check(startAtTimestamp: Option[Long], nowMs: Long): RetentionCheck
}

/**
 * What a retention watch found.
 *
 * @param headroomMs how long before the first records the start needs become old enough for the
 *                   system to delete them; negative once they are; None when nothing can age out
 *                   (no time-based retention, a start at the latest records) or it cannot be told
 * @param lost       when records the start needs are already gone: what is gone, what is left and
 *                   what to do, as a sentence
 * @param tolerated  the source is configured to go on past records that are gone (Kafka's
 *                   `failOnDataLoss=false`): a loss is reported, and does not stop the query
 * @param unchecked  what the watch could not find out, and what the check did without it (e.g.
 *                   the system refused to tell its retention: no headroom, but records already
 *                   gone are still looked for), as a sentence naming what to grant; logged once
 */
final case class RetentionCheck(
    headroomMs: Option[Long],
    lost: Option[String],
    tolerated: Boolean = false,
    unchecked: Option[String] = None)

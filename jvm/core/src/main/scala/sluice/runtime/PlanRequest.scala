package sluice.runtime

import sluice.api.{SourceSplit, SplitRange}

/**
 * What an engine asks `SourceRuntime.plan` for: the execution mode's question, whose answer type
 * it carries (`R`). Each mode asks one of them; the runtime's steps they share (catching up to
 * the start, retiring finished splits, discovering splits, asking how far splits can be read,
 * admission, alignment) are written once behind `plan`.
 */
sealed trait PlanRequest[R]

object PlanRequest {

  /**
   * Micro-batch: the checkpoint the batch from `start` ends at, every split's range cut by the
   * read limit, an AvailableNow trigger's bound and, in an alignment group, the group's round;
   * `start` itself when there is nothing to read. Moves the runtime to Planned.
   */
  final case class BoundedRange(start: SourceCheckpoint, limit: BatchLimit)
      extends PlanRequest[SourceCheckpoint]

  /**
   * Real-time mode and continuous processing: an open batch from `start`, every split open from
   * where it stands to its stop, open-ended where it has none. Moves the runtime to Running.
   */
  final case class OpenRange(start: SourceCheckpoint) extends PlanRequest[OpenBatch]

  /**
   * What an engine that only looks asks (real-time mode's end offset, `minRecordsPerTrigger`'s
   * count): how far each split of `start` could be read now. Plans nothing.
   */
  final case class Availability(start: SourceCheckpoint) extends PlanRequest[Available]

  /**
   * A bounded source read whole (`spark.read`, FLIP-27's batch mode): every split the enumerator
   * will ever discover, each from its start to its stop (empty ranges left out). Asked of a new
   * runtime once; the runtime is Finished after it (nothing is checkpointed, nothing follows).
   */
  final case class BoundedRead() extends PlanRequest[Seq[SplitRange[SourceSplit]]]
}

/**
 * What an engine that only looks is told: how far each split could be read now (`end`: the
 * start itself when nothing is there), and how many records that is.
 */
final case class Available(end: SourceCheckpoint, records: Long)

/**
 * An open batch (real-time mode, continuous processing) as the runtime opened it.
 *
 * @param start         the checkpoint it starts at, with the splits discovered when it opened
 * @param ranges        what readers read: to a split's stop, or open-ended
 * @param eventTimes    where each split stands in event time (largest read, else its next
 *                      record's), so readers know every watermark from their first record
 * @param pauseSplits   readers pause and resume their splits on the alignment coordinator's word
 * @param sharedGroup   other sources share the alignment group: the limit known when this batch
 *                      was planned may not count them yet, so readers confirm their splits'
 *                      watermarks with the coordinator before reading on
 */
final case class OpenBatch(
    start: SourceCheckpoint,
    ranges: Seq[SplitRange[SourceSplit]],
    eventTimes: Map[String, Long],
    pauseSplits: Boolean,
    sharedGroup: Boolean = false)

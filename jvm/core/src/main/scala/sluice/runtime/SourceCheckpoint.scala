package sluice.runtime

/**
 * One split in a checkpoint: the split itself (serialised by its source), the position the batch
 * ending here reads up to, and the progress readers reported for the batches before it
 * (`reportedPosition`: the position up to which `maxEventTime` and `records` count).
 */
final case class SplitEntry(
    splitId: String,
    splitVersion: Int,
    split: String,
    position: Long,
    reportedPosition: Long,
    maxEventTime: Option[Long],
    records: Long)

/**
 * What the splits read to their end in earlier checkpoints added up to: they left the checkpoint
 * (nothing is read from them any more, and nothing is derived from their end state), so that it
 * grows with the splits still open rather than with every split ever read.
 */
final case class FinishedSplits(
    count: Long,
    records: Long,
    maxEventTime: Option[Long],
    counters: Map[String, Long]) {

  def add(p: sluice.api.SplitProgress): FinishedSplits = FinishedSplits(
    count + 1,
    records + p.records,
    (maxEventTime ++ p.maxEventTime).maxOption,
    sluice.api.SplitProgress.sumCounters(counters, p.counters))
}

object FinishedSplits {
  val None: FinishedSplits = FinishedSplits(0L, 0L, scala.None, Map.empty)
}

/**
 * Everything that decides a batch of one source: the enumerator's state and every split still
 * open with its end position (splits finished in an earlier checkpoint are summed up in
 * `finished`). The micro-batch binding writes it into Spark's offset log before the batch runs,
 * so it is the source's checkpoint; restoring from it replays the same batch.
 */
final case class SourceCheckpoint(
    sourceType: String,
    enumeratorVersion: Int,
    enumeratorState: String,
    splits: Seq[SplitEntry],
    finished: FinishedSplits = FinishedSplits.None) {

  lazy val byId: Map[String, SplitEntry] = splits.map(s => s.splitId -> s).toMap

  /** Where a batch from here reads `split` from: where this checkpoint has it, else its start (new). */
  def positionOf(split: sluice.api.SourceSplit): Long =
    byId.get(split.splitId).map(_.position).getOrElse(split.startPosition)

  /** Where each split stands, the part of a checkpoint that says which records a batch reads. */
  def positions: Seq[(String, Long)] = splits.map(s => s.splitId -> s.position)

  /**
   * Whether a batch from `start` to here reads nothing and finds no split: every split here is in
   * `start` at the same position. Splits that only left the checkpoint (finished) make no batch:
   * they leave it with the next one that reads something.
   */
  def readsNothingAfter(start: SourceCheckpoint): Boolean =
    splits.forall(e => start.byId.get(e.splitId).exists(_.position == e.position))
}

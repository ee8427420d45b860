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
 * Everything that decides a batch of one source: the enumerator's state and every split with its
 * end position. The micro-batch binding writes it into Spark's offset log before the batch runs,
 * so it is the source's checkpoint; restoring from it replays the same batch.
 */
final case class SourceCheckpoint(
    sourceType: String,
    enumeratorVersion: Int,
    enumeratorState: String,
    splits: Seq[SplitEntry]) {

  lazy val byId: Map[String, SplitEntry] = splits.map(s => s.splitId -> s).toMap

  /** Where each split stands, the part of a checkpoint that says which records a batch reads. */
  def positions: Seq[(String, Long)] = splits.map(s => s.splitId -> s.position)
}

package sluice.api

/**
 * The driver-side half of a source: discovers splits and tells how far each can be read.
 * Spark's micro-batch engine calls it once per batch planning; its state is stored in every
 * offset, so the offset log is its checkpoint.
 */
trait SplitEnumerator[SplitT <: SourceSplit, StateT] extends AutoCloseable {

  /** Splits found since the last call (all of them on the first call after creation). */
  def discoverSplits(): Seq[SplitT]

  /**
   * For each given split, the exclusive position up to which data exists now. For a bounded split
   * this is never beyond its stop position. Each split comes with the position readers reached in
   * it, from the runtime that keeps it (the one home of split positions): an enumerator that
   * needs it (Kafka: a log that now ends below it lost records) is handed it here rather than
   * keeping a copy of its own.
   */
  def availablePositions(splits: Seq[(SplitT, Long)]): Map[String, Long]

  /**
   * Whether nothing more will be read from `split` past `position`: it reached its stop, or — the
   * connector knows — its data now goes on in another split (a Kafka partition whose topic was
   * re-created). A finished split constrains no alignment and holds no hybrid switch back.
   */
  def isFinished(split: SplitT, position: Long): Boolean =
    split.stopPosition.exists(position >= _)

  /** True once no split will ever be discovered again (bounded sources). */
  def noMoreSplits: Boolean

  /**
   * How far readers got in each split, told before every planning (after a restart too). A
   * hybrid source decides its switch from it; most enumerators ignore it.
   */
  def progressUpdated(progress: Seq[(SplitT, SplitProgress)]): Unit = ()

  /**
   * Splits read to their end that leave the checkpoint (only while `keepsEndState` is false), with
   * their final progress: they are not in `progressUpdated` any more. The state taken next is in
   * the same checkpoint, so an enumerator that counts what they read keeps the count there.
   */
  def splitsLeft(finished: Seq[(SplitT, SplitProgress)]): Unit = ()

  /**
   * Whether what readers reached in a split must be kept durably before the engine commits the
   * batch that finished it: true while something is derived from the end state (a hybrid's next
   * source and where it starts). A driver that dies between that commit and a later write would
   * otherwise derive it from less than was read.
   */
  def keepsEndState: Boolean = false

  /** Figures for query progress, merged into the source's metrics. */
  def metrics: Map[String, String] = Map.empty

  /**
   * Figures for query progress from how far each split is behind: per split whose available
   * position the last planning asked, that position minus where the last batch ended (negative
   * only if the system lost data already read). Merged into the source's metrics; no call that
   * reaches a system. The Kafka source reports Spark's `*OffsetsBehindLatest` from it.
   */
  def backlogMetrics(behind: Seq[(SplitT, Long)]): Map[String, String] = Map.empty

  /** State to restore this enumerator from; taken at every batch boundary. */
  def snapshotState(): StateT

  /**
   * What the enumerator knows once its source is finished, for the next source of a hybrid.
   * `finished` holds the final progress of every split.
   */
  def endState(finished: Seq[SplitProgress]): EnumeratorEndState =
    EnumeratorEndState(finished)

  override def close(): Unit = ()
}

/**
 * What readers reached in a split: the next position, the largest event time, the records read,
 * and reader-specific counters (see `SplitReader.splitCounters`).
 */
final case class SplitProgress(
    splitId: String,
    position: Long,
    maxEventTime: Option[Long],
    records: Long,
    counters: Map[String, Long] = Map.empty)

object SplitProgress {
  def maxCounters(a: Map[String, Long], b: Map[String, Long]): Map[String, Long] =
    (a.keySet ++ b.keySet).map(k => k -> math.max(a.getOrElse(k, 0L), b.getOrElse(k, 0L))).toMap
  def sumCounters(a: Map[String, Long], b: Map[String, Long]): Map[String, Long] =
    (a.keySet ++ b.keySet).map(k => k -> (a.getOrElse(k, 0L) + b.getOrElse(k, 0L))).toMap
}

/**
 * The end state of a finished source, handed to the factory of the next source in a hybrid.
 * Connectors add what they know (e.g. the files read) through `details`.
 */
final case class EnumeratorEndState(
    splits: Seq[SplitProgress],
    details: Map[String, String] = Map.empty) {

  /** The largest event time any split held, if the source knew event times. */
  def maxEventTime: Option[Long] = splits.flatMap(_.maxEventTime).reduceOption(_ max _)
}

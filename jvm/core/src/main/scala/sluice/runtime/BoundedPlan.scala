package sluice.runtime

import scala.collection.mutable

import sluice.api._
import sluice.errors.SluiceError

/**
 * A bounded source planned as one batch (`spark.read`, FLIP-27's batch mode): every split its
 * enumerator will ever discover, each read from its start to its stop. Nothing is checkpointed
 * and nothing waits for data: what a streaming query would read from the source by the time it
 * ended is read at once.
 *
 * An enumerator may hold splits back until earlier ones are read (a hybrid discovers its next
 * member's splits only once it sees the active member finished). Planning tells it, as readers
 * would, that every split known so far was read to its stop, and asks again until it will
 * discover no more. The splits' stops must therefore not depend on what readers find: a hybrid
 * whose next member is derived from the previous one's end is refused by the binding before.
 */
object BoundedPlan {

  /** Discoveries in a row that may find nothing new before an enumerator that never finishes is given up on. */
  private val MaxEmptyDiscoveries = 3

  /** The non-empty range `[start, stop)` of every split of `source`, in discovery order. */
  def ranges(source: Source[SourceSplit, Any]): Seq[SplitRange[SourceSplit]] = {
    if (source.boundedness != Boundedness.Bounded) {
      throw SluiceError.config(
        s"Sluice: the ${source.sourceType} source is unbounded; only a bounded " +
          "source can be read as a batch.")
    }
    val splits = mutable.LinkedHashMap[String, SourceSplit]()
    val enumerator = source.createEnumerator()
    try {
      def discover(): Boolean = {
        val fresh = enumerator.discoverSplits().filterNot(s => splits.contains(s.splitId))
        fresh.foreach(s => splits(s.splitId) = s)
        fresh.nonEmpty
      }
      discover()
      var empty = 0
      while (!enumerator.noMoreSplits) {
        enumerator.progressUpdated(
          splits.values.toSeq.map(s => s -> SplitProgress(s.splitId, stop(source, s), None, 0L)))
        if (discover()) empty = 0
        else {
          empty += 1
          if (empty >= MaxEmptyDiscoveries) {
            throw new IllegalStateException(
              s"Sluice: the enumerator of the bounded ${source.sourceType} source " +
                s"still expects splits after discovering ${splits.size} and finding no new ones $empty times in a row; " +
                "a batch read cannot wait for more. This is a bug in the connector's enumerator.")
          }
        }
      }
    } finally enumerator.close()
    splits.values.toSeq
      .map(s => SplitRange(s, s.startPosition, stop(source, s)))
      .filterNot(_.isEmpty)
  }

  private def stop(source: Source[SourceSplit, Any], split: SourceSplit): Long =
    split.stopPosition.getOrElse(
      throw new IllegalStateException(
        s"Sluice: split ${split.splitId} of the bounded ${source.sourceType} source has no stop position; " +
          "a batch read cannot tell where it ends. This is a bug in the connector."))
}

package sluice.spark

import scala.util.hashing.MurmurHash3

import sluice.api.{SourceSplit, SplitRange}

/**
 * Preferred executors of a task, from the locality keys of its ranges' splits
 * (`SourceSplit.localityKey`): each key hashes onto one executor of the sorted list, so that the
 * ranges of one split go to the same executor batch after batch while the executors stay the
 * same, and different keys spread over the executors. A task of several keyed ranges prefers each
 * of their executors (Spark runs it on any one of them). A preference only: Spark may still run
 * the task elsewhere (after `spark.locality.wait`), and the reader then starts over there.
 */
object TaskLocality {
  def preferred(task: Seq[SplitRange[SourceSplit]], executors: IndexedSeq[String]): Seq[String] =
    if (executors.isEmpty) Nil
    else task.flatMap(_.split.localityKey).distinct.map(executorOf(_, executors)).distinct

  /**
   * `key`'s executor. The hash is the same in every JVM (a restarted driver chooses as before) and
   * mixes all of the key: paths of one folder differ only in a few characters.
   */
  def executorOf(key: String, executors: IndexedSeq[String]): String =
    executors(Math.floorMod(MurmurHash3.stringHash(key), executors.size))
}

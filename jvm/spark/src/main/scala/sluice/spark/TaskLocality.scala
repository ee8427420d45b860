package sluice.spark

import scala.util.hashing.MurmurHash3

import sluice.api.{SourceSplit, SplitRange}

/**
 * Preferred executors of a task, from the locality keys of its ranges' splits
 * (`SourceSplit.localityKey`): each key hashes onto one executor of the sorted list, so that the
 * ranges of one split go to the same executor batch after batch while the executors stay the
 * same, and different keys spread over the executors. Packing never puts ranges that prefer
 * different executors in one task (`TaskPacking.pack`), so a task prefers the one executor its
 * ranges name (unkeyed ranges prefer none). A preference only: Spark
 * may still run the task elsewhere (after `spark.locality.wait`), and the reader then starts over
 * there.
 */
object TaskLocality {
  def preferred(task: Seq[SplitRange[SourceSplit]], executors: IndexedSeq[String]): Seq[String] =
    task.flatMap(r => placeOf(r.split, executors)).distinct

  /** Where `split` is best read: its key's executor; None without a key or without executors (local mode). */
  def placeOf(split: SourceSplit, executors: IndexedSeq[String]): Option[String] =
    if (executors.isEmpty) None else split.localityKey.map(executorOf(_, executors))

  /**
   * `key`'s executor. The hash is the same in every JVM (a restarted driver chooses as before) and
   * mixes all of the key: paths of one folder differ only in a few characters.
   */
  def executorOf(key: String, executors: IndexedSeq[String]): String =
    executors(Math.floorMod(MurmurHash3.stringHash(key), executors.size))
}

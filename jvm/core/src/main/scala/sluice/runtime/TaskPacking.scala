package sluice.runtime

import scala.collection.mutable

import sluice.api.{SourceSplit, SplitRange}

/**
 * Groups a batch's split ranges into the engine's tasks. Every task has a fixed cost (scheduling,
 * a reader, a consumer to position), so more tasks than the engine can run at once buy nothing:
 * with more ranges than `slots`, they are packed into `slots` tasks of about equal size — largest
 * first, each into the task with the least so far (as Spark's file source packs small files into
 * partitions). With at most `slots` ranges, each is a task of its own, as before. Ranges best read
 * in one place (an executor that keeps state for their split) are packed only with ranges of that
 * place, so that their task can run there.
 */
object TaskPacking {

  /**
   * Spark's `minPartitions`: with fewer ranges than `minTasks`, divides the divisible ones (see
   * `SourceSplit.divisible`) into parts of about equal size, so that the batch has about
   * `minTasks` tasks — one per part, a large split's backlog (a Kafka partition's) read by
   * several cores at once.
   * Parts of one range are contiguous and cover it exactly; each is at least one position.
   */
  def divide[S <: SourceSplit](
      ranges: Seq[SplitRange[S]],
      minTasks: Int,
      size: SplitRange[S] => Double): Seq[Seq[SplitRange[S]]] = {
    val divisible = ranges.filter(r => r.split.divisible && r.until - r.from > 1)
    if (ranges.size >= minTasks || divisible.isEmpty) return ranges.map(Seq(_))
    val parts = mutable.Map(divisible.map(r => r -> 1): _*)
    // one more part at a time, to the range whose parts are largest (ties: by split id, stable)
    var wanted = minTasks - ranges.size
    var candidates = parts.filter { case (r, n) => n < r.until - r.from }
    while (wanted > 0 && candidates.nonEmpty) {
      val (r, n) = candidates.maxBy { case (r, n) => (size(r) / n, r.split.splitId) }
      parts(r) = n + 1
      if (n + 1 >= r.until - r.from) candidates -= r else candidates(r) = n + 1
      wanted -= 1
    }
    ranges
      .flatMap { r =>
        val n = parts.getOrElse(r, 1)
        val length = r.until - r.from
        // part i starts at from + i * (length / n) + min(i, length % n): exact, and no overflow
        def start(i: Int) = r.from + i * (length / n) + math.min(i.toLong, length % n)
        (0 until n).map(i => SplitRange(r.split, start(i), start(i + 1)))
      }
      .map(Seq(_))
  }

  /**
   * @param size a range's estimated records (positions over positions per record)
   * @param placeOf where a range is best read (an executor that keeps state for its split), if
   *   anywhere. A task runs in one place, so ranges of different places never share a task: each
   *   place (and the ranges of none) gets tasks of its own, one at least, and the rest of the
   *   slots go where there is most to read per task.
   * @return the tasks, each a list of ranges; every range in exactly one task
   */
  def pack[S <: SourceSplit](
      ranges: Seq[SplitRange[S]],
      slots: Int,
      size: SplitRange[S] => Double,
      placeOf: SplitRange[S] => Option[String] = (_: SplitRange[S]) => None)
      : Seq[Seq[SplitRange[S]]] = {
    if (ranges.size <= math.max(1, slots)) return ranges.map(Seq(_))
    val groups =
      ranges.groupBy(placeOf).toSeq.sortBy(_._1).map(_._2) // sorted: the same tasks every time
    if (groups.size == 1) return balanced(ranges, slots, size)
    val load = groups.map(_.map(r => math.max(1.0, size(r))).sum)
    val share = Array.fill(groups.size)(1)
    var left = slots - groups.size
    var growing = groups.indices.filter(i => groups(i).size > 1)
    while (left > 0 && growing.nonEmpty) {
      val i = growing.maxBy(i => (load(i) / share(i), -i))
      share(i) += 1
      left -= 1
      growing = growing.filter(i => share(i) < groups(i).size)
    }
    groups.indices.flatMap(i => balanced(groups(i), share(i), size))
  }

  /** Largest first, each into the task with the least so far; with no more ranges than tasks, one each. */
  private def balanced[S <: SourceSplit](
      ranges: Seq[SplitRange[S]],
      slots: Int,
      size: SplitRange[S] => Double): Seq[Seq[SplitRange[S]]] = {
    if (ranges.size <= math.max(1, slots)) return ranges.map(Seq(_))
    // ties by split id, so the same ranges always give the same tasks
    val ordered = ranges.sortBy(r => (-size(r), r.split.splitId))
    val tasks = Array.fill(slots)(Vector.empty[SplitRange[S]])
    val load = Array.fill(slots)(0.0)
    ordered.foreach { r =>
      val least = load.indices.minBy(i => (load(i), i))
      tasks(least) :+= r
      load(least) += math.max(1.0, size(r))
    }
    tasks.toSeq.filter(_.nonEmpty)
  }
}

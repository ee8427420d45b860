package sluice.runtime

import sluice.api.{SourceSplit, SplitRange}

/**
 * Groups a batch's split ranges into the engine's tasks. Every task has a fixed cost (scheduling,
 * a reader, a consumer to position), so more tasks than the engine can run at once buy nothing:
 * with more ranges than `slots`, they are packed into `slots` tasks of about equal size — largest
 * first, each into the task with the least so far (as Spark's file source packs small files into
 * partitions). With at most `slots` ranges, each is a task of its own, as before.
 */
object TaskPacking {

  /**
   * @param size a range's estimated records (positions over positions per record)
   * @return the tasks, each a list of ranges; every range in exactly one task
   */
  def pack[S <: SourceSplit](ranges: Seq[SplitRange[S]], slots: Int, size: SplitRange[S] => Double): Seq[Seq[SplitRange[S]]] = {
    if (ranges.size <= math.max(1, slots)) return ranges.map(Seq(_))
    // largest first; ties by split id, so the same ranges always give the same tasks
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

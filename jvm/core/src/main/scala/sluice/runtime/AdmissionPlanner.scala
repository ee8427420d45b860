package sluice.runtime

/**
 * Splits a per-batch record budget across splits in proportion to their backlog (as Spark's
 * Kafka source does with maxOffsetsPerTrigger), exactly: the shares add up to the budget.
 */
object AdmissionPlanner {

  /** Bytes per record assumed for byte-positioned splits before any of them was read. */
  val DefaultBytesPerRecord = 100.0

  /**
   * Shares a record budget among splits whose backlog is in positions, `positionsPerRecord`
   * converting between the two; returns position steps per split. Exact where positions count
   * records; an estimate for byte positions (the budget holds on average, not per batch).
   */
  def shareRecords(
      backlog: Seq[(String, Long)],
      budget: Long,
      positionsPerRecord: String => Double): Map[String, Long] = {
    val inRecords = backlog.map { case (id, b) =>
      id -> math.ceil(b / positionsPerRecord(id)).toLong
    }
    val positions = backlog.toMap // by id: a search per split made planning quadratic in splits
    share(inRecords, budget).map { case (id, records) =>
      id -> math.min(positions(id), math.ceil(records * positionsPerRecord(id)).toLong)
    }
  }

  /** `backlog` per split id; returns how many records each split may read this batch. */
  def share(backlog: Seq[(String, Long)], budget: Long): Map[String, Long] = {
    val positive = backlog.filter(_._2 > 0)
    val total = positive.map(b => BigInt(b._2)).sum
    if (total <= budget) return positive.toMap
    val base = positive.map { case (id, b) => id -> (BigInt(b) * budget / total).toLong }
    var remainder = budget - base.map(_._2).sum
    // Hand out what rounding left over, one record at a time, to the splits with most backlog left.
    val order = positive.zip(base).sortBy { case ((id, b), (_, granted)) => (-(b - granted), id) }
    val extra = order.map { case ((id, b), (_, granted)) =>
      val more = if (remainder > 0 && b > granted) 1L else 0L
      remainder -= more
      id -> (granted + more)
    }
    extra.toMap
  }
}

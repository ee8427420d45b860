package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

/**
 * Batch planning under alignment, over splits whose record `k` has event time
 * `base + k * step` (an exact index, as Kafka's timestamps or the generator give).
 */
class HorizonPlannerSuite extends AnyFunSuite {
  import HorizonPlannerSuite._

  private val Minute = 60000L
  private val Hour = 60 * Minute

  private class Index(series: Seq[Series], from: Map[String, Long]) extends TimeIndex {
    override def positionsBefore(t: Long): Map[String, Long] =
      series.map(s => s.id -> math.max(from(s.id), s.firstAtOrAfter(t))).toMap
  }

  private def toPlan(s: Series, from: Long, idle: Boolean = false) = SplitToPlan(
    s.id,
    from,
    s.records,
    maxEventTime = if (from == 0) None else Some(s.timeOf(from - 1)),
    latestEventTime = if (from < s.records) Some(s.timeOf(s.records - 1)) else None,
    idle = idle,
    finished = from >= s.records,
    firstEventTime = if (from == 0 && s.records > 0) Some(s.timeOf(0)) else None)

  private def plan(
      series: Seq[Series],
      at: Map[String, Long],
      driftMs: Long,
      budget: Option[Long],
      others: Option[Long] = None,
      mode: AlignmentMode = AlignmentMode.SplitsByIndex,
      oooMs: Long = 0): SourcePlan =
    HorizonPlanner.plan(
      series.map(s => toPlan(s, at(s.id))),
      _ - oooMs,
      oooMs,
      driftMs,
      others,
      budget,
      Some(new Index(series, at)),
      mode,
      ids =>
        series
          .filter(s => ids.contains(s.id) && at(s.id) < s.records)
          .map(s => s.id -> s.timeOf(at(s.id)))
          .toMap)

  /** Plans batches until everything is read; returns each batch's end positions. */
  private def runAll(
      series: Seq[Series],
      driftMs: Long,
      budget: Option[Long]): Seq[Map[String, Long]] = {
    var at = series.map(_.id -> 0L).toMap
    val batches = Seq.newBuilder[Map[String, Long]]
    var guard = 0
    while (series.exists(s => at(s.id) < s.records)) {
      val p = plan(series, at, driftMs, budget)
      assert(p.ends != at, s"no progress at $at")
      at = p.ends
      batches += at
      guard += 1
      assert(guard < 10000)
    }
    batches.result()
  }

  private def watermarks(series: Seq[Series], at: Map[String, Long]): Seq[Long] =
    series.filter(s => at(s.id) > 0 && at(s.id) < s.records).map(s => s.timeOf(at(s.id) - 1))

  // Partition 0's backlog starts 24 h back, the seven others' 2 h back; one record a minute each.
  private val now = 100 * 24 * Hour
  private val skewed = Series("p0", now - 24 * Hour, Minute, 24 * 60) +:
    (1 to 7).map(i => Series(s"p$i", now - 2 * Hour, Minute, 2 * 60))

  test("skewed catch-up under a read limit: every batch ends aligned, and batches are full") {
    val batches = runAll(skewed, 5 * Minute, Some(200))
    batches.foreach { at =>
      val wms = watermarks(skewed, at)
      if (wms.nonEmpty) assert(wms.max - wms.min <= 5 * Minute + Minute, s"spread at $at")
    }
    val total = skewed.map(_.records).sum
    // the read limit is used: hardly more batches than total / limit
    assert(batches.size <= total / 200 + 3, s"${batches.size} batches")
    // the lagging partition alone is read until it reaches the others' start
    // (to within the search's tolerance of the limit: each further look-up costs a request)
    val first = batches.head
    val full = 200 - (200 * HorizonPlanner.SearchTolerance).toLong
    assert(
      first("p0") >= full && first("p0") <= 200 && (1 to 7).forall(i => first(s"p$i") == 0),
      first)
  }

  test("a read limit on evenly spread records finds its horizon in a few index look-ups") {
    // 8 partitions, 12 h of one record a second each: a binary search over the 12 hours in
    // milliseconds would ask the index about 25 times per batch, each a request to the system
    val series = (0 until 8).map(i => Series(s"p$i", now - 12 * Hour + i * 100, 1000, 12 * 3600))
    val at = series.map(s => s.id -> 3600L).toMap
    var lookups = 0
    val index = new Index(series, at) {
      override def positionsBefore(t: Long): Map[String, Long] = {
        lookups += 1; super.positionsBefore(t)
      }
    }
    val p = HorizonPlanner.plan(
      series.map(s => toPlan(s, at(s.id))),
      identity,
      0,
      5 * Minute,
      None,
      Some(2000L),
      Some(index),
      AlignmentMode.SplitsByIndex)
    val read = series.map(s => p.ends(s.id) - at(s.id)).sum
    assert(read <= 2000 && read >= 2000 - 2000 * HorizonPlanner.SearchTolerance, s"read $read")
    assert(lookups <= 6, s"$lookups index look-ups")
  }

  test(
    "a group's rounds on steady data ask the index about three times each, and keep every batch aligned and full") {
    // group_join's shape: two sources of 4 partitions over 12 h, one four times denser, one read
    // limit each. A round plans each member up to three times against different frontiers; what
    // the index answered earlier in the round, and the density the last search found, spare most
    // look-ups (each is a request to the broker).
    def source(name: String, step: Long) =
      (0 until 4).map(i =>
        Series(s"$name$i", now - 12 * Hour + i * step / 4, step, 12 * Hour / step))
    val members = Seq("sparse" -> source("s", 4000), "dense" -> source("d", 1000))
    val all = members.flatMap(_._2)
    var at = all.map(_.id -> 0L).toMap
    val hints = scala.collection.mutable.Map[String, Double]()
    val lookupsPerRound = Seq.newBuilder[Int]
    var lookups = 0
    while (all.exists(s => at(s.id) < s.records)) {
      lookups = 0
      val prepared = members.map { case (name, series) =>
        val start = at
        val answers = scala.collection.mutable.Map[Long, Map[String, Long]]()
        val index = new Index(series, start) {
          override def positionsBefore(t: Long) =
            answers.getOrElseUpdate(t, { lookups += 1; super.positionsBefore(t) })
          override def answered: Iterable[Long] = answers.keys
        }
        name -> new PreparedMemberBatch {
          override def plan(others: Option[Long]): SourcePlan = {
            val p = HorizonPlanner.plan(
              series.map(s => toPlan(s, start(s.id))),
              identity,
              0,
              5 * Minute,
              others,
              Some(2000L),
              Some(index),
              AlignmentMode.SplitsByIndex,
              msPerRecordHint = hints.get(name))
            p.msPerRecord.foreach(hints(name) = _)
            p
          }
        }
      }
      val plans = AlignmentGroup.planTogether(prepared, fixed = Nil)
      val next = plans.values.flatMap(_.ends).toMap
      val dense = members(1)._2
      val denseRead = dense.map(s => next(s.id) - at(s.id)).sum
      if (dense.exists(s => next(s.id) < s.records))
        assert(denseRead >= 2000 * (1 - HorizonPlanner.SearchTolerance), s"dense read $denseRead")
      val wms = watermarks(all, next)
      if (wms.nonEmpty) assert(wms.max - wms.min <= 5 * Minute + 4000, s"spread at $next")
      at = next
      lookupsPerRound += lookups
    }
    val rounds = lookupsPerRound.result()
    assert(rounds.size <= 12 * 3600 * 4 / 2000 + 2, s"${rounds.size} rounds")
    assert(rounds.tail.sorted.apply(rounds.size / 2) <= 3, s"look-ups per round: $rounds")
    assert(rounds.sum <= 4 * rounds.size, s"look-ups per round: $rounds")
  }

  test("without a read limit a batch reads up to the slowest split's end plus the drift") {
    val p = plan(skewed, skewed.map(_.id -> 0L).toMap, 5 * Minute, None)
    // every split reaches "now - 1 min": that plus the drift is the limit, and nothing is cut
    assert(p.limit.contains(now - Minute + 5 * Minute))
    assert(p.ends("p0") == 24 * 60)
    (1 to 7).foreach(i => assert(p.ends(s"p$i") == 120))
  }

  test("a split that has run ahead is held back until the others are within the drift") {
    val series = Seq(Series("slow", 0, Minute, 100), Series("fast", 0, Minute, 100))
    val p = plan(series, Map("slow" -> 10, "fast" -> 60), 5 * Minute, Some(20))
    assert(p.heldBack == Set("fast"))
    assert(p.ends("fast") == 60)
    assert(p.ends("slow") == 30) // the whole budget goes to the split behind
  }

  test("out-of-orderness moves the cut by the same amount as the watermark") {
    val series = Seq(Series("a", 0, Minute, 100), Series("b", 50 * Minute, Minute, 100))
    val at = Map("a" -> 0L, "b" -> 0L)
    // within one source it cancels out: b reads up to a's reach (99 min), watermarks then equal
    assert(plan(series, at, 0, None).ends("b") == 50)
    assert(plan(series, at, 0, None, oooMs = 3 * Minute).ends("b") == 50)
    // against another member's watermark (20 min) it does not: event times up to 20 (+ 3) min
    assert(plan(series, at, 0, None, others = Some(20 * Minute)).ends("a") == 21)
    assert(
      plan(series, at, 0, None, others = Some(20 * Minute), oooMs = 3 * Minute).ends("a") == 24)
  }

  test("an idle split constrains nobody; all idle means no limit and no overflow") {
    val series = Seq(Series("idle", 0, Minute, 5), Series("busy", Long.MaxValue / 2, Minute, 10))
    val p = HorizonPlanner.plan(
      Seq(toPlan(series(0), 5), toPlan(series(1), 0)),
      identity,
      0,
      5 * Minute,
      None,
      None,
      Some(new Index(series, Map("idle" -> 5, "busy" -> 0))),
      AlignmentMode.SplitsByIndex)
    assert(p.ends("busy") == 10) // the finished split does not hold it back
    val allIdle = HorizonPlanner.plan(
      Seq(toPlan(series(0), 2, idle = true)),
      identity,
      0,
      Long.MaxValue,
      None,
      None,
      Some(new Index(series.take(1), Map("idle" -> 2))),
      AlignmentMode.SplitsByIndex)
    assert(allIdle.limit.isEmpty && allIdle.frontier.isEmpty)
    assert(allIdle.ends("idle") == 5)
  }

  test("a split with nothing to read and no watermark blocks nobody") {
    val series = Seq(Series("empty", 0, Minute, 0), Series("data", 10 * Hour, Minute, 30))
    val p = plan(series, Map("empty" -> 0, "data" -> 0), Minute, None)
    assert(p.ends("data") == 30)
    assert(p.frontier.contains(10 * Hour + 29 * Minute))
  }

  test("another member's frontier caps the source; without one it reads freely") {
    val series = Seq(Series("a", 0, Minute, 100))
    val capped = plan(series, Map("a" -> 0), 5 * Minute, None, others = Some(20 * Minute))
    assert(capped.limit.contains(25 * Minute))
    assert(capped.ends("a") == 26) // event times 0..25 min
    assert(plan(series, Map("a" -> 0), 5 * Minute, None).ends("a") == 100)
  }

  test("the split that sets the minimum is named, unless another member's frontier set it") {
    val series = Seq(Series("slow", 0, Minute, 100), Series("fast", 0, Minute, 200))
    val at = Map("slow" -> 10L, "fast" -> 60L)
    Seq(AlignmentMode.SplitsByIndex, AlignmentMode.SplitsByWatermark).foreach { mode =>
      val own = plan(series, at, 5 * Minute, Some(20), mode = mode)
      assert(own.minimumSplit.contains("slow"), mode)
      // the limit is that split's watermark + drift: where it can reach (by index; 99 min) or
      // where it is (by watermark; 9 min)
      val slowAt = if (mode == AlignmentMode.SplitsByIndex) 99L else 9L
      assert(own.limit.contains(series(0).timeOf(slowAt) + 5 * Minute), mode)
      // a lower frontier of another member sets the minimum: none of this source's splits did
      val others = plan(series, at, 5 * Minute, Some(20), others = Some(2 * Minute), mode = mode)
      assert(others.limit.contains(7 * Minute) && others.minimumSplit.isEmpty, mode)
    }
    // aligned as a whole, the limit comes from the other members only
    assert(
      plan(
        series,
        at,
        5 * Minute,
        None,
        others = Some(2 * Minute),
        mode = AlignmentMode.WholeSource).minimumSplit.isEmpty)
  }

  test("a read limit below the records of one instant still makes progress") {
    val series = Seq(Series("a", 0, 0, 50), Series("b", 0, 0, 50)) // all records at the same time
    val p = plan(series, Map("a" -> 0, "b" -> 0), Minute, Some(10))
    assert(p.ends.values.sum == 10)
  }

  test("a source whose reader cannot pause splits is held back only as a whole") {
    val series = Seq(Series("a", 0, Minute, 100), Series("b", 50 * Minute, Minute, 100))
    val at = Map("a" -> 40L, "b" -> 10L)
    val ahead = plan(
      series,
      at,
      5 * Minute,
      None,
      others = Some(10 * Minute),
      mode = AlignmentMode.WholeSource)
    assert(ahead.ends == at) // its slowest split (39 min) is past 10 + 5 min
    val behind = plan(
      series,
      at,
      5 * Minute,
      None,
      others = Some(60 * Minute),
      mode = AlignmentMode.WholeSource)
    assert(behind.ends == Map("a" -> 100L, "b" -> 100L)) // no per-split cut
  }

  test("without an index, a split whose watermark is above the limit gets no range") {
    val series = Seq(Series("a", 0, Minute, 100), Series("b", 0, Minute, 100))
    val at = Map("a" -> 10L, "b" -> 50L)
    val p = HorizonPlanner.plan(
      series.map(s => toPlan(s, at(s.id)).copy(latestEventTime = None)),
      identity,
      0,
      5 * Minute,
      None,
      None,
      None,
      AlignmentMode.SplitsByWatermark)
    assert(p.limit.contains(14 * Minute))
    assert(p.heldBack == Set("b") && p.ends("a") == 100)
  }

  test(
    "a cut never stalls: a split within the limit whose next record lies beyond the horizon reads up to it") {
    // another member, also waiting, sits at 0; this split read record 0 (time 0), its next is at 30 min
    val sparse = Seq(Series("a", 0, 30 * Minute, 10))
    val p = plan(sparse, Map("a" -> 1L), 5 * Minute, None, others = Some(0L))
    assert(p.limit.contains(5 * Minute))
    assert(p.ends("a") == 2) // the 30-min record, as Flink would emit it before pausing
    // a split above the limit still waits
    val ahead = plan(sparse, Map("a" -> 3L), 5 * Minute, None, others = Some(0L))
    assert(ahead.ends("a") == 3 && ahead.heldBack == Set("a"))
  }

  test("a split let through a stall still keeps to the read limit") {
    // 50 records at one instant, 30 min after where the split is; another member holds the limit at 0
    val burst = Seq(Series("a", 30 * Minute, 0, 50))
    val at = Map("a" -> 0L)
    val p = HorizonPlanner.plan(
      Seq(toPlan(burst.head, 0).copy(maxEventTime = Some(0L), firstEventTime = None)),
      identity,
      0,
      5 * Minute,
      Some(0L),
      Some(10),
      Some(new Index(burst, at)),
      AlignmentMode.SplitsByIndex,
      _ => Map("a" -> 30 * Minute))
    assert(p.ends("a") == 10)
  }

  test("a split read for the first time without a reach still places its source for the others") {
    val noReach = SplitToPlan(
      "f",
      0,
      100,
      None,
      None,
      idle = false,
      finished = false,
      firstEventTime = Some(7 * Minute))
    val p = HorizonPlanner.plan(
      Seq(noReach),
      identity,
      0,
      Minute,
      None,
      None,
      None,
      AlignmentMode.SplitsByWatermark)
    assert(p.ends("f") == 100)
    assert(p.frontier.contains(7 * Minute))
  }

  /**
   * A Parquet-like index: each split is one block (a row group) known only by its smallest and
   * largest event time, however far it was read; it answers at the block's boundaries.
   */
  private class BlockIndex(series: Seq[Series], from: Map[String, Long]) extends TimeIndex {
    override val exact = false
    private def block(t: Long, whole: Series => Boolean) =
      series.map(s => s.id -> (if (whole(s)) s.records else from(s.id))).toMap
    override def positionsBefore(t: Long): Map[String, Long] =
      block(t, s => s.timeOf(s.records - 1) < t)
    override def positionsThrough(t: Long): Map[String, Long] = block(t, s => s.timeOf(0) < t)
  }

  private def planBlocks(
      series: Seq[Series],
      at: Map[String, Long],
      driftMs: Long,
      budget: Option[Long],
      others: Option[Long]): SourcePlan =
    HorizonPlanner.plan(
      series.map(s => toPlan(s, at(s.id))),
      identity,
      0,
      driftMs,
      others,
      budget,
      Some(new BlockIndex(series, at)),
      AlignmentMode.SplitsByIndex,
      ids =>
        series
          .filter(s => ids.contains(s.id) && at(s.id) < s.records)
          .map(s => s.id -> s.timeOf(0))
          .toMap)

  // one row group of 1000 rows a second apart; another member stands at 600 s, the drift is 10 s
  private val rowGroup = Seq(Series("rg", 0, 1000, 1000))

  test(
    "an inexact index reads a row group straddling the horizon whole, and places it at its largest event time") {
    val p = planBlocks(rowGroup, Map("rg" -> 0L), 10000, None, others = Some(600000L))
    assert(p.limit.contains(610000L))
    // not cut inside the row group (where an exact index cuts: rows 0..610 s), not held to one row
    assert(p.ends("rg") == 1000)
    // the others align to where the split really is after the batch: the row group's largest event time
    assert(p.frontier.contains(999000L))
    assert(p.heldBack.isEmpty)
    val exact = plan(rowGroup, Map("rg" -> 0L), 10000, None, others = Some(600000L))
    assert(exact.ends("rg") == 611 && exact.frontier.contains(610000L))
  }

  test(
    "an inexact index cut inside a row group by the read limit places it where it stood, not at the horizon") {
    val p = planBlocks(rowGroup, Map("rg" -> 0L), 10000, Some(100), others = Some(600000L))
    assert(p.ends("rg") == 100) // the read limit holds
    // rows 0..99 s were read, but the index cannot tell: its first row's time is all that is sure
    assert(p.frontier.contains(0L))
    // read on from there, it stands at the largest event time read so far
    val next = planBlocks(rowGroup, Map("rg" -> 100L), 10000, Some(100), others = Some(600000L))
    assert(next.ends("rg") == 200 && next.frontier.contains(99000L))
  }

  test("an inexact index keeps a partly read row group above the limit paused") {
    // read up to 700 s, above the others' 600 s + 10 s: its row group's smallest time (0) is stale
    val p = planBlocks(rowGroup, Map("rg" -> 701L), 10000, None, others = Some(600000L))
    assert(p.ends("rg") == 701 && p.heldBack == Set("rg"))
    assert(p.frontier.contains(700000L))
  }

  test("without any event time to search by, the read limit still holds") {
    val blind = Seq("x", "y").map(id =>
      SplitToPlan(id, 0, 1000, None, None, idle = false, finished = false))
    val p = HorizonPlanner.plan(
      blind,
      identity,
      0,
      Minute,
      None,
      Some(100),
      Some(new TimeIndex { def positionsBefore(t: Long) = Map("x" -> 1000L, "y" -> 1000L) }),
      AlignmentMode.SplitsByIndex)
    assert(p.ends.values.sum == 100)
  }
}

private object HorizonPlannerSuite {
  final case class Series(id: String, base: Long, step: Long, records: Long) {
    def timeOf(k: Long): Long = base + k * step
    def firstAtOrAfter(t: Long): Long =
      if (t <= base) 0L
      else if (step == 0) records
      else math.min(records, (t - base + step - 1) / step)
  }
}

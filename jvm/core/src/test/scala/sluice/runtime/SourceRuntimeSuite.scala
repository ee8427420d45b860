package sluice.runtime

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.SourceSplit
import sluice.config.RecordLayout
import sluice.eventtime.{AlignmentSettings, EventTimeSettings}

/**
 * The driver runtime on its own: no SparkSession, no Spark. An engine is simulated the way
 * Spark's micro-batch engine drives the adapter: sources asked one after the other for their
 * next checkpoint, every planned range "read" and reported as tasks would, checkpoints kept in an
 * offset log, and restarts that rebuild every runtime from that log.
 */
class SourceRuntimeSuite extends AnyFunSuite {
  import PlanRequest._
  private val Minute = 60000L
  private val Drift = 5 * Minute

  private def settings(member: String, group: Option[String]) = RuntimeSettings(
    displayName = member,
    eventTime = EventTimeSettings(
      EventTimeSettings.Kind.BoundedOutOfOrderness,
      0,
      None,
      None,
      group.map(g => AlignmentSettings(g, Drift, 1000, None))),
    layout = RecordLayout.Full,
    latencyTracking = false,
    queryKey = "query",
    memberId = member)

  /** One query: its sources, its offset log and what each batch read. */
  private final class Engine(
      sources: Seq[(String, Seq[MemSplit])],
      limit: Option[Long],
      group: Option[String] = Some("g"),
      defaultLimit: Option[Option[Long]] = None) {
    val log = mutable.ArrayBuffer[Map[String, SourceCheckpoint]]()
    val read = mutable.ArrayBuffer[Map[String, Long]]() // records per member and batch
    private val splitsOf = sources.toMap
    var runtimes: Map[String, SourceRuntime] = Map.empty
    private var initial: Map[String, SourceCheckpoint] = Map.empty
    private var order: Seq[String] = sources.map(_._1)

    /** `unplaceable`: members whose next start cannot be found before they are asked (old checkpoints). */
    def start(
        askOrder: Seq[String] = sources.map(_._1),
        unplaceable: Set[String] = Set.empty): Unit = {
      runtimes.values.foreach(_.close())
      order = askOrder
      runtimes = sources.map { case (id, splits) =>
        id -> new SourceRuntime(
          new InMemorySource(splits).asInstanceOf[sluice.api.Source[SourceSplit, Any]],
          settings(id, group),
          new ProgressStore.InMemory,
          defaultLimit = BatchLimit(defaultLimit.getOrElse(limit)))
      }.toMap
      // as the binding does when it builds its streams: each is told where it starts next
      sources.map(_._1).filterNot(unplaceable).foreach { id =>
        runtimes(id).resumesAt(log.lastOption.map(_(id)).getOrElse(initialOf(id)))
      }
    }

    private def initialOf(id: String): SourceCheckpoint = initial.getOrElse(
      id, {
        val c = runtimes(id).start()
        initial += id -> c
        c
      })

    /** Plans one batch for every source in the engine's order, runs it, reports it; false when nothing was read. */
    def batch(): Boolean = {
      val starts = sources.map { case (id, _) =>
        id -> log.lastOption.map(_(id)).getOrElse(initialOf(id))
      }.toMap
      val ends =
        order
          .map(id => id -> runtimes(id).plan(BoundedRange(starts(id), BatchLimit(limit))))
          .toMap
      if (ends.forall { case (id, e) => e.positions == starts(id).positions }) return false
      log += ends
      read += ends.map { case (id, end) =>
        val ranges = runtimes(id).ranges(Some(starts(id)), end)
        runtimes(id).fold(ranges.map { r =>
          val s = r.split.asInstanceOf[MemSplit]
          SplitReport(
            s.splitId,
            r.from,
            r.until,
            Some(s.eventTime(r.until - 1)),
            r.until - r.from)
        })
        id -> ranges.map(r => r.until - r.from).sum
      }
      true
    }

    /** Where every split of every member stands after the last batch, in event time. */
    def watermarks: Map[String, Long] = log.last.flatMap { case (member, c) =>
      c.splits
        .filter(e =>
          e.position > 0 && e.position < splitsOf(member)
            .find(_.splitId == e.splitId)
            .get
            .records)
        .map(e =>
          s"$member/${e.splitId}" -> splitsOf(member)
            .find(_.splitId == e.splitId)
            .get
            .eventTime(e.position - 1))
    }
  }

  private def series(id: String, startMs: Long, stepMs: Long, records: Long) =
    MemSplit(id, startMs, stepMs, records)

  test("a source alone: plan, read, report, and the checkpoint replays the same ranges") {
    val e = new Engine(
      Seq("a" -> Seq(series("0", 0, 1000, 100), series("1", 0, 1000, 100))),
      limit = Some(50),
      group = None)
    e.start()
    assert(e.batch())
    assert(e.read.head("a") == 50)
    val checkpoint = e.log.head("a")
    val again =
      e.runtimes("a").ranges(None, checkpoint).map(r => (r.split.splitId, r.from, r.until))
    assert(again.map(r => r._3 - r._2).sum == 50)
    while (e.batch()) {}
    assert(e.read.map(_("a")).sum == 200, "every record read once")
    assert(e.runtimes("a").metrics(Some(e.log.last("a")))("recordsRead") == "200")
  }

  test(
    "splitProgress: per split, what was read, where the batch ended, how far it could be read, and the records between") {
    val e = new Engine(
      Seq("a" -> Seq(series("0", 0, 1000, 100), series("1", 0, 1000, 300))),
      limit = Some(200),
      group = None)
    e.start()
    assert(e.batch())
    val ends = e.log.last("a").byId
    val metrics = e.runtimes("a").metrics(Some(e.log.last("a")))
    // the read limit shares 200 records in proportion to backlog: 50 and 150
    assert(ends("0").position == 50 && ends("1").position == 150)
    assert(
      metrics("splitProgress") ==
        """[{"split":"0","records":50,"position":50,"available":100,"backlogRecords":50,"maxEventTimeMs":49000},""" +
        """{"split":"1","records":150,"position":150,"available":300,"backlogRecords":150,"maxEventTimeMs":149000}]""")
    assert(metrics("backlogRecords") == "200", "the per-split figures add up to the source's")
    assert(e.batch())
    val last = e.runtimes("a").metrics(Some(e.log.last("a")))("splitProgress")
    assert(
      last.contains(
        """"split":"0","records":100,"position":100,"available":100,"backlogRecords":0"""),
      last)
    assert(
      last.contains(
        """"split":"1","records":300,"position":300,"available":300,"backlogRecords":0"""),
      last)
    // once the next planning finds them finished, they leave the checkpoint and the list
    assert(!e.batch())
    val done = e.runtimes("a").metrics(Some(e.log.last("a")))
    assert(
      done("splitProgress") == "[]" && done("recordsRead") == "400" && done(
        "finishedSplits") == "2",
      done)
  }

  test(
    "a split read to its end leaves the checkpoint with the next batch; its records stay in the figures, also after a restart") {
    val (s0, s2) = (series("0", 0, 1000, 100), series("2", 200000, 1000, 50))
    val source = new InMemorySource(Seq(s0), later = Seq(Nil, Seq(s2)))
      .asInstanceOf[sluice.api.Source[SourceSplit, Any]]
    val store = new ProgressStore.InMemory
    def runtime() =
      new SourceRuntime(source, settings("s", None), store, defaultLimit = BatchLimit(None))

    /** Reads the batch as tasks would, and reports it; the splits read. */
    def read(r: SourceRuntime, start: SourceCheckpoint, end: SourceCheckpoint): Seq[String] = {
      val ranges = r.ranges(Some(start), end)
      r.fold(
        ranges.map(x =>
          SplitReport(
            x.split.splitId,
            x.from,
            x.until,
            Some(x.split.asInstanceOf[MemSplit].eventTime(x.until - 1)),
            x.until - x.from)))
      ranges.map(_.split.splitId)
    }
    val first = runtime()
    val initial = first.start()
    val batch0 = first.plan(BoundedRange(initial, BatchLimit(None)))
    assert(read(first, initial, batch0) == Seq("0"))
    val batch1 = first.plan(BoundedRange(batch0, BatchLimit(None)))
    def figures(r: SourceRuntime) = r.metrics(Some(batch1))
    assert(batch1.splits.map(_.splitId) == Seq("2"), "split 0 finished in batch 0's checkpoint")
    assert(batch1.finished == FinishedSplits(1, 100, Some(99000L), Map.empty))
    assert(read(first, batch0, batch1) == Seq("2"))
    // split 2 finished too: leaving the checkpoint alone makes no batch
    assert(first.plan(BoundedRange(batch1, BatchLimit(None))) eq batch1)
    first.restore(
      batch0
    ) // Spark commits a batch after planning the next: split 0 does not come back
    val before = figures(first)
    assert(
      before("recordsRead") == "150" && before("splits") == "2" && before(
        "finishedSplits") == "2",
      before)
    assert(
      before("maxEventTimeMs") == "249000" && !before("splitProgress").contains(
        """"split":"0""""),
      before)
    first.close()

    val second = runtime() // a restart from batch 1's checkpoint
    second.restore(batch1)
    assert(
      second.ranges(Some(batch0), batch1).map(_.split.splitId) == Seq("2"),
      "the replay reads what batch 1 read")
    assert(second.plan(BoundedRange(batch1, BatchLimit(None))) eq batch1, "nothing is read again")
    assert(figures(second) == before)
    second.close()
  }

  test("splitProgress is absent before a batch ran: nothing was consumed yet") {
    val e = new Engine(Seq("a" -> Seq(series("0", 0, 1000, 100))), limit = None, group = None)
    e.start()
    e.runtimes("a").start()
    assert(!e.runtimes("a").metrics(None).contains("splitProgress"))
  }

  test(
    "a finished split's end state is in the store when its report is folded, if something is derived from it") {
    // a store as slow as a checkpoint on object storage, written on the writer's thread
    final class SlowStore extends ProgressStore {
      @volatile var kept: Seq[sluice.api.SplitProgress] = Nil
      override def read(): Seq[sluice.api.SplitProgress] = kept
      override def write(progress: Seq[sluice.api.SplitProgress]): Unit = {
        Thread.sleep(300); kept = progress
      }
    }

    /** What the store holds when the report that finishes the split's only range is folded. */
    def keptWhenFolded(keepsEndState: Boolean): Seq[(String, Long, Option[Long])] = {
      val split = series("0", 0, 1000, 10)
      val store = new SlowStore
      val runtime = new SourceRuntime(
        new InMemorySource(Seq(split), keepsEndState)
          .asInstanceOf[sluice.api.Source[SourceSplit, Any]],
        settings("a", None),
        store,
        defaultLimit = BatchLimit(None))
      try {
        val start = runtime.start()
        val end = runtime.plan(BoundedRange(start, BatchLimit(None)))
        val range = runtime.ranges(Some(start), end).head
        assert((range.from, range.until) == (0L, 10L))
        // as Spark delivers a task's report: before the job, and so the batch's commit, completes
        runtime.fold(Seq(SplitReport("0", 0L, 10L, Some(split.eventTime(9)), 10L)))
        store.kept.map(p => (p.splitId, p.position, p.maxEventTime))
      } finally runtime.close()
    }
    // an end state something is derived from is kept before the fold returns...
    assert(keptWhenFolded(keepsEndState = true) == Seq(("0", 10L, Some(9000L))))
    // ...other progress is written in the writer's own time, not holding up Spark's scheduler
    assert(keptWhenFolded(keepsEndState = false).isEmpty)
  }

  test(
    "batch 0 replayed after a restart: the next batch is planned from batch 0's enumerator state, not the initial one") {
    // the initial checkpoint knows split a; planning batch 0 finds b, batch 1 finds c
    val a = series("a", 0, 1000, 10)
    val (b, c) = (series("b", 0, 1000, 10), series("c", 0, 1000, 10))
    val source = new InMemorySource(Seq(a), later = Seq(Seq(b), Seq(c)))
      .asInstanceOf[sluice.api.Source[SourceSplit, Any]]
    def runtime() = new SourceRuntime(
      source,
      settings("s", None),
      new ProgressStore.InMemory,
      defaultLimit = BatchLimit(None))
    val first = runtime()
    val initial = first.start()
    val batch0 = first.plan(BoundedRange(initial, BatchLimit(None)))
    assert(batch0.splits.map(_.splitId) == Seq("a", "b"))
    first.close() // the driver dies before batch 0 commits

    // a restart as Spark drives it: the initial offset (kept in the checkpoint folder) is restored,
    // batch 0 is replayed from it, then batch 1 is planned from batch 0's logged offset
    val second = runtime()
    second.restore(initial)
    assert(second.ranges(Some(initial), batch0).map(_.split.splitId) == Seq("a", "b"))
    val batch1 =
      try second.plan(BoundedRange(batch0, BatchLimit(None)))
      finally second.close()
    // planned from the initial state, the enumerator would find b again instead of c (a and b,
    // read to their end in batch 0, left the checkpoint)
    assert(batch1.splits.map(_.splitId) == Seq("c") && batch1.finished.count == 2)
  }

  test(
    "three members after a restart: every member with backlog reads in the first batch, and the bound holds") {
    val sources = Seq(
      "a" -> Seq(series("0", 0, 1000, 20000)), // one event a second
      "b" -> Seq(series("0", 0, 4000, 5000)), // four times sparser
      "c" -> Seq(series("0", 0, 250, 80000), series("1", 0, 500, 40000)))
    val e = new Engine(sources, limit = Some(2000))
    e.start()
    (1 to 3).foreach(_ => assert(e.batch()))
    e.start(askOrder = Seq("c", "b", "a")) // a restart, and Spark asking in another order
    assert(e.batch())
    assert(
      e.read.last.values.forall(_ > 0),
      s"a member with backlog read nothing after the restart: ${e.read.last}")
    while (e.batch()) {
      assert(e.read.last.values.count(_ > 0) >= 1)
      val wm = e.watermarks.values
      if (wm.nonEmpty)
        assert(wm.max - wm.min <= Drift + 2 * Minute, s"bound broken: ${e.watermarks}")
    }
    assert(e.read.map(_.values.sum).sum == 20000 + 5000 + 80000 + 40000, "every record read once")
  }

  test("from the very first batch, no member reads nothing because of the order it is asked in") {
    for (askOrder <- Seq(Seq("a", "b"), Seq("b", "a"))) {
      val e = new Engine(
        Seq("a" -> Seq(series("0", 0, 1000, 5000)), "b" -> Seq(series("0", 0, 4000, 5000))),
        limit = Some(500))
      e.start(askOrder)
      assert(e.batch())
      assert(e.read.head.values.forall(_ > 0), s"asked ${askOrder.mkString(",")}: ${e.read.head}")
      var batches = 1
      while (e.batch()) {
        batches += 1
        val ahead = e.read.last.filter(_._2 == 0).keys.toSeq
        // a member may wait only when it is ahead of the other by the drift, never for its turn
        ahead.foreach { id =>
          val others = e.watermarks.filterNot(_._1.startsWith(id + "/")).values
          val own = e.watermarks.filter(_._1.startsWith(id + "/")).values
          assert(
            others.isEmpty || own.isEmpty || own.min >= others.min,
            s"$id read nothing while behind: ${e.watermarks}")
        }
      }
      assert(e.read.map(_.values.sum).sum == 10000)
    }
  }

  test("a member with no data holds nobody back") {
    val e = new Engine(
      Seq("a" -> Seq(series("0", 0, 1000, 3000)), "empty" -> Seq(series("0", 0, 1000, 0))),
      limit = Some(500))
    e.start()
    while (e.batch()) {}
    assert(e.read.map(_("a")).sum == 3000)
    assert(e.read.map(_("empty")).sum == 0)
  }

  test("a member that finishes stops constraining the others") {
    // b ends after 10 minutes of event time; a goes on for an hour
    val e = new Engine(
      Seq("a" -> Seq(series("0", 0, 1000, 3600)), "b" -> Seq(series("0", 0, 1000, 600))),
      limit = Some(300))
    e.start()
    while (e.batch()) {}
    assert(e.read.map(_("a")).sum == 3600, "a read to its end past b's last event time")
    assert(e.read.map(_("b")).sum == 600)
  }

  test(
    "Spark asking with another read limit than a member's own: the others are planned late, never prepared twice") {
    // Trigger.Once passes "all available" while the sources' own limit is 500: every round's parts are
    // planned with 500 and refused, so each member after the first is planned late in the round
    val sources =
      Seq("a" -> Seq(series("0", 0, 1000, 3000)), "b" -> Seq(series("0", 0, 4000, 3000)))
    val e = new Engine(sources, limit = None, defaultLimit = Some(Some(500)))
    e.start()
    while (e.batch()) {
      val wm = e.watermarks.values
      if (wm.size > 1) assert(wm.max - wm.min <= Drift + 4000, s"bound broken: ${e.watermarks}")
    }
    assert(e.read.map(_.values.sum).sum == 6000, "every record read once")
    e.runtimes.foreach { case (id, rt) =>
      assert(
        rt.metrics(Some(e.log.last(id)))("recordsRead") == "3000",
        s"$id counted what it read")
    }
  }

  test(
    "a member that cannot be placed when the round opens is planned late: nobody waits for it") {
    val sources =
      Seq("a" -> Seq(series("0", 0, 1000, 3000)), "b" -> Seq(series("0", 0, 1000, 3000)))
    val e = new Engine(sources, limit = Some(200))
    e.start()
    assert(e.batch())
    e.start(unplaceable =
      Set("b")) // a restart on a checkpoint whose offsets do not name their member
    assert(e.batch())
    assert(e.read.last.values.forall(_ > 0), s"after the restart: ${e.read.last}")
    while (e.batch()) {}
    assert(e.read.map(_.values.sum).sum == 6000)
  }
}

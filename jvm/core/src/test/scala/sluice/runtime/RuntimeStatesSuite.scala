package sluice.runtime

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{Source, SourceSplit}
import sluice.config.RecordLayout
import sluice.eventtime.{AlignmentSettings, EventTimeSettings}

/**
 * Each event the engine sends `SourceRuntime` is one transition between its named states, and
 * what only looks leaves the state where it is. No SparkSession: the engine is these calls.
 */
class RuntimeStatesSuite extends AnyFunSuite {
  import PlanRequest._
  import RuntimeState._

  private def settings(group: Option[String] = None) = RuntimeSettings(
    displayName = "s",
    eventTime = EventTimeSettings(
      EventTimeSettings.Kind.BoundedOutOfOrderness,
      0,
      None,
      None,
      group.map(g => AlignmentSettings(g, 60000L, 1000, None))),
    layout = RecordLayout.Full,
    latencyTracking = false,
    queryKey = "states",
    memberId = "s")

  /** Two splits of 100 records, one unbounded (an open batch keeps it open). */
  private def runtime(group: Option[String] = None) = new SourceRuntime(
    new InMemorySource(Seq(MemSplit("0", 0, 1000, 100), MemSplit("1", 0, 1000, 100, false)))
      .asInstanceOf[Source[SourceSplit, Any]],
    settings(group),
    new ProgressStore.InMemory,
    defaultLimit = BatchLimit(None))

  private def within[T](r: SourceRuntime)(body: SourceRuntime => T): T =
    try body(r)
    finally r.close()

  test("built: Created, and no enumerator is asked anything") {
    within(runtime()) { r =>
      assert(r.state == Created)
      assert(r.metrics(None)("splits") == "0")
    }
  }

  test("start: Created -> Restored, every split at its start") {
    within(runtime()) { r =>
      val initial = r.start()
      assert(r.state == Restored)
      assert(initial.positions == Seq("0" -> 0L, "1" -> 0L))
    }
  }

  test(
    "restore: Created -> Restored from the checkpoint handed back; later ones keep the state") {
    val batch0 = within(runtime()) { r => r.plan(BoundedRange(r.start(), BatchLimit(Some(20)))) }
    within(runtime()) { r =>
      r.restore(batch0)
      assert(r.state == Restored)
      assert(r.metrics(None)("splits") == "2")
      val batch1 = r.plan(BoundedRange(batch0, BatchLimit(Some(20))))
      r.restore(batch0) // Spark commits a batch after it planned the next
      assert(r.state == Planned)
      assert(r.plan(BoundedRange(batch1, BatchLimit(Some(20)))).positions.map(_._2).sum == 60L)
    }
  }

  test(
    "BoundedRange: Restored -> Planned, and again Planned -> Planned from the end it planned") {
    within(runtime()) { r =>
      val initial = r.start()
      val batch0 = r.plan(BoundedRange(initial, BatchLimit(Some(50))))
      assert(r.state == Planned)
      assert(batch0.positions.map(_._2).sum == 50L)
      val batch1 = r.plan(BoundedRange(batch0, BatchLimit(Some(50))))
      assert(r.state == Planned)
      assert(batch1.positions.map(_._2).sum == 100L)
    }
  }

  test("OpenRange: -> Running, every split open from where the start has it") {
    within(runtime()) { r =>
      val batch0 = r.plan(BoundedRange(r.start(), BatchLimit(Some(20))))
      val open = r.plan(OpenRange(batch0))
      assert(r.state == Running)
      assert(open.start.positions == batch0.positions)
      assert(
        open.ranges.map(x => (x.split.splitId, x.from, x.until)).toSet ==
          batch0.positions.map { case (id, p) =>
            (id, p, if (id == "0") 100L else sluice.api.SplitRange.OpenEnd)
          }.toSet)
    }
  }

  test("endOfOpenBatch: Running -> Planned, each split where its readers got") {
    within(runtime()) { r =>
      val initial = r.start()
      val open = r.plan(OpenRange(initial))
      val end = r.endOfOpenBatch(open.start, Seq(SplitReport("1", 0L, 42L, Some(41000L), 42L)))
      assert(r.state == Planned)
      assert(end.positions == Seq("0" -> 0L, "1" -> 42L))
    }
  }

  test(
    "BoundedRead: Created -> Finished, every split to its stop; a runtime that planned refuses it") {
    val r = new SourceRuntime(
      new InMemorySource(Seq(MemSplit("0", 0, 1000, 100), MemSplit("1", 0, 1000, 30)))
        .asInstanceOf[Source[SourceSplit, Any]],
      settings(),
      new ProgressStore.InMemory,
      defaultLimit = BatchLimit(None))
    assert(
      r.plan(BoundedRead()).map(x => (x.split.splitId, x.from, x.until)) ==
        Seq(("0", 0L, 100L), ("1", 0L, 30L)))
    assert(r.state == Finished)
    within(runtime()) { planned =>
      planned.plan(BoundedRange(planned.start(), BatchLimit(Some(20))))
      assert(
        intercept[IllegalStateException](planned.plan(BoundedRead())).getMessage
          .contains("a bounded read is planned by a new runtime"))
      assert(planned.state == Planned)
    }
  }

  test(
    "the enumerator is handed each split's position from the runtime: the start, where the last batch ended, a restored checkpoint's") {
    val source =
      new InMemorySource(Seq(MemSplit("0", 0, 1000, 100), MemSplit("1", 0, 1000, 100, false)))
    def runtimeOf() = new SourceRuntime(
      source.asInstanceOf[Source[SourceSplit, Any]],
      settings(),
      new ProgressStore.InMemory,
      defaultLimit = BatchLimit(None))
    def handed = source.lastEnumerator.handed.last
    val end = within(runtimeOf()) { r =>
      val first = r.plan(BoundedRange(r.start(), BatchLimit(Some(40))))
      assert(handed == Map("0" -> 0L, "1" -> 0L))
      assert(first.positions.map(_._2).forall(_ > 0L), first.positions)
      // the next batch starts where the first ended: that is where its readers stand
      r.plan(BoundedRange(first, BatchLimit(Some(40))))
      assert(handed == first.positions.toMap)
      first
    }
    within(runtimeOf()) { r =>
      r.restore(end)
      r.plan(BoundedRange(end, BatchLimit(Some(40))))
      assert(handed == end.positions.toMap)
    }
  }

  test("close: -> Finished, and the runtime left its alignment group") {
    val r = runtime(group = Some("g"))
    r.start()
    // by its key: other suites running in the same JVM may hold groups of their own
    assert(sluice.alignment.AlignmentCoordinator.holds("states", "g"))
    r.close()
    assert(r.state == Finished)
    assert(!sluice.alignment.AlignmentCoordinator.holds("states", "g"))
  }

  test("what only looks changes no state: available from where the engine is, ranges, metrics") {
    within(runtime()) { r =>
      val initial = r.start()
      val batch0 = r.plan(BoundedRange(initial, BatchLimit(Some(20))))
      val looked = r.plan(Availability(batch0))
      assert(looked.records == 180L && looked.end.positions == Seq("0" -> 100L, "1" -> 100L))
      assert(r.ranges(Some(initial), batch0).map(x => x.until - x.from).sum == 20L)
      r.metrics(Some(batch0))
      assert(r.state == Planned)
      // and the next batch is planned from where the engine says, not from what was looked at
      assert(r.plan(BoundedRange(batch0, BatchLimit(Some(20)))).positions.map(_._2).sum == 40L)
    }
  }

  test(
    "metrics read, never drain: asked twice, the same figures; the next planning moves the latency window") {
    val r = new SourceRuntime(
      new InMemorySource(Seq(MemSplit("0", 0, 1000, 100), MemSplit("1", 0, 1000, 100)))
        .asInstanceOf[Source[SourceSplit, Any]],
      settings().copy(latencyTracking = true),
      new ProgressStore.InMemory,
      defaultLimit = BatchLimit(None))
    within(r) { r =>
      val batch0 = r.plan(BoundedRange(r.start(), BatchLimit(Some(40))))
      r.fold(
        Seq(
          SplitReport("0", 0L, 20L, Some(19000L), 20L, latencyMarkersMs = Seq(5L, 7L)),
          SplitReport("1", 0L, 20L, Some(19000L), 20L, latencyMarkersMs = Seq(9L))))
      val first = r.metrics(Some(batch0))
      assert(first("latency.markers") == "3" && first("latency.maxMs") == "9")
      assert(r.metrics(Some(batch0)) == first, "reading figures changed them")
      assert(r.state == Planned)
      // the next batch is planned once the engine reported this one: its markers leave
      val batch1 = r.plan(BoundedRange(batch0, BatchLimit(Some(40))))
      r.fold(Seq(SplitReport("0", 20L, 40L, Some(39000L), 20L, latencyMarkersMs = Seq(11L))))
      val second = r.metrics(Some(batch1))
      assert(second("latency.markers") == "1" && second("latency.maxMs") == "11")
      assert(r.metrics(Some(batch1)) == second)
    }
  }

  /** Member "b" of `group`: one split of 100 records, read 10 at a time. */
  private def secondMember(group: String) = new SourceRuntime(
    new InMemorySource(Seq(MemSplit("0", 0, 1000, 100))).asInstanceOf[Source[SourceSplit, Any]],
    settings(Some(group)).copy(memberId = "b", displayName = "b"),
    new ProgressStore.InMemory,
    defaultLimit = BatchLimit(Some(10)))

  test("resumesAt: a round another member opens plans this one from the start it was handed") {
    val a = runtime(group = Some("round"))
    val b = secondMember("round")
    try {
      val (startA, startB) = (a.start(), b.start())
      b.resumesAt(startB)
      a.plan(BoundedRange(startA, BatchLimit(Some(10))))
      assert(b.state == Restored, "a round prepares a member; it plans only when asked")
      // prepared from there: it asked its enumerator how far its split can be read
      assert(b.metrics(Some(startB)).get("backlogRecords").contains("100"))
      // b takes its part of the round: planned from the start it was handed, with its own limit
      assert(b.plan(BoundedRange(startB, BatchLimit(Some(10)))).positions == Seq("0" -> 10L))
      assert(b.state == Planned)
    } finally {
      a.close()
      b.close()
    }
  }

  test(
    "resumesFresh: a new member is started by the round another member opens, not before; its start is the engine's") {
    val a = runtime(group = Some("fresh"))
    val b = secondMember("fresh")
    try {
      b.resumesFresh()
      assert(b.state == Created, "told, nothing is started yet (no system is asked)")
      a.plan(BoundedRange(a.start(), BatchLimit(Some(10))))
      assert(b.state == Restored, "the round started it")
      // the engine then asks for its first checkpoint: the one the round planned from
      val first = b.start()
      assert(b.start() == first && first.positions == Seq("0" -> 0L))
      assert(b.plan(BoundedRange(first, BatchLimit(Some(10)))).positions == Seq("0" -> 10L))
    } finally {
      a.close()
      b.close()
    }
  }
}

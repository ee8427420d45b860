package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

import sluice.eventtime.EventTimeSettings

class LiveAlignmentSuite extends AnyFunSuite {
  private def split(
      id: String,
      wm: Option[Long],
      idle: Boolean = false,
      paused: Boolean = false,
      finished: Boolean = false) =
    LiveSplitState(id, wm, idle, paused, finished)

  /** The driver's planning opens the group (its seed) before any reader reports. */
  private def open(coordinator: LiveAlignment): Unit =
    coordinator.seed(LiveReport("q", "g", "driver", maxDriftMs = 100, Nil), expiryMs = 1000)

  private def report(
      coordinator: LiveAlignment,
      member: String,
      splits: LiveSplitState*): Option[Long] = {
    open(coordinator)
    coordinator
      .report(LiveReport("q", "g", member, maxDriftMs = 100, splits), expiryMs = 1000)
      .maxAllowedWatermark
  }

  test("a split of an open batch as both sides build it: its watermark under the strategy") {
    val settings =
      EventTimeSettings(EventTimeSettings.Kind.BoundedOutOfOrderness, 250L, None, None, None)
    assert(
      LiveSplitState.at("s", Some(1000L), settings, finished = false) ==
        LiveSplitState("s", Some(750L), idle = false, paused = false, finished = false))
    assert(
      LiveSplitState.at("s", None, settings, finished = true) ==
        LiveSplitState("s", None, idle = false, paused = false, finished = true),
      "no watermark before the first record")
    assert(
      LiveSplitState.at("s", Some(Long.MinValue + 10), settings, finished = false).watermark ==
        Some(Long.MinValue),
      "saturating")
  }

  test("the limit is the smallest watermark of the group plus the drift, across members") {
    val c = new LiveAlignment(() => 0L)
    assert(report(c, "a", split("a0", Some(1000)), split("a1", Some(5000))) == Some(1100))
    assert(report(c, "b", split("b0", Some(700))) == Some(800))
    // a later report of the same split replaces the earlier one
    assert(report(c, "b", split("b0", Some(2000))) == Some(1100))
  }

  test(
    "idle, finished and not-yet-started splits constrain nobody; none constraining means no limit") {
    val c = new LiveAlignment(() => 0L)
    assert(
      report(
        c,
        "a",
        split("a0", None),
        split("a1", Some(10), idle = true),
        split("a2", Some(20), finished = true)) == None)
    assert(
      report(c, "a", split("a0", Some(Long.MaxValue))) == Some(Long.MaxValue),
      "no overflow (FLINK-31632)")
  }

  test("a split its task stopped reporting leaves the minimum after the expiry") {
    var now = 0L
    val c = new LiveAlignment(() => now)
    report(c, "a", split("slow", Some(100)))
    now = 500
    assert(report(c, "b", split("fast", Some(10000))) == Some(200))
    now = 1600
    assert(report(c, "b", split("fast", Some(10000))) == Some(10100))
  }

  test("the observed spread counts splits that read, from their second report on") {
    val c = new LiveAlignment(() => 0L)
    report(c, "a", split("a0", Some(0)), split("a1", Some(1800000)))
    assert(c.maxObservedSpread("q", "g").isEmpty, "first reports: nobody had an answer to act on")
    report(c, "a", split("a0", Some(50)), split("a1", Some(1800000), paused = true))
    assert(
      c.maxObservedSpread("q", "g") == Some(0),
      "a paused split does not read: one split, no spread")
    report(c, "a", split("a0", Some(60)), split("a1", Some(160)))
    assert(c.maxObservedSpread("q", "g") == Some(100))
  }

  test("the gate pauses what is ahead or unconfirmed, resumes what falls within the limit") {
    var now = 0L
    val gate = new LiveSplitGate(idleTimeoutMs = Some(1000), () => now)
    Seq("x", "y", "z").foreach(gate.track(_))
    val wms = Map("x" -> Some(100L), "y" -> Some(500L), "z" -> Some(50L))
    assert(
      gate.decide(wms, Set.empty, Some(200), unconfirmed = Set("z")) == (
        Set("y", "z"),
        Set.empty))
    assert(gate.decide(wms, Set.empty, Some(600)) == (Set.empty, Set("y", "z")))
    // a finished split is never paused (FLINK-39728)
    assert(gate.decide(wms, Set("y"), Some(200)) == (Set.empty, Set.empty))
  }

  test("a paused split never turns idle, and time paused does not count toward idleness") {
    var now = 0L
    val gate = new LiveSplitGate(idleTimeoutMs = Some(1000), () => now)
    gate.track("x")
    gate.decide(Map("x" -> Some(500L)), Set.empty, Some(100)) // paused
    now = 5000
    assert(!gate.isIdle("x", now), "paused, so not idle")
    gate.decide(Map("x" -> Some(500L)), Set.empty, Some(1000)) // resumed at 5000
    assert(!gate.isIdle("x", 5500))
    assert(gate.isIdle("x", 6000), "no record for the timeout after it resumed")
    gate.recordRead("x", 6100)
    assert(!gate.isIdle("x", 6500), "a record makes it active again")
  }

  test(
    "idleness outlives a task: the next task's clock starts from the split's last record, and seeds keep it") {
    var now = 10000L
    val c = new LiveAlignment(() => now)
    open(c)
    c.report(
      LiveReport("q", "g", "m", 100, Seq(split("s", Some(5)).copy(lastActiveMs = Some(9000L)))),
      1000)
    c.seed(LiveReport("q", "g", "m", 100, Seq(split("s", Some(5)))), 1000)
    assert(c.lastActive("q", "g", "m") == Map("s" -> 9000L), "a seed keeps what the readers knew")
    val gate = new LiveSplitGate(idleTimeoutMs = Some(2000), () => now)
    gate.track("s", c.lastActive("q", "g", "m").get("s"))
    assert(!gate.isIdle("s", 10500))
    assert(
      gate.isIdle("s", 11000),
      "idle two seconds after its last record, though its task began later")
  }

  test(
    "a report from a task outliving its stopped query keeps nothing: the group stays forgotten") {
    val c = new LiveAlignment(() => 0L)
    assert(report(c, "a", split("a0", Some(1000))) == Some(1100))
    assert(c.size == 1)
    c.forget("q", "g")
    assert(c.size == 0)
    // the late report is answered from itself, and the group does not come back
    assert(
      c.report(LiveReport("q", "g", "a", maxDriftMs = 100, Seq(split("a0", Some(2000)))), 1000)
        .maxAllowedWatermark == Some(2100))
    assert(c.size == 0)
    assert(c.states("q", "g").isEmpty)
  }
}

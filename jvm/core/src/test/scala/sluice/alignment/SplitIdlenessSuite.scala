package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

/** The one idleness rule (FLIP-180, Flink's `WatermarksWithIdleness`), alone: times handed in. */
class SplitIdlenessSuite extends AnyFunSuite {

  test("idle after the timeout without a record; the next record makes it active again") {
    val rule = new SplitIdleness(Some(1000))
    rule.track("a", lastActiveMs = 0L, records = 5)
    rule.observe("a", records = 5, waiting = false, nowMs = 999)
    assert(!rule.isIdle("a", 999))
    assert(rule.isIdle("a", 1000), "idle exactly at the timeout")
    rule.observe("a", records = 6, waiting = false, nowMs = 1500)
    assert(!rule.isIdle("a", 1500), "a record read since: active")
    assert(!rule.isIdle("a", 2499))
    assert(rule.isIdle("a", 2500), "the clock restarted at the record")
    rule.recordRead("a", 3000)
    assert(!rule.isIdle("a", 3999) && rule.isIdle("a", 4000))
  }

  test("records waiting to be read keep a split active, with no record read") {
    val rule = new SplitIdleness(Some(1000))
    rule.track("a", lastActiveMs = 0L)
    rule.observe("a", records = 0, waiting = true, nowMs = 5000)
    assert(!rule.isIdle("a", 5000))
    rule.observe("a", records = 0, waiting = false, nowMs = 5500)
    assert(!rule.isIdle("a", 5999), "the wait counted as activity at 5 s")
    assert(rule.isIdle("a", 6000))
  }

  test("a paused split is never idle; time paused does not count, resuming restarts the clock") {
    val rule = new SplitIdleness(Some(1000))
    rule.track("a", lastActiveMs = 0L)
    assert(rule.setPaused("a", paused = true, nowMs = 100))
    assert(!rule.setPaused("a", paused = true, nowMs = 200), "already paused: no change")
    assert(rule.isPaused("a") && !rule.isIdle("a", 50000))
    assert(rule.lastActive("a", 50000) == Some(50000L), "while paused its clock stands at now")
    assert(rule.setPaused("a", paused = false, nowMs = 60000))
    assert(!rule.isIdle("a", 60999))
    assert(rule.isIdle("a", 61000), "the timeout counts from the resume")
    assert(rule.lastActive("a", 61000) == Some(60000L))
  }

  test("idleness outlives a task: a split tracked from an earlier last record") {
    val rule = new SplitIdleness(Some(2000))
    rule.track("s", lastActiveMs = 9000L)
    rule.track("s", lastActiveMs = 10000L) // watched already: the first clock stays
    assert(!rule.isIdle("s", 10500))
    assert(rule.isIdle("s", 11000))
  }

  test("without a timeout nothing is idle; an unknown split is neither idle nor paused") {
    val never = new SplitIdleness(None)
    never.track("b", lastActiveMs = 0L)
    assert(!never.isIdle("b", Long.MaxValue / 2))
    val rule = new SplitIdleness(Some(1))
    assert(!rule.isIdle("x", 1000) && !rule.isPaused("x") && rule.lastActive("x", 1000).isEmpty)
    assert(!rule.setPaused("x", paused = true, nowMs = 0), "only watched splits are paused")
    assert(!rule.tracks("x"))
  }

  test("the splits watched, in the order they were first tracked") {
    val rule = new SplitIdleness(Some(1))
    Seq("c", "a", "b", "a").foreach(rule.track(_, 0L))
    assert(rule.splitIds.toSeq == Seq("c", "a", "b"))
  }
}

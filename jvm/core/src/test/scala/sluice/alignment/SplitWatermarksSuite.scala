package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

import sluice.eventtime.EventTimeSettings

/** FLIP-180's idleness at batch boundaries, and the traps Flink fell into with it. */
class SplitWatermarksSuite extends AnyFunSuite {

  private var now = 0L
  private def tracker(timeoutMs: Option[Long] = Some(1000)) =
    new SplitWatermarks(EventTimeSettings("monotonous", 0, None, timeoutMs, None), () => now)

  test("a split that reads nothing and has nothing waiting turns idle after the timeout") {
    val w = tracker()
    assert(!w.observe("a", records = 5, waiting = 0, finished = false))
    now = 999
    assert(!w.observe("a", records = 5, waiting = 0, finished = false))
    now = 1000
    assert(w.observe("a", records = 5, waiting = 0, finished = false))
  }

  test("data makes an idle split active again: records read, or records waiting") {
    val w = tracker()
    w.observe("a", 5, 0, finished = false)
    now = 2000
    assert(w.observe("a", 5, 0, finished = false))
    assert(!w.observe("a", 5, waiting = 3, finished = false))
    now = 2500
    assert(!w.observe("a", 8, 0, finished = false)) // read since: active, and the clock restarts
    now = 3499
    assert(!w.observe("a", 8, 0, finished = false))
    now = 3500
    assert(w.observe("a", 8, 0, finished = false))
  }

  test("a paused split is never idle, and its idleness clock does not run while paused") {
    val w = tracker()
    w.observe("a", 5, 0, finished = false)
    w.setPaused(Set("a"))
    now = 10000
    assert(!w.observe("a", 5, 0, finished = false))
    w.setPaused(Set.empty) // resumed at 10 s: the timeout counts from here
    now = 10999
    assert(!w.observe("a", 5, 0, finished = false))
    now = 11000
    assert(w.observe("a", 5, 0, finished = false))
  }

  test("a finished split is not idle; without a timeout nothing is") {
    val w = tracker()
    w.observe("a", 5, 0, finished = true)
    now = 5000
    assert(!w.observe("a", 5, 0, finished = true))
    val never = tracker(None)
    never.observe("b", 0, 0, finished = false)
    now = Long.MaxValue / 2
    assert(!never.observe("b", 0, 0, finished = false))
  }

  test("watermarks are the largest event time minus the out-of-orderness, saturating") {
    val s = EventTimeSettings("boundedOutOfOrderness", 500, None, None, None)
    assert(s.watermarkFor(10000) == 9500)
    assert(s.watermarkFor(Long.MinValue + 10) == Long.MinValue)
  }

  test("watermark.splits says why a split does not read: finished, paused by alignment, idle") {
    val states = Seq(
      SplitEventTime(
        "reading",
        Some(10),
        WatermarkStatus.Active,
        paused = false,
        finished = false),
      SplitEventTime("ahead", Some(90), WatermarkStatus.Active, paused = true, finished = false),
      SplitEventTime("quiet", Some(20), WatermarkStatus.Idle, paused = false, finished = false),
      SplitEventTime(
        "done",
        Some(Long.MaxValue),
        WatermarkStatus.Active,
        paused = false,
        finished = true),
      SplitEventTime(
        "new \"one\"",
        None,
        WatermarkStatus.Active,
        paused = true,
        finished = false))
    assert(
      states.map(_.reason) == Seq(
        None,
        Some("alignment"),
        Some("idleness"),
        Some("finished"),
        Some("alignment")))
    assert(SplitEventTime.json(states) == Seq(
      """{"split":"reading","watermarkMs":10,"status":"ACTIVE","paused":false,"finished":false}""",
      """{"split":"ahead","watermarkMs":90,"status":"ACTIVE","paused":true,"finished":false,"reason":"alignment"}""",
      """{"split":"quiet","watermarkMs":20,"status":"IDLE","paused":false,"finished":false,"reason":"idleness"}""",
      s"""{"split":"done","watermarkMs":${Long.MaxValue},"status":"ACTIVE","paused":false,"finished":true,"reason":"finished"}""",
      """{"split":"new \"one\"","status":"ACTIVE","paused":true,"finished":false,"reason":"alignment"}""")
      .mkString("[", ",", "]"))
  }
}

package sluice.runtime

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.SplitProgress

class SplitProgressTrackerSuite extends AnyFunSuite {

  test("reports are folded in range order and counted once however often they arrive") {
    val tracker = new SplitProgressTracker
    tracker.restore(SplitProgress("0", 0, None, 0))
    val first = SplitReport("0", 0, 100, Some(10L), 100)
    val second = SplitReport("0", 100, 250, Some(30L), 150)
    tracker.fold(Seq(second, first))
    tracker.fold(Seq(first, second)) // a re-executed batch reports the same ranges again
    assert(tracker.get("0").contains(SplitProgress("0", 250, Some(30L), 250)))
  }

  test("restoring keeps the more advanced progress") {
    val tracker = new SplitProgressTracker
    tracker.restore(SplitProgress("0", 300, Some(5L), 300))
    tracker.restore(SplitProgress("0", 100, Some(1L), 100))
    assert(tracker.get("0").map(_.position).contains(300L))
  }

  test(
    "a range after a gap (reports lost with a dead driver) moves the split on at the next planning instead of sticking") {
    val tracker = new SplitProgressTracker
    tracker.restore(SplitProgress("0", 100, Some(10L), 100))
    assert(
      tracker.fold(Seq(SplitReport("0", 200, 300, Some(30L), 100)))
    ) // its event time counts at once
    assert(tracker.get("0").contains(SplitProgress("0", 100, Some(30L), 100)))
    tracker.advanceTo("0", 300) // the next batch is planned from 300: [100, 200) was read
    assert(tracker.get("0").contains(SplitProgress("0", 300, Some(30L), 200)))
    assert(!tracker.fold(Seq(SplitReport("0", 200, 300, Some(30L), 100))))
  }

  test("the parts of a range divided among tasks count once, in whatever order their tasks end") {
    val parts = Seq(
      SplitReport("0", 0, 40, Some(39L), 40),
      SplitReport("0", 40, 70, Some(69L), 30),
      SplitReport("0", 70, 100, Some(99L), 30, Map("dropped" -> 2L)))
    parts.permutations.foreach { order =>
      val tracker = new SplitProgressTracker
      tracker.restore(SplitProgress("0", 0, None, 0))
      order.foreach(r => tracker.fold(Seq(r)))
      order.foreach(r => tracker.fold(Seq(r))) // re-run tasks report their parts again
      assert(
        tracker.get("0").contains(SplitProgress("0", 100, Some(99L), 100, Map("dropped" -> 2L))),
        order)
    }
    val tracker = new SplitProgressTracker
    tracker.restore(SplitProgress("0", 0, None, 0))
    tracker.fold(Seq(parts(2), parts(1)))
    assert(
      tracker.get("0").map(_.position).contains(0L),
      "parts after an unreported one must wait for it")
    tracker.fold(Seq(parts(0)))
    assert(
      tracker.get("0").contains(SplitProgress("0", 100, Some(99L), 100, Map("dropped" -> 2L))))
  }

  test(
    "a task stopped early reports how far it got; the full read of the same range then counts, once") {
    val tracker = new SplitProgressTracker
    tracker.restore(SplitProgress("0", 0, None, 0))
    tracker.fold(
      Seq(SplitReport("0", 0, 1, Some(1L), 1, Map("dropped" -> 0L)))
    ) // df.isEmpty in foreachBatch
    tracker.fold(Seq(SplitReport("0", 0, 100, Some(99L), 100, Map("dropped" -> 3L)))) // the write
    tracker.fold(
      Seq(SplitReport("0", 0, 100, Some(99L), 100, Map("dropped" -> 3L)))
    ) // a retried task
    assert(
      tracker.get("0").contains(SplitProgress("0", 100, Some(99L), 100, Map("dropped" -> 3L))))
    tracker.fold(Seq(SplitReport("0", 100, 150, Some(149L), 50, Map("dropped" -> 1L))))
    assert(
      tracker.get("0").contains(SplitProgress("0", 150, Some(149L), 150, Map("dropped" -> 4L))))
  }
}

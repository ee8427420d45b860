package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

/** The split-alignment scenarios of Flink's tests, and each trap DESIGN.md lists. */
class AlignmentPolicySuite extends AnyFunSuite {

  private def split(id: String, wm: Option[Long], idle: Boolean = false, finished: Boolean = false,
      paused: Boolean = false, hasData: Boolean = true) = SplitAlignmentState(id, wm, hasData, idle, finished, paused)

  test("a split above the limit is paused; the others read on") {
    val d = AlignmentPolicy.decide(Seq(split("a", Some(1000)), split("b", Some(5000)), split("c", Some(1200))), 500)
    assert(d.maxAllowedWatermark.contains(1500))
    assert(d.pause == Set("b"))
    assert(d.resume.isEmpty)
  }

  test("a paused split resumes once the limit rises to its watermark") {
    val before = AlignmentPolicy.decide(Seq(split("a", Some(1000)), split("b", Some(5000), paused = true)), 500)
    assert(before.resume.isEmpty && before.pause.isEmpty)
    val after = AlignmentPolicy.decide(Seq(split("a", Some(4600)), split("b", Some(5000), paused = true)), 500)
    assert(after.resume == Set("b"))
  }

  test("at exactly the limit a split is not paused (pause only when strictly above)") {
    val d = AlignmentPolicy.decide(Seq(split("a", Some(1000)), split("b", Some(1500))), 500)
    assert(d.pause.isEmpty)
  }

  test("a finished split is never paused and never holds the others back") {
    val d = AlignmentPolicy.decide(Seq(split("done", Some(0), finished = true), split("b", Some(90000))), 500)
    assert(d.maxAllowedWatermark.contains(90500))
    assert(d.pause.isEmpty)
    val paused = AlignmentPolicy.decide(Seq(split("done", Some(99999), finished = true, paused = true), split("b", Some(0))), 10)
    assert(paused.resume == Set("done"))
  }

  test("an idle split leaves the minimum; data makes it count again") {
    val idle = AlignmentPolicy.decide(Seq(split("quiet", Some(0), idle = true), split("b", Some(90000))), 500)
    assert(idle.maxAllowedWatermark.contains(90500))
    val active = AlignmentPolicy.decide(Seq(split("quiet", Some(0)), split("b", Some(90000))), 500)
    assert(active.pause == Set("b"))
  }

  test("a split without a watermark and without data blocks nobody (FLINK-32414)") {
    val d = AlignmentPolicy.decide(Seq(split("empty", None, hasData = false), split("b", Some(1000))), 100)
    assert(d.maxAllowedWatermark.contains(1100))
    assert(d.pause.isEmpty)
  }

  test("a source or reader without splits, or all of them idle or finished, means no limit and no overflow (FLINK-31632)") {
    assert(AlignmentPolicy.decide(Nil, Long.MaxValue) == AlignmentDecision(None, Set.empty, Set.empty))
    val allIdle = Seq(split("a", Some(Long.MaxValue), idle = true), split("b", Some(Long.MaxValue), finished = true))
    assert(AlignmentPolicy.maxAllowedWatermark(allIdle, Long.MaxValue).isEmpty)
    val d = AlignmentPolicy.decide(allIdle.map(_.copy(paused = true)), Long.MaxValue)
    assert(d.resume == Set("a", "b"), "nothing may stay paused when nothing constrains the group")
    assert(AlignmentPolicy.maxAllowedWatermark(Seq(split("a", Some(Long.MaxValue - 5))), 100).contains(Long.MaxValue))
  }

  test("alignment keeps working once no more splits are discovered (FLINK-37670)") {
    // the policy depends on the splits' states only, never on discovery: same inputs, same decision
    val splits = Seq(split("a", Some(0)), split("b", Some(10000)))
    assert(AlignmentPolicy.decide(splits, 100).pause == Set("b"))
    assert(AlignmentPolicy.decide(splits.map(s => if (s.splitId == "a") s.copy(watermark = Some(9950)) else s.copy(paused = true)), 100)
      .resume == Set("b"))
  }
}

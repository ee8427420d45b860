package sluice.alignment

import org.scalatest.funsuite.AnyFunSuite

/** FLIP-217's rule as the planners use it, with each trap DESIGN.md lists. */
class AlignmentPolicySuite extends AnyFunSuite {
  import AlignmentPolicy.{isAhead, limit}

  test(
    "the limit is the smallest constraining watermark plus the drift; a split strictly above it is ahead") {
    val l = limit(Seq(1000L, 5000L, 1200L), 500)
    assert(l.contains(1500))
    assert(isAhead(Some(5000), finished = false, l))
    assert(!isAhead(Some(1200), finished = false, l))
    assert(!isAhead(Some(1500), finished = false, l), "at exactly the limit a split reads on")
  }

  test("a paused split reads again once the limit rises to its watermark") {
    assert(isAhead(Some(5000), finished = false, limit(Seq(1000L), 500)))
    assert(!isAhead(Some(5000), finished = false, limit(Seq(4600L), 500)))
  }

  test("a finished split is never ahead, whatever its watermark") {
    assert(!isAhead(Some(Long.MaxValue), finished = true, limit(Seq(0L), 10)))
  }

  test(
    "a split without a watermark is never ahead and, left out of the minimum, blocks nobody (FLINK-32414)") {
    assert(!isAhead(None, finished = false, limit(Seq(1000L), 100)))
    assert(limit(Seq(1000L), 100).contains(1100))
  }

  test("nothing constraining means no limit, and no overflow (FLINK-31632)") {
    assert(limit(Nil, Long.MaxValue).isEmpty)
    assert(
      !isAhead(Some(Long.MaxValue), finished = false, None),
      "nothing may stay paused when nothing constrains")
    assert(limit(Seq(Long.MaxValue - 5), 100).contains(Long.MaxValue))
  }

  test("a negative drift is refused") {
    assertThrows[IllegalArgumentException](limit(Seq(0L), -1))
  }
}

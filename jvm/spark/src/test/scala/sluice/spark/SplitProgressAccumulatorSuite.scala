package sluice.spark

import org.scalatest.funsuite.AnyFunSuite

import sluice.runtime.SplitReport

/** The executor -> driver progress channel, without a SparkSession. */
class SplitProgressAccumulatorSuite extends AnyFunSuite {

  test("the accumulator merges a retried task's report instead of adding it") {
    val acc = new SplitProgressAccumulator
    acc.add(SplitReport("0", 0, 100, Some(10L), 100))
    val retry = new SplitProgressAccumulator
    retry.add(SplitReport("0", 0, 100, Some(10L), 100))
    acc.merge(retry)
    assert(acc.value == Seq(SplitReport("0", 0, 100, Some(10L), 100)))
  }
  test("on the driver, merged task reports go straight to the receiver and are not kept") {
    val received = scala.collection.mutable.ArrayBuffer[SplitReport]()
    val driver = new SplitProgressAccumulator().deliverTo(received ++= _)
    val task = new SplitProgressAccumulator
    task.add(SplitReport("0", 0, 100, Some(10L), 100))
    driver.merge(task)
    assert(received.toSeq == Seq(SplitReport("0", 0, 100, Some(10L), 100)))
    assert(driver.isZero, "the driver's instance is a conduit: progress lives in the runtime")
  }
}

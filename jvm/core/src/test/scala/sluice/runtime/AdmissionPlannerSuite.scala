package sluice.runtime

import org.scalatest.funsuite.AnyFunSuite

class AdmissionPlannerSuite extends AnyFunSuite {

  test("everything is read when the backlog fits the budget") {
    assert(
      AdmissionPlanner
        .share(Seq("a" -> 10L, "b" -> 0L, "c" -> 5L), 100) == Map("a" -> 10L, "c" -> 5L))
  }

  test("the budget is shared in proportion to backlog and adds up exactly") {
    val shares = AdmissionPlanner.share(Seq("a" -> 300L, "b" -> 100L, "c" -> 1L), 100)
    assert(shares.values.sum == 100)
    assert(shares("a") == 75 || shares("a") == 74)
    assert(shares("b") >= 24 && shares("b") <= 25)
    assert(shares.forall { case (id, n) => n <= Map("a" -> 300L, "b" -> 100L, "c" -> 1L)(id) })
  }

  test("a budget smaller than the number of splits still reads something") {
    val shares = AdmissionPlanner.share((1 to 8).map(i => s"s$i" -> 1000L), 3)
    assert(shares.values.sum == 3)
  }

  test("huge backlogs do not overflow") {
    val shares = AdmissionPlanner.share(Seq("a" -> Long.MaxValue, "b" -> Long.MaxValue), 10)
    assert(shares == Map("a" -> 5L, "b" -> 5L))
  }

  test("a record budget over byte positions is converted with the bytes per record") {
    // a file split with 10,000 bytes of backlog at 50 bytes per record, a Kafka split with 300 records
    val shares = AdmissionPlanner.shareRecords(
      Seq("file" -> 10000L, "kafka" -> 300L),
      250,
      id => if (id == "file") 50.0 else 1.0)
    // 200 + 300 records of backlog, 250 allowed: half of each, the file's share back in bytes
    assert(shares == Map("file" -> 5000L, "kafka" -> 150L))
    assert(
      AdmissionPlanner.shareRecords(Seq("file" -> 1000L), 1000, _ => 50.0) == Map(
        "file" -> 1000L))
  }
}

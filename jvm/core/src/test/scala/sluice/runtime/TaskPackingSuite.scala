package sluice.runtime

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.SplitRange

class TaskPackingSuite extends AnyFunSuite {

  private def range(id: String, records: Long) =
    SplitRange(MemSplit(id, 0L, 1L, 1000000L), 0L, records)
  private def pack(ranges: Seq[SplitRange[MemSplit]], slots: Int) =
    TaskPacking.pack[MemSplit](ranges, slots, r => (r.until - r.from).toDouble)
  private def loads(tasks: Seq[Seq[SplitRange[MemSplit]]]) =
    tasks.map(_.map(r => r.until - r.from).sum)

  test("no more ranges than slots: one task per range, as Spark's Kafka source plans") {
    val ranges = Seq(range("a", 10), range("b", 5000))
    assert(pack(ranges, 2) == ranges.map(Seq(_)))
    assert(pack(ranges, 8) == ranges.map(Seq(_)))
  }

  test(
    "more ranges than slots: every range in exactly one of `slots` tasks of about equal size") {
    // a stream-stream join's batch: four dense partitions and four sparse ones, two cores
    val ranges = (0 until 4).map(i => range(s"right-$i", 500)) ++ (0 until 4).map(i =>
      range(s"left-$i", 125))
    val tasks = pack(ranges, 2)
    assert(tasks.size == 2)
    assert(tasks.flatten.map(_.split.splitId).sorted == ranges.map(_.split.splitId).sorted)
    assert(loads(tasks) == Seq(1250L, 1250L))
  }

  test("a range larger than the others' sum gets a task of its own") {
    val ranges = Seq(range("hot", 100000)) ++ (0 until 6).map(i => range(s"cold-$i", 100))
    val tasks = pack(ranges, 3)
    assert(tasks.find(_.exists(_.split.splitId == "hot")).get.map(_.split.splitId) == Seq("hot"))
    assert(loads(tasks).sorted == Seq(300L, 300L, 100000L))
  }

  test("ranges best read in one place share tasks only with ranges of that place") {
    // eight compressed files on two executors, and two ranges of no place
    val files = (0 until 8).map(i => range(s"f$i", 100 + i))
    val plain = Seq(range("plain-0", 50), range("plain-1", 60))
    val placeOf: SplitRange[MemSplit] => Option[String] = r =>
      Some(r.split.splitId)
        .filter(_.startsWith("f"))
        .map(id => if (id.drop(1).toInt % 2 == 0) "exec-a" else "exec-b")
    def packed(slots: Int) =
      TaskPacking.pack[MemSplit](files ++ plain, slots, r => (r.until - r.from).toDouble, placeOf)
    def places(t: Seq[SplitRange[MemSplit]]) = t.map(placeOf).distinct

    // a task each: exec-a's files (412), exec-b's (416), the others (110)
    val three = packed(3)
    assert(
      three.flatten.map(_.split.splitId).sorted == (files ++ plain).map(_.split.splitId).sorted)
    assert(three.map(places) == Seq(Seq(None), Seq(Some("exec-a")), Seq(Some("exec-b"))))
    assert(loads(three) == Seq(110L, 412L, 416L))
    // a fourth slot goes where there is most to read per task: exec-b's files, in two halves
    val four = packed(4)
    assert(four.forall(places(_).size == 1))
    assert(loads(four).sorted == Seq(110L, 208L, 208L, 412L))
    // one executor wanted by most files still leaves a task to the other
    val skewed = Seq(range("f1", 100), range("f3", 100), range("f5", 100), range("f0", 100))
    val two = TaskPacking.pack[MemSplit](skewed, 2, r => (r.until - r.from).toDouble, placeOf)
    assert(two.map(_.map(_.split.splitId)) == Seq(Seq("f0"), Seq("f1", "f3", "f5")))
    // no places: the same tasks as before
    assert(
      TaskPacking.pack[MemSplit](files ++ plain, 3, r => (r.until - r.from).toDouble) == pack(
        files ++ plain,
        3))
  }

  test(
    "the same ranges always give the same tasks (a replayed batch reads the same partitions)") {
    val ranges = (0 until 9).map(i => range(s"p$i", 100))
    assert(pack(ranges, 4) == pack(ranges.reverse, 4))
  }

  private def divide(ranges: Seq[SplitRange[MemSplit]], min: Int) =
    TaskPacking.divide[MemSplit](ranges, min, r => (r.until - r.from).toDouble)

  test(
    "minPartitions: fewer ranges than tasks wanted are divided into contiguous parts of about equal size") {
    val hot = SplitRange(MemSplit("hot", 0L, 1L, 1000000L), 1000L, 11000L)
    val cold = SplitRange(MemSplit("cold", 0L, 1L, 1000000L), 0L, 2000L)
    val tasks = divide(Seq(hot, cold), 6)
    assert(
      tasks.size == 6 && tasks.forall(_.size == 1),
      "one part a task: two parts of one split never share a task")
    val parts = tasks.flatten.groupBy(_.split.splitId)
    assert(parts("hot").size == 5 && parts("cold").size == 1)
    for ((id, ps) <- parts; sorted = ps.sortBy(_.from)) {
      val whole = if (id == "hot") hot else cold
      assert(sorted.head.from == whole.from && sorted.last.until == whole.until, id)
      sorted.sliding(2).filter(_.size == 2).foreach(p => assert(p(0).until == p(1).from, id))
    }
    assert(parts("hot").map(r => r.until - r.from).toSet == Set(2000L))
  }

  test("minPartitions: enough ranges already, or ranges that cannot be cut, stay whole") {
    val ranges = (0 until 4).map(i => range(s"r$i", 100))
    assert(divide(ranges, 4) == ranges.map(Seq(_)))
    val one = SplitRange(MemSplit("one", 0L, 1L, 1000000L), 0L, 2L)
    assert(
      divide(Seq(one), 8).flatten.map(r => (r.from, r.until)) == Seq((0L, 1L), (1L, 2L)),
      "a part is a position at least")
    val bytes = SplitRange(MemSplit("file", 0L, 1L, 1000000L, countsRecords = false), 0L, 1000L)
    assert(divide(Seq(bytes), 8) == Seq(Seq(bytes)))
    // a huge minimum ends once nothing can be cut further; huge ranges are cut without overflow
    assert(divide(Seq(one), Int.MaxValue).size == 2)
    val huge = SplitRange(MemSplit("huge", 0L, 1L, Long.MaxValue), 0L, Long.MaxValue - 1)
    val parts = divide(Seq(huge), 7).flatten
    assert(
      parts.head.from == 0L && parts.last.until == Long.MaxValue - 1 && parts
        .sliding(2)
        .forall(p => p(0).until == p(1).from))
  }
}

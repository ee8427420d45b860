package sluice.spark

import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{SourceSplit, SplitRange}
import sluice.connector.file.FileSplit

/** Preferred executors of tasks: one per compressed file, the same batch after batch, spread over the executors. */
class TaskLocalitySuite extends AnyFunSuite {
  private val executors = (0 until 4).map(i => s"executor_host${i % 2}_$i").sorted

  private def gz(i: Int) = FileSplit(
    s"file:/data/in/part-${"%05d".format(i)}.json.gz",
    0L,
    10000L,
    3000L,
    1L,
    compressed = true)
  private def range(s: SourceSplit, from: Long, until: Long): SplitRange[SourceSplit] =
    SplitRange(s, from, until)

  test(
    "every range of a compressed file prefers the same executor, whatever else its task holds") {
    val file = gz(7)
    val alone = TaskLocality.preferred(Seq(range(file, 0, 100)), executors)
    assert(alone.size == 1 && executors.contains(alone.head))
    // later batches: later ranges, other files in the same task, another order
    (1 until 20).foreach { b =>
      val next = TaskLocality.preferred(Seq(range(file, b * 100L, b * 100L + 100)), executors)
      assert(next == alone)
      val shared = TaskLocality.preferred(
        Seq(range(gz(100 + b), 0, 5), range(file, b * 100L, b * 100L + 100)),
        executors)
      assert(shared.contains(alone.head))
    }
  }

  test("the files of a folder spread over the executors") {
    val counts = (0 until 400)
      .map(i => TaskLocality.executorOf(gz(i).localityKey.get, executors))
      .groupBy(identity)
      .map { case (e, s) => e -> s.size }
    assert(counts.keySet == executors.toSet, counts)
    assert(counts.values.forall(n => n >= 60 && n <= 140), counts) // about 100 each
  }

  test(
    "a task of several compressed files prefers each of their executors; other splits prefer none") {
    val files = (0 until 3).map(gz)
    val expected = files.map(f => TaskLocality.executorOf(f.path, executors)).distinct
    assert(TaskLocality.preferred(files.map(range(_, 0, 10)), executors) == expected)
    val plain = FileSplit("file:/data/in/a.json", 0L, 100L, 100L, 1L)
    assert(plain.localityKey.isEmpty)
    assert(TaskLocality.preferred(Seq(range(plain, 0, 100)), executors).isEmpty)
    // local mode: no executor besides the driver, no preference
    assert(TaskLocality.preferred(files.map(range(_, 0, 10)), IndexedSeq.empty).isEmpty)
  }

  test("the input partition hands its preferred executors to Spark") {
    val task = Seq(range(gz(1), 0, 10))
    val partition =
      SluiceInputPartition(task, locations = TaskLocality.preferred(task, executors))
    assert(
      partition.preferredLocations().toSeq == Seq(TaskLocality.executorOf(gz(1).path, executors)))
    assert(SluiceInputPartition(task).preferredLocations().isEmpty)
  }
}

package sluice.runtime

import org.apache.spark.sql.types.StructType
import org.scalatest.funsuite.AnyFunSuite

import sluice.api._

/** Planning a bounded source whole, without Spark: what a batch read (`spark.read`) is given to read. */
class BoundedReadSuite extends AnyFunSuite {

  private def plan(source: Source[_, _]): Seq[(String, Long, Long)] =
    SourceRuntime
      .forBoundedRead(source.asInstanceOf[Source[SourceSplit, Any]])
      .plan(PlanRequest.BoundedRead())
      .map(r => (r.split.splitId, r.from, r.until))

  test("every split from its start to its stop; empty splits are left out") {
    val source = new InMemorySource(
      Seq(MemSplit("a", 0, 1, 10), MemSplit("b", 0, 1, 0), MemSplit("c", 0, 1, 3)))
    assert(plan(source) == Seq(("a", 0L, 10L), ("c", 0L, 3L)))
  }

  test(
    "an enumerator that holds splits back until earlier ones are read (a hybrid) is told they were, until it is done") {
    val source = new StagedSource(
      Seq(
        Seq(MemSplit("s0", 0, 1, 5)),
        Nil,
        Seq(MemSplit("s2a", 0, 1, 7), MemSplit("s2b", 0, 1, 2))))
    assert(plan(source) == Seq(("s0", 0L, 5L), ("s2a", 0L, 7L), ("s2b", 0L, 2L)))
    assert(source.closed, "the enumerator is closed after planning")
  }

  test("a split without a stop, or an enumerator that never finishes, fails instead of waiting") {
    val noStop = new InMemorySource(Seq(MemSplit("x", 0, 1, 10, bounded = false)))
    assert(
      intercept[IllegalStateException](plan(noStop)).getMessage
        .contains("split x of the bounded memory source has no stop"))
    val endless = new StagedSource(Seq(Seq(MemSplit("s0", 0, 1, 5))), finishes = false)
    assert(
      intercept[IllegalStateException](plan(endless)).getMessage.contains("still expects splits"))
    assert(endless.closed)
  }
}

/**
 * Reveals its stages one by one, each only once every split of the earlier ones was reported
 * read to its stop, as a hybrid reveals its next member. With `finishes` false it never says it
 * is done.
 */
private final class StagedSource(stages: Seq[Seq[MemSplit]], finishes: Boolean = true)
    extends Source[MemSplit, Int] {
  @volatile var closed = false
  override def sourceType: String = "staged"
  override def boundedness: Boundedness = Boundedness.Bounded
  override def schema: StructType = new StructType()
  override def options: Map[String, String] = Map("source" -> sourceType)
  override def createEnumerator(): SplitEnumerator[MemSplit, Int] =
    new SplitEnumerator[MemSplit, Int] {
      private var stage = -1
      private var read = Set.empty[String]
      private def revealed = stages.take(stage + 1).flatten
      override def discoverSplits(): Seq[MemSplit] = {
        val due = stage < 0 || revealed.forall(s => read.contains(s.splitId))
        if (due && stage < stages.size - 1) { stage += 1; stages(stage) }
        else Nil
      }
      override def progressUpdated(progress: Seq[(MemSplit, SplitProgress)]): Unit =
        read ++= progress.collect {
          case (s, p) if s.stopPosition.contains(p.position) => s.splitId
        }
      override def availablePositions(splits: Seq[(MemSplit, Long)]): Map[String, Long] =
        Map.empty
      override def noMoreSplits: Boolean = finishes && stage == stages.size - 1
      override def snapshotState(): Int = stage
      override def close(): Unit = closed = true
    }
  override def restoreEnumerator(state: Int): SplitEnumerator[MemSplit, Int] =
    throw new UnsupportedOperationException
  override def createReader(context: ReaderContext): SplitReader[MemSplit] =
    throw new UnsupportedOperationException
  override def splitSerializer: VersionedSerializer[MemSplit] =
    throw new UnsupportedOperationException
  override def enumeratorStateSerializer: VersionedSerializer[Int] =
    throw new UnsupportedOperationException
}

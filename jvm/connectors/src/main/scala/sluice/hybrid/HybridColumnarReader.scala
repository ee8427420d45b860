package sluice.hybrid

import scala.collection.mutable

import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.api._

/**
 * Reads a hybrid's splits as column batches with the column readers of the members they belong
 * to (a batch of tasks is read this way only when every member in it can: `HybridSource.readsColumnar`),
 * one member after the other. A member gets its ranges, and its reader is made, only when its
 * turn comes: a reader's clocks start when it is handed ranges (Kafka's patience for records it
 * knows exist, `kafkaConsumer.pollTimeoutMs`), and must not run while earlier members are read.
 * The engine hands a task's ranges in one call, so a member read once is never waited on again
 * (ranges handed later to an earlier member would be read first, the later member waiting).
 * Batches pass through unchanged: the members' schemas are the hybrid's.
 */
final class HybridColumnarReader(hybrid: HybridSource, context: ReaderContext)
    extends ColumnarSplitReader[HybridSplit] {
  private val readers = mutable.Map[Int, ColumnarSplitReader[SourceSplit]]()

  /** Ranges not yet handed to their member's reader, by member. */
  private val waiting = mutable.Map[Int, Seq[SplitRange[SourceSplit]]]()
  private val unfinished = mutable.Map[Int, Int]()

  override def handleSplitsChanges(ranges: Seq[SplitRange[HybridSplit]]): Unit =
    ranges.groupBy(_.split.sourceIndex).foreach { case (index, rs) =>
      waiting(index) =
        waiting.getOrElse(index, Nil) ++ rs.map(r => SplitRange(r.split.child, r.from, r.until))
      unfinished(index) = unfinished.getOrElse(index, 0) + rs.size
    }

  override def fetch(): ColumnarFetch =
    unfinished.filter(_._2 > 0).keys.minOption match {
      case None => ColumnarFetch.empty(Set.empty)
      case Some(index) =>
        val reader = readers.getOrElseUpdate(index, readerOf(index))
        waiting.remove(index).foreach(reader.handleSplitsChanges)
        val fetched = reader.fetch()
        unfinished(index) -= fetched.finishedSplits.size
        new Prefixed(index, fetched)
    }

  private def readerOf(index: Int): ColumnarSplitReader[SourceSplit] =
    HybridSource
      .columnar(hybrid.resolvedSourceAt(index))
      .getOrElse(
        throw new IllegalStateException(s"HybridSource: source $index reads no column batches"))
      .createColumnarReader(new MemberContext(context, index))

  override def close(): Unit = readers.values.foreach(_.close())

  /** A member's fetch under the hybrid's split ids. */
  private final class Prefixed(index: Int, fetched: ColumnarFetch) extends ColumnarFetch {
    override def splitId: String = Option(fetched.splitId).map(HybridSplit.id(index, _)).orNull
    override def batch: ColumnarBatch = fetched.batch
    override def position: Long = fetched.position
    override def recordTime(row: Int): Long = fetched.recordTime(row)
    override def maxRecordTime: Long = fetched.maxRecordTime
    override def finishedSplits: Set[String] =
      fetched.finishedSplits.map(HybridSplit.id(index, _))
  }
}

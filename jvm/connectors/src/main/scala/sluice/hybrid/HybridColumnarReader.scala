package sluice.hybrid

import scala.collection.mutable

import org.apache.spark.sql.vectorized.ColumnarBatch

import sluice.api._

/**
 * Reads a hybrid's splits as column batches with the column readers of the members they belong
 * to (a batch of tasks is read this way only when every member in it can: `HybridSource.readsColumnar`),
 * one member after the other. Batches pass through unchanged: the members' schemas are the hybrid's.
 */
final class HybridColumnarReader(hybrid: HybridSource, context: ReaderContext)
    extends ColumnarSplitReader[HybridSplit] {
  private val readers = mutable.LinkedHashMap[Int, ColumnarSplitReader[SourceSplit]]()
  private val unfinished = mutable.Map[Int, Int]()

  override def handleSplitsChanges(ranges: Seq[SplitRange[HybridSplit]]): Unit =
    ranges.groupBy(_.split.sourceIndex).toSeq.sortBy(_._1).foreach { case (index, rs) =>
      val reader = readers.getOrElseUpdate(
        index,
        HybridSource
          .columnar(hybrid.resolvedSourceAt(index))
          .getOrElse(throw new IllegalStateException(
            s"HybridSource: source $index reads no column batches"))
          .createColumnarReader(new MemberContext(context, index)))
      reader.handleSplitsChanges(rs.map(r => SplitRange(r.split.child, r.from, r.until)))
      unfinished(index) = unfinished.getOrElse(index, 0) + rs.size
    }

  override def fetch(): ColumnarFetch =
    readers.keys.find(i => unfinished.getOrElse(i, 0) > 0) match {
      case None => ColumnarFetch.empty(Set.empty)
      case Some(index) =>
        val fetched = readers(index).fetch()
        unfinished(index) -= fetched.finishedSplits.size
        new Prefixed(index, fetched)
    }

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

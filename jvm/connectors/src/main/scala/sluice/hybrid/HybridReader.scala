package sluice.hybrid

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow

import sluice.api._
import sluice.config.RecordLayout

/**
 * Reads a hybrid's splits with the readers of the sources they belong to (normally one: the
 * active source), and forwards pause/resume to them (FLINK-37308 forgot this).
 */
final class HybridReader(hybrid: HybridSource, context: ReaderContext)
    extends PausableSplitReader[HybridSplit] {
  private val readers = mutable.LinkedHashMap[Int, SplitReader[SourceSplit]]()
  private val unfinished = mutable.Map[Int, Int]()
  private var turn = 0

  override def handleSplitsChanges(ranges: Seq[SplitRange[HybridSplit]]): Unit =
    ranges.groupBy(_.split.sourceIndex).toSeq.sortBy(_._1).foreach { case (index, rs) =>
      val reader = readerOf(index)
      reader.handleSplitsChanges(rs.map(r => SplitRange(r.split.child, r.from, r.until)))
      unfinished(index) = unfinished.getOrElse(index, 0) + rs.size
    }

  override def fetch(): RecordsWithSplitIds = fetch(Long.MaxValue)

  override def fetch(maxWaitMs: Long): RecordsWithSplitIds = {
    val pending = readers.keys.filter(i => unfinished.getOrElse(i, 0) > 0).toIndexedSeq
    if (pending.isEmpty) return RecordsWithSplitIds.empty(Set.empty)
    turn = (turn + 1) % pending.size
    val index = pending(turn)
    val records =
      if (maxWaitMs == Long.MaxValue) readers(index).fetch() else readers(index).fetch(maxWaitMs)
    unfinished(index) -= records.finishedSplits.size
    new Prefixed(index, records)
  }

  override def pauseOrResumeSplits(toPause: Seq[HybridSplit], toResume: Seq[HybridSplit]): Unit =
    (toPause ++ toResume).map(_.sourceIndex).distinct.foreach { i =>
      readerOf(i) match {
        case reader: PausableSplitReader[SourceSplit @unchecked] =>
          reader.pauseOrResumeSplits(
            toPause.filter(_.sourceIndex == i).map(_.child),
            toResume.filter(_.sourceIndex == i).map(_.child))
        case _ =>
          throw new UnsupportedOperationException(
            s"HybridSource: the readers of source $i (${hybrid.resolvedSourceAt(i).sourceType}) cannot pause splits.")
      }
    }

  private def readerOf(index: Int): SplitReader[SourceSplit] =
    readers.getOrElseUpdate(
      index,
      hybrid.resolvedSourceAt(index).createReader(new MemberContext(context, index)))

  override def close(): Unit = readers.values.foreach(_.close())

  /** A child's records under the hybrid's split ids. */
  private final class Prefixed(index: Int, records: RecordsWithSplitIds)
      extends RecordsWithSplitIds {
    override def nextSplit(): String = {
      val id = records.nextSplit()
      if (id == null) null else HybridSplit.id(index, id)
    }
    override def nextRecord(): Boolean = records.nextRecord()
    override def recordHasMoreRows: Boolean = records.recordHasMoreRows
    override def row: InternalRow = records.row
    override def eventTime: Long = records.eventTime
    override def arrivalTime: Long = records.arrivalTime
    override def position: Long = records.position
    override def finishedSplits: Set[String] =
      records.finishedSplits.map(HybridSplit.id(index, _))
  }
}

package sluice.runtime

import org.apache.spark.sql.types.StructType

import sluice.api._

/**
 * A source for runtime tests, known entirely in advance: split `id` holds `records` records, the
 * record at position `p` having event time `startMs + p * stepMs`. Its enumerator has an exact
 * event-time index, as Kafka's and the generator's have. Only the driver side exists.
 */
final case class MemSplit(splitId: String, startMs: Long, stepMs: Long, records: Long, bounded: Boolean = true)
  extends SourceSplit {
  override def startPosition: Long = 0L
  override def stopPosition: Option[Long] = Option.when(bounded)(records)
  def eventTime(position: Long): Long = startMs + position * stepMs
}

final class InMemorySource(splits: Seq[MemSplit]) extends Source[MemSplit, Boolean] with SupportsSplitPausing[MemSplit] {
  override def sourceType: String = "memory"
  override def boundedness: Boundedness = Boundedness.Bounded
  override def schema: StructType = new StructType()
  override def options: Map[String, String] = Map("source" -> sourceType)
  override def createEnumerator(): SplitEnumerator[MemSplit, Boolean] = new InMemoryEnumerator(splits, discovered = false)
  override def restoreEnumerator(state: Boolean): SplitEnumerator[MemSplit, Boolean] = new InMemoryEnumerator(splits, state)
  override def createReader(context: ReaderContext): SplitReader[MemSplit] =
    throw new UnsupportedOperationException("runtime tests read no records")

  override val splitSerializer: VersionedSerializer[MemSplit] = new VersionedSerializer[MemSplit] {
    override def version: Int = 1
    override def serialize(s: MemSplit): String = s"${s.splitId};${s.startMs};${s.stepMs};${s.records};${s.bounded}"
    override def deserialize(version: Int, text: String): MemSplit = {
      val Array(id, start, step, records, bounded) = text.split(";")
      MemSplit(id, start.toLong, step.toLong, records.toLong, bounded.toBoolean)
    }
  }
  override val enumeratorStateSerializer: VersionedSerializer[Boolean] = new VersionedSerializer[Boolean] {
    override def version: Int = 1
    override def serialize(discovered: Boolean): String = discovered.toString
    override def deserialize(version: Int, text: String): Boolean = text.toBoolean
  }
}

final class InMemoryEnumerator(splits: Seq[MemSplit], private var discovered: Boolean)
  extends SplitEnumerator[MemSplit, Boolean] with SupportsEventTimeIndex[MemSplit] {
  override def discoverSplits(): Seq[MemSplit] = if (discovered) Nil else { discovered = true; splits }
  override def availablePositions(known: Seq[MemSplit]): Map[String, Long] = known.map(s => s.splitId -> s.records).toMap
  override def noMoreSplits: Boolean = discovered
  override def snapshotState(): Boolean = discovered

  override def positionsBefore(ranges: Seq[SplitRange[MemSplit]], eventTimeMs: Long): Map[String, Long] =
    ranges.map { r =>
      val s = r.split
      val first = if (eventTimeMs <= s.startMs) 0L else if (s.stepMs == 0) Long.MaxValue
        else (eventTimeMs - s.startMs + s.stepMs - 1) / s.stepMs
      s.splitId -> math.min(r.until, math.max(r.from, first))
    }.toMap
  override def latestEventTimes(ranges: Seq[SplitRange[MemSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).map(r => r.split.splitId -> r.split.eventTime(r.until - 1)).toMap
  override def firstEventTimes(ranges: Seq[SplitRange[MemSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).map(r => r.split.splitId -> r.split.eventTime(r.from)).toMap
}

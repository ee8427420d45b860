package sluice.runtime

import org.apache.spark.sql.types.StructType

import sluice.api._

/**
 * A source for runtime tests, known entirely in advance: split `id` holds `records` records, the
 * record at position `p` having event time `startMs + p * stepMs`. Its enumerator has an exact
 * event-time index, as Kafka's and the generator's have. Only the driver side exists.
 */
final case class MemSplit(
    splitId: String,
    startMs: Long,
    stepMs: Long,
    records: Long,
    bounded: Boolean = true,
    countsRecords: Boolean = true)
    extends SourceSplit {
  override def startPosition: Long = 0L
  override def positionsCountRecords: Boolean = countsRecords
  override def stopPosition: Option[Long] = Option.when(bounded)(records)
  def eventTime(position: Long): Long = startMs + position * stepMs
}

/**
 * `keepsEndState`: the enumerator says, as a hybrid does, that its end state is derived from.
 * `later`: splits found by the second, third... discovery (files that appear, partitions added).
 */
final class InMemorySource(
    splits: Seq[MemSplit],
    keepsEndState: Boolean = false,
    later: Seq[Seq[MemSplit]] = Nil)
    extends Source[MemSplit, Int]
    with SupportsSplitPausing[MemSplit] {
  private val rounds = splits +: later
  override def sourceType: String = "memory"
  override def boundedness: Boundedness = Boundedness.Bounded
  override def schema: StructType = new StructType()
  override def options: Map[String, String] = Map("source" -> sourceType)

  /** The enumerator made last (tests read what it was handed). */
  @volatile var lastEnumerator: InMemoryEnumerator = _
  override def createEnumerator(): SplitEnumerator[MemSplit, Int] = {
    lastEnumerator = new InMemoryEnumerator(rounds, discoveries = 0, keepsEndState)
    lastEnumerator
  }
  override def restoreEnumerator(state: Int): SplitEnumerator[MemSplit, Int] = {
    lastEnumerator = new InMemoryEnumerator(rounds, state, keepsEndState)
    lastEnumerator
  }
  override def createReader(context: ReaderContext): SplitReader[MemSplit] =
    throw new UnsupportedOperationException("runtime tests read no records")

  override val splitSerializer: VersionedSerializer[MemSplit] =
    new VersionedSerializer[MemSplit] {
      override def version: Int = 1
      override def serialize(s: MemSplit): String =
        s"${s.splitId};${s.startMs};${s.stepMs};${s.records};${s.bounded}"
      override def deserialize(version: Int, text: String): MemSplit = {
        val Array(id, start, step, records, bounded) = text.split(";")
        MemSplit(id, start.toLong, step.toLong, records.toLong, bounded.toBoolean)
      }
    }
  override val enumeratorStateSerializer: VersionedSerializer[Int] =
    new VersionedSerializer[Int] {
      override def version: Int = 1
      override def serialize(discoveries: Int): String = discoveries.toString
      override def deserialize(version: Int, text: String): Int = text.toInt
    }
}

/** Its state is how many discoveries it made: the n-th finds `rounds(n)`. */
final class InMemoryEnumerator(
    rounds: Seq[Seq[MemSplit]],
    private var discoveries: Int,
    override val keepsEndState: Boolean)
    extends SplitEnumerator[MemSplit, Int]
    with SupportsEventTimeIndex[MemSplit] {
  override def discoverSplits(): Seq[MemSplit] = {
    val found = rounds.lift(discoveries).getOrElse(Nil)
    discoveries += 1
    found
  }

  /** The positions each `availablePositions` call was handed, split id -> position. */
  @volatile var handed: Vector[Map[String, Long]] = Vector.empty
  override def availablePositions(known: Seq[(MemSplit, Long)]): Map[String, Long] = {
    handed :+= known.map { case (s, p) => s.splitId -> p }.toMap
    known.map { case (s, _) => s.splitId -> s.records }.toMap
  }
  override def noMoreSplits: Boolean = discoveries >= rounds.size
  override def snapshotState(): Int = discoveries

  override def positionsBefore(
      ranges: Seq[SplitRange[MemSplit]],
      eventTimeMs: Long): Map[String, Long] =
    ranges.map { r =>
      val s = r.split
      val first =
        if (eventTimeMs <= s.startMs) 0L
        else if (s.stepMs == 0) Long.MaxValue
        else (eventTimeMs - s.startMs + s.stepMs - 1) / s.stepMs
      s.splitId -> math.min(r.until, math.max(r.from, first))
    }.toMap
  override def latestEventTimes(ranges: Seq[SplitRange[MemSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).map(r => r.split.splitId -> r.split.eventTime(r.until - 1)).toMap
  override def firstEventTimes(ranges: Seq[SplitRange[MemSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).map(r => r.split.splitId -> r.split.eventTime(r.from)).toMap
}

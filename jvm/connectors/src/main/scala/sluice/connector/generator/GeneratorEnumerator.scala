package sluice.connector.generator

import sluice.api.{SplitEnumerator, SplitRange, SupportsEventTimeIndex, VersionedSerializer}

/**
 * The generator's split enumerator. Splits are known up front; an unbounded generator makes
 * `rowsPerSecond` records per split available per second since `startTimeMs`, which is part of
 * the state so that a restarted query does not regenerate the backlog. Event time is a formula
 * of the record index, so its event-time index is exact.
 */
final class GeneratorEnumerator(config: GeneratorConfig, startTimeMs: Long, clock: () => Long)
    extends SplitEnumerator[GeneratorSplit, GeneratorEnumeratorState]
    with SupportsEventTimeIndex[GeneratorSplit] {

  private var discovered = false

  override def discoverSplits(): Seq[GeneratorSplit] =
    if (discovered) Nil
    else {
      discovered = true
      (0 until config.splits).map(i =>
        GeneratorSplit(i, config.recordsPerSplit, config.rowsPerSecond.map(_ => startTimeMs)))
    }

  override def availablePositions(splits: Seq[(GeneratorSplit, Long)]): Map[String, Long] = {
    val now = clock()
    splits.map { case (s, _) =>
      s.splitId -> GeneratorEnumerator.available(config, s, startTimeMs, now)
    }.toMap
  }

  override def noMoreSplits: Boolean = discovered

  override def positionsBefore(
      ranges: Seq[SplitRange[GeneratorSplit]],
      eventTimeMs: Long): Map[String, Long] =
    ranges.map { r =>
      val first = config.eventTimeMs(r.split.index, 0)
      val step = config.eventTimeStepMs
      // the first index whose event time is >= eventTimeMs
      val index =
        if (eventTimeMs <= first) 0L
        else if (step == 0) Long.MaxValue
        else ((BigInt(eventTimeMs) - first + step - 1) / step).min(BigInt(Long.MaxValue)).toLong
      r.split.splitId -> math.min(r.until, math.max(r.from, index))
    }.toMap

  override def latestEventTimes(ranges: Seq[SplitRange[GeneratorSplit]]): Map[String, Long] =
    ranges
      .filterNot(_.isEmpty)
      .map(r => r.split.splitId -> config.eventTimeMs(r.split.index, r.until - 1))
      .toMap

  override def firstEventTimes(ranges: Seq[SplitRange[GeneratorSplit]]): Map[String, Long] =
    ranges
      .filterNot(_.isEmpty)
      .map(r => r.split.splitId -> config.eventTimeMs(r.split.index, r.from))
      .toMap

  override def snapshotState(): GeneratorEnumeratorState =
    GeneratorEnumeratorState(startTimeMs, discovered)
}

private[generator] object GeneratorEnumerator {

  /** How many records of `split` exist at `nowMs`: `rowsPerSecond` per second since `sinceMs`, up to its stop. */
  def available(
      config: GeneratorConfig,
      split: GeneratorSplit,
      sinceMs: Long,
      nowMs: Long): Long = {
    val generated = config.rowsPerSecond match {
      case Some(rate) =>
        // rate * seconds without overflowing for large rates or long-running queries
        val byRate = BigInt(rate) * math.max(0L, nowMs - sinceMs) / 1000
        if (byRate > Long.MaxValue) Long.MaxValue else byRate.toLong
      case None => Long.MaxValue
    }
    split.stopPosition.fold(generated)(math.min(_, generated))
  }
}

final case class GeneratorEnumeratorState(startTimeMs: Long, splitsDiscovered: Boolean)

private[generator] object GeneratorStateSerializer
    extends VersionedSerializer[GeneratorEnumeratorState] {
  override val version: Int = 1
  override def serialize(state: GeneratorEnumeratorState): String =
    s"${state.startTimeMs}:${state.splitsDiscovered}"
  override def deserialize(version: Int, text: String): GeneratorEnumeratorState = {
    if (version > this.version) {
      throw VersionedSerializer.unsupported("generator enumerator state", version, this.version)
    }
    val Array(start, discovered) = text.split(":", -1)
    GeneratorEnumeratorState(start.toLong, discovered.toBoolean)
  }
}

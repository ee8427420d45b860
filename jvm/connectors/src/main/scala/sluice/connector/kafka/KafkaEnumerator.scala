package sluice.connector.kafka

import org.apache.kafka.clients.admin.OffsetSpec
import org.apache.kafka.common.TopicPartition

import sluice.api._
import sluice.errors.SluiceError

/**
 * Discovers topic-partitions in the driver, resolves their start (and, for a bounded source, stop)
 * offsets once, when they are first seen, and reports how far each can be read. The resolved
 * offsets live in the splits, hence in the offset log: a restarted query never re-resolves
 * "latest" or a timestamp differently.
 *
 * Its event-time index is the record timestamp: `offsetsForTimes` finds, exactly, the first
 * offset at or after a time, so alignment can cut a partition's range where it would pass the limit.
 *
 * It asks the brokers through `KafkaAdminLookups`, reads first records' timestamps through
 * `KafkaFirstRecordTimes`, and leaves every data-loss decision to `KafkaDataLoss`.
 */
final class KafkaEnumerator(config: KafkaConfig, restored: Option[KafkaEnumeratorState])
    extends SplitEnumerator[KafkaPartitionSplit, KafkaEnumeratorState]
    with SupportsEventTimeIndex[KafkaPartitionSplit] {
  import KafkaEnumerator._

  private val lookups = new KafkaAdminLookups(config)
  private val firstRecordTimes = new KafkaFirstRecordTimes(config)
  private val dataLoss = new KafkaDataLoss(config.failOnDataLoss)

  private var discovered: Set[TopicPartition] = restored.map(_.discovered).getOrElse(Set.empty)
  private var initialDiscoveryDone = restored.exists(_.initialDiscoveryDone)
  private var topicIds: Map[String, String] = restored.map(_.topicIds).getOrElse(Map.empty)
  private var incarnations: Map[TopicPartition, Int] =
    restored.map(_.incarnations).getOrElse(Map.empty)

  /** Partitions whose log no longer continues where they were read, and the offset each goes on from. */
  private var broken: Map[TopicPartition, Long] = Map.empty
  private var lastDiscoveryMs = Long.MinValue

  private def bounded = config.stopping.isDefined

  override def discoverSplits(): Seq[KafkaPartitionSplit] = {
    val now = System.currentTimeMillis()
    // a restored enumerator discovers at its first planning (`now - MinValue` would overflow)
    val due =
      lastDiscoveryMs == Long.MinValue || now - lastDiscoveryMs >= config.partitionDiscoveryIntervalMs
    if (initialDiscoveryDone && (bounded || !due)) {
      return goOnFromBroken()
    }
    lastDiscoveryMs = now
    val (partitions, ids) = lookups.partitionsAndTopicIds()
    recreatedTopics(ids)
    val replacements = goOnFromBroken()
    val fresh = (partitions -- discovered).toSeq.sortBy(tp => (tp.topic, tp.partition))
    val splits =
      if (fresh.isEmpty) Nil
      else {
        // Partitions that appear after the query started are read from their beginning, as Spark does.
        val starting = if (initialDiscoveryDone) OffsetsInitializer.Earliest else config.starting
        val starts = resolve(fresh, starting, atEnd = false)
        val stops = config.stopping.map(resolve(fresh, _, atEnd = true))
        fresh.map(tp =>
          KafkaPartitionSplit(
            tp.topic,
            tp.partition,
            starts(tp),
            stops.map(_(tp)),
            incarnations.getOrElse(tp, 0)))
      }
    discovered ++= fresh
    topicIds ++= ids.filter { case (topic, _) => discovered.exists(_.topic == topic) }
    initialDiscoveryDone = true
    replacements ++ splits
  }

  /**
   * A topic whose id changed was deleted and re-created since it was read: its old records not
   * read yet are lost, and its offsets no longer continue the old ones. An error, or with
   * failOnDataLoss=false every known partition goes on from the new topic's beginning.
   */
  private def recreatedTopics(ids: Map[String, String]): Unit = {
    val recreated = ids.filter { case (topic, id) => topicIds.get(topic).exists(_ != id) }
    if (recreated.isEmpty) return
    recreated.foreach { case (topic, id) => dataLoss.topicRecreated(topic, topicIds(topic), id) }
    val partitions = discovered.filter(tp => recreated.contains(tp.topic)).toSeq
    val earliest = lookups.offsets(partitions, OffsetSpec.earliest(), tolerateMissing = true)
    broken ++= partitions.flatMap(tp => earliest.get(tp).map(tp -> _))
    // a partition the new topic does not have is finished; should it be added later, it is new
    partitions.filterNot(earliest.contains).foreach { tp =>
      incarnations += tp -> (incarnations.getOrElse(tp, 0) + 1)
      discovered -= tp
    }
    topicIds ++= recreated
  }

  /**
   * Partitions whose log no longer continues where they were read go on in a new split (their
   * next incarnation) from the offset recorded when that was found; the old split is finished.
   * A bounded source only finishes them: its stop offsets belonged to the old log.
   */
  private def goOnFromBroken(): Seq[KafkaPartitionSplit] = {
    val splits =
      broken.toSeq.sortBy { case (tp, _) => (tp.topic, tp.partition) }.map { case (tp, from) =>
        val next = incarnations.getOrElse(tp, 0) + 1
        incarnations += tp -> next
        log.warn(s"KafkaSource: partition $tp no longer continues where it was read; it goes on from offset " +
          s"$from as split ${KafkaPartitionSplit(tp.topic, tp.partition, from, None, next).splitId} (failOnDataLoss=false).")
        KafkaPartitionSplit(tp.topic, tp.partition, from, None, next)
      }
    broken = Map.empty
    if (bounded) Nil else splits
  }

  /** A split of an incarnation that was replaced reads nothing more. */
  override def isFinished(split: KafkaPartitionSplit, position: Long): Boolean =
    super.isFinished(split, position) || split.incarnation < incarnations.getOrElse(
      split.topicPartition,
      0)

  override def noMoreSplits: Boolean = bounded && initialDiscoveryDone

  /**
   * How far each split can be read now, and — the one state change, made here explicitly — the
   * partitions found ending below what was read, to go on from their new end at the next planning
   * (see `endsNow`).
   */
  override def availablePositions(splits: Seq[(KafkaPartitionSplit, Long)]): Map[String, Long] = {
    val found = endsNow(splits)
    found.endedBelowRead.foreach { case (tp, end) => goOnFromNewEnd(tp, end) }
    found.available
  }

  /**
   * A query, changing nothing: how far each split can be read now (never past a bounded split's
   * stop), and the partitions whose log ends below the offset already read (`splits` come with
   * the offset readers reached, as the runtime keeps it) (truncated by an
   * unclean leader election, or the topic re-created before its id was checked). Each loss it
   * finds is decided by `KafkaDataLoss`: an error, as in Spark's Kafka source, or with
   * failOnDataLoss=false reported in the answer.
   */
  private[kafka] def endsNow(splits: Seq[(KafkaPartitionSplit, Long)]): Ends = {
    val (finished, current) = splits.partition { case (s, read) => isFinished(s, read) }
    val done = finished.map { case (s, read) => s.splitId -> read }.toMap
    if (current.isEmpty) return Ends(done, Nil)
    val latest = lookups.offsets(
      current.map(_._1.topicPartition),
      OffsetSpec.latest(),
      tolerateMissing = true)
    val belowRead = Seq.newBuilder[(TopicPartition, Long)]
    val available = done ++ current.map { case (s, at) =>
      val end = latest.get(s.topicPartition) match {
        case Some(offset) =>
          Some(at).filter(offset < _).foreach { read =>
            dataLoss.logEndsBelowRead(s.topicPartition, offset, read)
            belowRead += s.topicPartition -> offset
          }
          offset
        case None =>
          dataLoss.partitionGoneAtPlanning(s.splitId)
          // gone: a bounded split is planned to its end, so the reader finds it gone, counts the
          // loss and finishes it (a hybrid must not wait for it forever); an unbounded one stops
          s.stopPosition.getOrElse(s.startPosition)
      }
      s.splitId -> s.stopPosition.fold(end)(math.min(_, end))
    }.toMap
    Ends(available, belowRead.result())
  }

  /**
   * A partition's log ends at `end`, below what was read (failOnDataLoss=false): it goes on from
   * there, as Spark's source does, in a new split the next planning makes.
   */
  private def goOnFromNewEnd(tp: TopicPartition, end: Long): Unit = {
    broken += tp -> end
    // a re-created topic also ends early: look at its id before going on, or it would be reset twice
    lastDiscoveryMs = Long.MinValue
  }

  override def positionsBefore(
      ranges: Seq[SplitRange[KafkaPartitionSplit]],
      eventTimeMs: Long): Map[String, Long] = {
    // Kafka reserves negative timestamps for "latest"/"earliest"; records are never that old.
    if (ranges.isEmpty || eventTimeMs <= 0)
      return ranges.map(r => r.split.splitId -> r.from).toMap
    val found = lookups.offsetInfos(
      ranges.map(_.split.topicPartition),
      OffsetSpec.forTimestamp(eventTimeMs),
      tolerateMissing = true)
    ranges.map { r =>
      // the first offset with a timestamp >= eventTimeMs; none (-1): every record is earlier
      val first = found.get(r.split.topicPartition).map(_.offset()).getOrElse(r.from)
      r.split.splitId -> (if (first < 0) r.until else math.min(r.until, math.max(r.from, first)))
    }.toMap
  }

  /**
   * The partition's largest timestamp (KIP-734, brokers 3.0 and later): an upper bound of the
   * range's, exact when the range reaches the partition's end. Brokers that cannot answer leave
   * alignment with the splits' reported event times only.
   */
  override def latestEventTimes(
      ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] = {
    val found = lookups.maxTimestamps(ranges.map(_.split.topicPartition))
    ranges
      .flatMap(r =>
        found
          .get(r.split.topicPartition)
          .filter(_.offset() >= 0)
          .map(r.split.splitId -> _.timestamp()))
      .toMap
  }

  override def firstEventTimes(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] =
    firstRecordTimes.of(ranges)

  override def snapshotState(): KafkaEnumeratorState =
    KafkaEnumeratorState(discovered, initialDiscoveryDone, topicIds, incarnations)

  override def metrics: Map[String, String] = Map(
    KafkaMetrics.PartitionsReset -> incarnations.values.sum.toString)

  /**
   * Spark's Kafka source's figures, computed as it computes them: per topic-partition, the
   * latest offset the last planning found minus the offset the last batch ended at; their
   * minimum, maximum (as integers) and mean (as a double). A partition that went on in a new
   * split (re-created topic) counts once, by its current split.
   */
  override def backlogMetrics(behind: Seq[(KafkaPartitionSplit, Long)]): Map[String, String] = {
    val perPartition =
      behind.groupBy(_._1.topicPartition).values.map(_.maxBy(_._1.incarnation)._2).toSeq
    if (perPartition.isEmpty) Map.empty
    else
      Map(
        KafkaMetrics.MinOffsetsBehindLatest -> perPartition.min.toString,
        KafkaMetrics.MaxOffsetsBehindLatest -> perPartition.max.toString,
        KafkaMetrics.AvgOffsetsBehindLatest -> (perPartition.sum.toDouble / perPartition.size).toString)
  }

  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState =
    EnumeratorEndState(
      finished,
      Map("partitions" -> finished.map(_.splitId).sorted.mkString(",")))

  override def close(): Unit = lookups.close()

  /** Offsets an initializer designates, per partition. */
  private def resolve(
      partitions: Seq[TopicPartition],
      initializer: OffsetsInitializer,
      atEnd: Boolean): Map[TopicPartition, Long] = {
    import OffsetsInitializer._
    lazy val earliest =
      lookups.offsets(partitions, OffsetSpec.earliest(), tolerateMissing = false)
    lazy val latest = lookups.offsets(partitions, OffsetSpec.latest(), tolerateMissing = false)
    def byTime(times: Map[TopicPartition, Long]) = {
      // The first offset with a timestamp >= the given one; none such: the partition's end, or
      // for a start under Spark's default strategy, an error.
      val found = partitions.groupBy(tp => times(tp)).flatMap { case (ts, tps) =>
        lookups.offsets(tps, OffsetSpec.forTimestamp(ts), tolerateMissing = false)
      }
      partitions.map { tp =>
        val offset = found.get(tp).filter(_ >= 0)
        if (offset.isEmpty && !atEnd && !config.startPastLastRecordAtEnd) {
          throw SluiceError.sourceFault(
            s"KafkaSource: no record of $tp has a timestamp at or after ${times(tp)}, " +
              s"the start option '${config.startingOption}' gives; with startingOffsetsByTimestampStrategy=latest " +
              "(the default is error, as in Spark) such a partition starts at its end.")
        }
        tp -> offset.getOrElse(latest(tp))
      }.toMap
    }
    initializer match {
      case Earliest => earliest
      case Latest => latest
      case Specific(offsets) =>
        partitions.map { tp =>
          tp -> (offsets.get(tp) match {
            case Some(EarliestOffset) => earliest(tp)
            case Some(LatestOffset) => latest(tp)
            case Some(offset) => offset
            case None => if (atEnd) latest(tp) else earliest(tp)
          })
        }.toMap
      case Timestamp(ts) => byTime(partitions.map(_ -> ts).toMap)
      case TimestampPerPartition(times) =>
        val missing = partitions.filterNot(times.contains)
        if (missing.nonEmpty) {
          throw SluiceError.config(
            s"KafkaSource: no timestamp given for partitions ${missing.mkString(", ")} in " +
              s"${if (atEnd) "endingOffsetsByTimestamp" else "startingOffsetsByTimestamp"}; give one for every partition.")
        }
        byTime(times)
    }
  }
}

private object KafkaEnumerator {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[KafkaEnumerator])

  /**
   * What one look at the partitions' ends found: each split's available position, and the
   * partitions whose log ends below what was read, with that end.
   */
  final case class Ends(available: Map[String, Long], endedBelowRead: Seq[(TopicPartition, Long)])
}

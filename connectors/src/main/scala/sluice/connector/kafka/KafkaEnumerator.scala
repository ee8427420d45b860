package sluice.connector.kafka

import java.util.Properties
import java.util.concurrent.{ExecutionException, TimeUnit}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, ListOffsetsOptions, OffsetSpec}
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo
import org.apache.kafka.common.{IsolationLevel, TopicPartition}
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException

import sluice.api._

/**
 * Discovers topic-partitions with an Admin client in the driver, resolves their start (and, for a
 * bounded source, stop) offsets once, when they are first seen, and reports how far each can be
 * read. The resolved offsets live in the splits, hence in the offset log: a restarted query never
 * re-resolves "latest" or a timestamp differently.
 *
 * Its event-time index is the record timestamp: `offsetsForTimes` finds, exactly, the first
 * offset at or after a time, so alignment can cut a partition's range where it would pass the limit.
 */
final class KafkaEnumerator(config: KafkaConfig, restored: Option[KafkaEnumeratorState])
  extends SplitEnumerator[KafkaPartitionSplit, KafkaEnumeratorState]
  with SupportsEventTimeIndex[KafkaPartitionSplit] {
  import KafkaEnumerator._

  private var discovered: Set[TopicPartition] = restored.map(_.discovered).getOrElse(Set.empty)
  private var initialDiscoveryDone = restored.exists(_.initialDiscoveryDone)
  private var lastDiscoveryMs = Long.MinValue
  private var adminClient: Admin = _
  private def admin: Admin = {
    if (adminClient == null) {
      val props = new Properties()
      config.consumerProperties.foreach { case (k, v) => props.put(k, v) }
      props.put(AdminClientConfig.CLIENT_ID_CONFIG, s"sluice-enumerator-${java.util.UUID.randomUUID()}")
      adminClient = Admin.create(props)
    }
    adminClient
  }

  private def bounded = config.stopping.isDefined

  override def discoverSplits(): Seq[KafkaPartitionSplit] = {
    val now = System.currentTimeMillis()
    if (initialDiscoveryDone && (bounded || now - lastDiscoveryMs < config.partitionDiscoveryIntervalMs)) {
      return Nil
    }
    lastDiscoveryMs = now
    val fresh = (currentPartitions() -- discovered).toSeq.sortBy(tp => (tp.topic, tp.partition))
    val splits = if (fresh.isEmpty) Nil else {
      // Partitions that appear after the query started are read from their beginning, as Spark does.
      val starting = if (initialDiscoveryDone) OffsetsInitializer.Earliest else config.starting
      val starts = resolve(fresh, starting, atEnd = false)
      val stops = config.stopping.map(resolve(fresh, _, atEnd = true))
      fresh.map(tp => KafkaPartitionSplit(tp.topic, tp.partition, starts(tp), stops.map(_(tp))))
    }
    discovered ++= fresh
    initialDiscoveryDone = true
    splits
  }

  override def noMoreSplits: Boolean = bounded && initialDiscoveryDone

  override def availablePositions(splits: Seq[KafkaPartitionSplit]): Map[String, Long] = {
    if (splits.isEmpty) return Map.empty
    val latest = listOffsets(splits.map(_.topicPartition), OffsetSpec.latest(), tolerateMissing = true)
    splits.map { s =>
      val end = latest.get(s.topicPartition) match {
        case Some(offset) => offset
        case None if config.failOnDataLoss =>
          throw new IllegalStateException(
            s"KafkaSource: partition ${s.splitId} is gone (its topic or partition was deleted), so " +
              "records not read yet may be lost. Set failOnDataLoss=false to go on without it.")
        // gone: a bounded split is planned to its end, so the reader finds it gone, counts the
        // loss and finishes it (a hybrid must not wait for it forever); an unbounded one stops
        case None => s.stopPosition.getOrElse(s.startPosition)
      }
      s.splitId -> s.stopPosition.fold(end)(math.min(_, end))
    }.toMap
  }

  override def positionsBefore(ranges: Seq[SplitRange[KafkaPartitionSplit]], eventTimeMs: Long): Map[String, Long] = {
    // Kafka reserves negative timestamps for "latest"/"earliest"; records are never that old.
    if (ranges.isEmpty || eventTimeMs <= 0) return ranges.map(r => r.split.splitId -> r.from).toMap
    val found = listOffsetInfos(ranges.map(_.split.topicPartition), OffsetSpec.forTimestamp(eventTimeMs), tolerateMissing = true)
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
  override def latestEventTimes(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] = {
    if (ranges.isEmpty || !maxTimestampSupported) return Map.empty
    val found = try listOffsetInfos(ranges.map(_.split.topicPartition), OffsetSpec.maxTimestamp(), tolerateMissing = true)
    catch {
      case e: IllegalStateException if e.getCause.isInstanceOf[org.apache.kafka.common.errors.UnsupportedVersionException] =>
        maxTimestampSupported = false
        Map.empty[TopicPartition, ListOffsetsResultInfo]
    }
    ranges.flatMap(r => found.get(r.split.topicPartition).filter(_.offset() >= 0).map(r.split.splitId -> _.timestamp())).toMap
  }
  private var maxTimestampSupported = true

  override def firstEventTimes(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] = {
    val wanted = ranges.filterNot(_.isEmpty)
    if (wanted.isEmpty) return Map.empty
    // Only a fetch can tell the timestamp at an offset: seek a consumer there and read one record each.
    val byTp = wanted.map(r => r.split.topicPartition -> r).toMap
    val consumer = KafkaConsumerPool.borrow(config.consumerProperties, byTp.keySet)
    var healthy = false
    try {
      KafkaConsumerPool.assign(consumer, byTp.keys)
      wanted.foreach(r => consumer.seek(r.split.topicPartition, r.from))
      val times = scala.collection.mutable.Map[String, Long]()
      val deadline = System.currentTimeMillis() + FirstRecordTimeoutMs
      while (times.size < wanted.size && System.currentTimeMillis() < deadline) {
        val polled = try consumer.poll(java.time.Duration.ofMillis(200)) catch {
          case e: org.apache.kafka.clients.consumer.OffsetOutOfRangeException =>
            // gone by retention: unknown here; the reader decides about the loss (failOnDataLoss)
            consumer.pause(e.offsetOutOfRangePartitions().keySet())
            org.apache.kafka.clients.consumer.ConsumerRecords.empty[Array[Byte], Array[Byte]]()
        }
        polled.asScala.foreach { rec =>
          val tp = new TopicPartition(rec.topic, rec.partition)
          byTp.get(tp).filter(r => rec.offset >= r.from).foreach { r =>
            times.getOrElseUpdate(r.split.splitId, rec.timestamp)
            consumer.pause(Seq(tp).asJava)
          }
        }
      }
      healthy = true
      times.toMap
    } finally KafkaConsumerPool.release(config.consumerProperties, consumer, healthy)
  }

  override def snapshotState(): KafkaEnumeratorState = KafkaEnumeratorState(discovered, initialDiscoveryDone)

  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState =
    EnumeratorEndState(finished, Map("partitions" -> finished.map(_.splitId).sorted.mkString(",")))

  override def close(): Unit = if (adminClient != null) {
    try adminClient.close(java.time.Duration.ofSeconds(5)) catch { case NonFatal(_) => }
    adminClient = null
  }

  private def currentPartitions(): Set[TopicPartition] = wrap("list topics and partitions") {
    val topics = config.subscription match {
      case TopicSubscription.Topics(names) =>
        val existing = admin.listTopics().names().get(60, TimeUnit.SECONDS).asScala
        names.filter(existing.contains)
      case p: TopicSubscription.TopicPattern =>
        admin.listTopics().names().get(60, TimeUnit.SECONDS).asScala.filter(p.matches).toSeq
    }
    if (topics.isEmpty) Set.empty
    else admin.describeTopics(topics.asJava).allTopicNames().get(60, TimeUnit.SECONDS).asScala.values
      .flatMap(d => d.partitions().asScala.map(p => new TopicPartition(d.name, p.partition))).toSet
  }

  /** Offsets an initializer designates, per partition. */
  private def resolve(partitions: Seq[TopicPartition], initializer: OffsetsInitializer, atEnd: Boolean): Map[TopicPartition, Long] = {
    import OffsetsInitializer._
    lazy val earliest = listOffsets(partitions, OffsetSpec.earliest(), tolerateMissing = false)
    lazy val latest = listOffsets(partitions, OffsetSpec.latest(), tolerateMissing = false)
    def byTime(times: Map[TopicPartition, Long]) = {
      // The first offset with a timestamp >= the given one; none such: the partition's end.
      val found = partitions.groupBy(tp => times(tp)).flatMap { case (ts, tps) =>
        listOffsets(tps, OffsetSpec.forTimestamp(ts), tolerateMissing = false)
      }
      partitions.map(tp => tp -> found.get(tp).filter(_ >= 0).getOrElse(latest(tp))).toMap
    }
    initializer match {
      case Earliest => earliest
      case Latest => latest
      case Specific(offsets) => partitions.map { tp =>
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
          throw new IllegalArgumentException(
            s"KafkaSource: no timestamp given for partitions ${missing.mkString(", ")} in " +
              s"${if (atEnd) "endingOffsetsByTimestamp" else "startingOffsetsByTimestamp"}; give one for every partition.")
        }
        byTime(times)
    }
  }

  private def listOffsets(partitions: Seq[TopicPartition], spec: OffsetSpec, tolerateMissing: Boolean): Map[TopicPartition, Long] =
    listOffsetInfos(partitions, spec, tolerateMissing).map { case (tp, info) => tp -> info.offset() }

  private def listOffsetInfos(partitions: Seq[TopicPartition], spec: OffsetSpec, tolerateMissing: Boolean): Map[TopicPartition, ListOffsetsResultInfo] =
    wrap("look up offsets") {
      val isolation = if (config.readCommitted) IsolationLevel.READ_COMMITTED else IsolationLevel.READ_UNCOMMITTED
      val result = admin.listOffsets(partitions.map(_ -> spec).toMap.asJava, new ListOffsetsOptions(isolation))
      partitions.flatMap { tp =>
        try Some(tp -> result.partitionResult(tp).get(60, TimeUnit.SECONDS))
        catch {
          case e: ExecutionException if tolerateMissing && e.getCause.isInstanceOf[UnknownTopicOrPartitionException] => None
        }
      }.toMap
    }

  private def wrap[T](what: String)(body: => T): T =
    try body catch {
      case e: ExecutionException =>
        throw new IllegalStateException(s"KafkaSource: could not $what: ${e.getCause.getMessage}", e.getCause)
      case e: java.util.concurrent.TimeoutException =>
        throw new IllegalStateException(s"KafkaSource: could not $what within 60 s; are the brokers reachable?", e)
    }
}

private object KafkaEnumerator {
  /** How long finding the first record's timestamp of the partitions may take (answers are cached). */
  val FirstRecordTimeoutMs = 5000L
}

final case class KafkaEnumeratorState(discovered: Set[TopicPartition], initialDiscoveryDone: Boolean)

private[kafka] object KafkaEnumeratorStateSerializer extends VersionedSerializer[KafkaEnumeratorState] {
  override val version: Int = 1
  // "done;p:topic,p:topic": partition first, so topic names are the free-form tail of each entry.
  override def serialize(s: KafkaEnumeratorState): String =
    s"${s.initialDiscoveryDone};" + s.discovered.toSeq.sortBy(tp => (tp.topic, tp.partition))
      .map(tp => s"${tp.partition}:${tp.topic}").mkString(",")
  override def deserialize(version: Int, text: String): KafkaEnumeratorState = {
    if (version > this.version) throw VersionedSerializer.unsupported("Kafka enumerator state", version, this.version)
    val Array(done, list) = text.split(";", 2)
    val partitions = list.split(",").filter(_.nonEmpty).map { e =>
      val Array(p, topic) = e.split(":", 2)
      new TopicPartition(topic, p.toInt)
    }.toSet
    KafkaEnumeratorState(partitions, done.toBoolean)
  }
}

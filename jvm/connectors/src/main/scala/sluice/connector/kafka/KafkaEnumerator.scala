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
  private var topicIds: Map[String, String] = restored.map(_.topicIds).getOrElse(Map.empty)
  private var incarnations: Map[TopicPartition, Int] =
    restored.map(_.incarnations).getOrElse(Map.empty)

  /** Where readers got in each split, as the runtime last told. */
  private var positions: Map[String, Long] = Map.empty

  /** Partitions whose log no longer continues where they were read, and the offset each goes on from. */
  private var broken: Map[TopicPartition, Long] = Map.empty
  private var lastDiscoveryMs = Long.MinValue
  private var adminClient: Admin = _
  private def admin: Admin = {
    if (adminClient == null) {
      val props = new Properties()
      config.consumerProperties.foreach { case (k, v) => props.put(k, v) }
      props.put(
        AdminClientConfig.CLIENT_ID_CONFIG,
        s"sluice-enumerator-${java.util.UUID.randomUUID()}")
      adminClient = Admin.create(props)
    }
    adminClient
  }

  private def bounded = config.stopping.isDefined

  override def progressUpdated(progress: Seq[(KafkaPartitionSplit, SplitProgress)]): Unit =
    positions = progress.map { case (s, p) => s.splitId -> p.position }.toMap

  override def discoverSplits(): Seq[KafkaPartitionSplit] = {
    val now = System.currentTimeMillis()
    // a restored enumerator discovers at its first planning (`now - MinValue` would overflow)
    val due =
      lastDiscoveryMs == Long.MinValue || now - lastDiscoveryMs >= config.partitionDiscoveryIntervalMs
    if (initialDiscoveryDone && (bounded || !due)) {
      return goOnFromBroken()
    }
    lastDiscoveryMs = now
    val (partitions, ids) = currentPartitions()
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
    if (config.failOnDataLoss) {
      val (topic, id) = recreated.head
      throw new IllegalStateException(
        s"KafkaSource: topic $topic was deleted and re-created (its topic id " +
          s"changed from ${topicIds(topic)} to $id) after this query started reading it: records of the old topic " +
          "not read yet are lost, and the new topic's offsets do not continue the old ones. Set failOnDataLoss=false " +
          "to read the new topic from its beginning (counted as partitionsReset in the source metrics).")
    }
    val partitions = discovered.filter(tp => recreated.contains(tp.topic)).toSeq
    val earliest = listOffsets(partitions, OffsetSpec.earliest(), tolerateMissing = true)
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

  /**
   * A partition's log ends below the offset already read (truncated by an unclean leader election,
   * or the topic re-created before its id was checked): an error, as in Spark's Kafka source, or
   * with failOnDataLoss=false the partition goes on from the new end, as Spark's does.
   */
  private def logBelowRead(s: KafkaPartitionSplit, end: Long, read: Long): Unit = {
    if (config.failOnDataLoss) {
      throw new IllegalStateException(
        s"KafkaSource: topic ${s.topic} partition ${s.partition} now ends at offset " +
          s"$end, below offset $read that this query already read up to: its log was truncated, or the topic was " +
          "deleted and re-created. Records may have been lost, and offsets no longer mean what they meant. Set " +
          s"failOnDataLoss=false to go on from offset $end (counted as partitionsReset in the source metrics).")
    }
    broken += s.topicPartition -> end
    // a re-created topic also ends early: look at its id before going on, or it would be reset twice
    lastDiscoveryMs = Long.MinValue
  }

  override def noMoreSplits: Boolean = bounded && initialDiscoveryDone

  override def availablePositions(splits: Seq[KafkaPartitionSplit]): Map[String, Long] = {
    val (finished, current) =
      splits.partition(s => isFinished(s, positions.getOrElse(s.splitId, s.startPosition)))
    val done =
      finished.map(s => s.splitId -> positions.getOrElse(s.splitId, s.startPosition)).toMap
    if (current.isEmpty) return done
    val latest =
      listOffsets(current.map(_.topicPartition), OffsetSpec.latest(), tolerateMissing = true)
    done ++ current.map { s =>
      val end = latest.get(s.topicPartition) match {
        case Some(offset) =>
          positions
            .get(s.splitId)
            .filter(offset < _)
            .foreach(read => logBelowRead(s, offset, read))
          offset
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

  override def positionsBefore(
      ranges: Seq[SplitRange[KafkaPartitionSplit]],
      eventTimeMs: Long): Map[String, Long] = {
    // Kafka reserves negative timestamps for "latest"/"earliest"; records are never that old.
    if (ranges.isEmpty || eventTimeMs <= 0)
      return ranges.map(r => r.split.splitId -> r.from).toMap
    val found = listOffsetInfos(
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
    if (ranges.isEmpty || !maxTimestampSupported) return Map.empty
    val found =
      try
        listOffsetInfos(
          ranges.map(_.split.topicPartition),
          OffsetSpec.maxTimestamp(),
          tolerateMissing = true)
      catch {
        case e: IllegalStateException
            if e.getCause
              .isInstanceOf[org.apache.kafka.common.errors.UnsupportedVersionException] =>
          maxTimestampSupported = false
          Map.empty[TopicPartition, ListOffsetsResultInfo]
      }
    ranges
      .flatMap(r =>
        found
          .get(r.split.topicPartition)
          .filter(_.offset() >= 0)
          .map(r.split.splitId -> _.timestamp()))
      .toMap
  }
  private var maxTimestampSupported = true

  override def firstEventTimes(
      ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] = {
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
        val polled =
          try consumer.poll(java.time.Duration.ofMillis(200))
          catch {
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

  override def snapshotState(): KafkaEnumeratorState =
    KafkaEnumeratorState(discovered, initialDiscoveryDone, topicIds, incarnations)

  override def metrics: Map[String, String] = Map(
    "partitionsReset" -> incarnations.values.sum.toString)

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
        "minOffsetsBehindLatest" -> perPartition.min.toString,
        "maxOffsetsBehindLatest" -> perPartition.max.toString,
        "avgOffsetsBehindLatest" -> (perPartition.sum.toDouble / perPartition.size).toString)
  }

  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState =
    EnumeratorEndState(
      finished,
      Map("partitions" -> finished.map(_.splitId).sorted.mkString(",")))

  override def close(): Unit = if (adminClient != null) {
    try adminClient.close(java.time.Duration.ofSeconds(5))
    catch { case NonFatal(_) => }
    adminClient = null
  }

  /** The subscribed topics' partitions now (one call to the brokers each time). */
  private[kafka] def partitionsNow(): Set[TopicPartition] = currentPartitions()._1

  /** Each topic's `retention.ms` (-1: records are not deleted by age). */
  private[kafka] def retentionMs(topics: Set[String]): Map[String, Long] =
    wrap("describe topic configurations") {
      import org.apache.kafka.common.config.{ConfigResource, TopicConfig}
      val resources = topics.map(t => new ConfigResource(ConfigResource.Type.TOPIC, t))
      admin
        .describeConfigs(resources.asJava)
        .all()
        .get(60, TimeUnit.SECONDS)
        .asScala
        .map { case (r, c) =>
          r.name -> Option(c.get(TopicConfig.RETENTION_MS_CONFIG))
            .flatMap(e => Option(e.value))
            .map(_.toLong)
            .getOrElse(-1L)
        }
        .toMap
    }

  /** The offset (and its record's timestamp) `spec` designates in each partition; a missing partition is left out. */
  private[kafka] def offsetsAt(
      partitions: Seq[TopicPartition],
      spec: OffsetSpec): Map[TopicPartition, ListOffsetsResultInfo] =
    listOffsetInfos(partitions, spec, tolerateMissing = true)

  /** The subscribed topics' partitions, and each topic's id. */
  private def currentPartitions(): (Set[TopicPartition], Map[String, String]) =
    wrap("list topics and partitions") {
      val topics = config.subscription match {
        case TopicSubscription.Topics(names) =>
          val existing = admin.listTopics().names().get(60, TimeUnit.SECONDS).asScala
          names.filter(existing.contains)
        case p: TopicSubscription.TopicPattern =>
          admin.listTopics().names().get(60, TimeUnit.SECONDS).asScala.filter(p.matches).toSeq
        case TopicSubscription.Assigned(partitions) =>
          val existing = admin.listTopics().names().get(60, TimeUnit.SECONDS).asScala
          partitions.keys.filter(existing.contains).toSeq
      }
      if (topics.isEmpty) (Set.empty, Map.empty)
      else {
        val described = admin
          .describeTopics(topics.asJava)
          .allTopicNames()
          .get(60, TimeUnit.SECONDS)
          .asScala
          .values
        val all = described
          .flatMap(d => d.partitions().asScala.map(p => new TopicPartition(d.name, p.partition)))
          .toSet
        val read = config.subscription match {
          case a: TopicSubscription.Assigned =>
            all.filter(tp => a.includes(tp.topic, tp.partition))
          case _ => all
        }
        (read, described.map(d => d.name -> d.topicId.toString).toMap)
      }
    }

  /** Offsets an initializer designates, per partition. */
  private def resolve(
      partitions: Seq[TopicPartition],
      initializer: OffsetsInitializer,
      atEnd: Boolean): Map[TopicPartition, Long] = {
    import OffsetsInitializer._
    lazy val earliest = listOffsets(partitions, OffsetSpec.earliest(), tolerateMissing = false)
    lazy val latest = listOffsets(partitions, OffsetSpec.latest(), tolerateMissing = false)
    def byTime(times: Map[TopicPartition, Long]) = {
      // The first offset with a timestamp >= the given one; none such: the partition's end, or
      // for a start under Spark's default strategy, an error.
      val found = partitions.groupBy(tp => times(tp)).flatMap { case (ts, tps) =>
        listOffsets(tps, OffsetSpec.forTimestamp(ts), tolerateMissing = false)
      }
      partitions.map { tp =>
        val offset = found.get(tp).filter(_ >= 0)
        if (offset.isEmpty && !atEnd && !config.startPastLastRecordAtEnd) {
          throw new IllegalStateException(
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
          throw new IllegalArgumentException(
            s"KafkaSource: no timestamp given for partitions ${missing.mkString(", ")} in " +
              s"${if (atEnd) "endingOffsetsByTimestamp" else "startingOffsetsByTimestamp"}; give one for every partition.")
        }
        byTime(times)
    }
  }

  private def listOffsets(
      partitions: Seq[TopicPartition],
      spec: OffsetSpec,
      tolerateMissing: Boolean): Map[TopicPartition, Long] =
    listOffsetInfos(partitions, spec, tolerateMissing).map { case (tp, info) =>
      tp -> info.offset()
    }

  private def listOffsetInfos(
      partitions: Seq[TopicPartition],
      spec: OffsetSpec,
      tolerateMissing: Boolean): Map[TopicPartition, ListOffsetsResultInfo] =
    wrap("look up offsets") {
      val isolation =
        if (config.readCommitted) IsolationLevel.READ_COMMITTED
        else IsolationLevel.READ_UNCOMMITTED
      val result = admin.listOffsets(
        partitions.map(_ -> spec).toMap.asJava,
        new ListOffsetsOptions(isolation))
      partitions.flatMap { tp =>
        try Some(tp -> result.partitionResult(tp).get(60, TimeUnit.SECONDS))
        catch {
          case e: ExecutionException
              if tolerateMissing && e.getCause.isInstanceOf[UnknownTopicOrPartitionException] =>
            None
        }
      }.toMap
    }

  private def wrap[T](what: String)(body: => T): T =
    try body
    catch {
      case e: ExecutionException =>
        throw new IllegalStateException(
          s"KafkaSource: could not $what: ${e.getCause.getMessage}",
          e.getCause)
      case e: java.util.concurrent.TimeoutException =>
        throw new IllegalStateException(
          s"KafkaSource: could not $what within 60 s; are the brokers reachable?",
          e)
    }
}

private object KafkaEnumerator {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[KafkaEnumerator])

  /** How long finding the first record's timestamp of the partitions may take (answers are cached). */
  val FirstRecordTimeoutMs = 5000L
}

/**
 * @param topicIds     each topic's id (KIP-516) when it was first read: a new id is a re-created topic
 * @param incarnations the current incarnation of partitions whose log stopped continuing where
 *                     the query read it (see `KafkaPartitionSplit`); absent = 0
 */
final case class KafkaEnumeratorState(
    discovered: Set[TopicPartition],
    initialDiscoveryDone: Boolean,
    topicIds: Map[String, String] = Map.empty,
    incarnations: Map[TopicPartition, Int] = Map.empty)

private[kafka] object KafkaEnumeratorStateSerializer
    extends VersionedSerializer[KafkaEnumeratorState] {

  /** 2 adds topic ids and incarnations; 1 still reads. */
  override val version: Int = 2
  // "done;p:topic,...;id:topic,...;n:p:topic,...": the topic is the free-form tail of each entry.
  override def serialize(s: KafkaEnumeratorState): String = {
    def partitions(tps: Iterable[TopicPartition]) =
      tps.toSeq.sortBy(tp => (tp.topic, tp.partition))
    Seq(
      s.initialDiscoveryDone.toString,
      partitions(s.discovered).map(tp => s"${tp.partition}:${tp.topic}").mkString(","),
      s.topicIds.toSeq.sorted.map { case (topic, id) => s"$id:$topic" }.mkString(","),
      partitions(s.incarnations.keys)
        .map(tp => s"${s.incarnations(tp)}:${tp.partition}:${tp.topic}")
        .mkString(",")).mkString(";")
  }
  override def deserialize(version: Int, text: String): KafkaEnumeratorState = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("Kafka enumerator state", version, this.version)
    val fields = text.split(";", -1)
    def entries(i: Int) = fields.lift(i).toSeq.flatMap(_.split(",")).filter(_.nonEmpty)
    val partitions = entries(1).map { e =>
      val Array(p, topic) = e.split(":", 2)
      new TopicPartition(topic, p.toInt)
    }.toSet
    val ids = entries(2).map { e =>
      val Array(id, topic) = e.split(":", 2)
      topic -> id
    }.toMap
    val incarnations = entries(3).map { e =>
      val Array(n, p, topic) = e.split(":", 3)
      new TopicPartition(topic, p.toInt) -> n.toInt
    }.toMap
    KafkaEnumeratorState(partitions, fields(0).toBoolean, ids, incarnations)
  }
}

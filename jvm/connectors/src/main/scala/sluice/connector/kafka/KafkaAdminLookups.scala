package sluice.connector.kafka

import java.util.Properties
import java.util.concurrent.{ExecutionException, TimeUnit}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, ListOffsetsOptions, OffsetSpec}
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo
import org.apache.kafka.common.{IsolationLevel, TopicPartition}
import org.apache.kafka.common.errors.{TopicAuthorizationException, UnknownTopicOrPartitionException, UnsupportedVersionException}

import sluice.errors.SluiceError

/**
 * What a Kafka source asks the brokers' Admin API in the driver, with the source's own client
 * settings: the subscribed partitions and their topics' ids, offsets (and their records'
 * timestamps) by `OffsetSpec`, and topics' `retention.ms`. The enumerator plans with it and the
 * retention watch checks with it, as Spark keeps `KafkaOffsetReaderAdmin` apart from its
 * consumers. One Admin client, created at the first look-up; every answer is waited for at most
 * 60 s (offset look-ups: longer when `kafka.default.api.timeout.ms` says so) and a failure names
 * what was asked.
 */
private[kafka] final class KafkaAdminLookups(config: KafkaConfig) extends AutoCloseable {
  import KafkaAdminLookups._

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

  /** Brokers older than 3.0 cannot answer `OffsetSpec.maxTimestamp`; asked once, then not again. */
  private var maxTimestampSupported = true

  /** The subscribed topics' partitions now (one call to the brokers each time). */
  def partitions(): Set[TopicPartition] = partitionsAndTopicIds()._1

  /** The subscribed topics' partitions, and each topic's id (KIP-516). */
  def partitionsAndTopicIds(): (Set[TopicPartition], Map[String, String]) =
    wrap("list topics and partitions") {
      val topics = config.subscription match {
        case TopicSubscription.Topics(names) =>
          val existing = admin.listTopics().names().get(TimeoutSeconds, TimeUnit.SECONDS).asScala
          checkHidden(names.filterNot(existing.contains))
          names.filter(existing.contains)
        case p: TopicSubscription.TopicPattern =>
          admin
            .listTopics()
            .names()
            .get(TimeoutSeconds, TimeUnit.SECONDS)
            .asScala
            .filter(p.matches)
            .toSeq
        case TopicSubscription.Assigned(partitions) =>
          val existing = admin.listTopics().names().get(TimeoutSeconds, TimeUnit.SECONDS).asScala
          checkHidden(partitions.keys.filterNot(existing.contains).toSeq)
          partitions.keys.filter(existing.contains).toSeq
      }
      if (topics.isEmpty) (Set.empty, Map.empty)
      else {
        val described = admin
          .describeTopics(topics.asJava)
          .allTopicNames()
          .get(TimeoutSeconds, TimeUnit.SECONDS)
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

  /**
   * Topics the source names that the brokers do not list: missing, or hidden from a user without
   * DESCRIBE on them (Kafka lists only the topics one may describe). A missing topic is waited
   * for, as before; a hidden one would be waited for forever, so asking for it by name tells the
   * two apart: the brokers answer TOPIC_AUTHORIZATION_FAILED for a hidden topic, which fails.
   */
  private def checkHidden(unlisted: Seq[String]): Unit =
    if (unlisted.nonEmpty) {
      admin.describeTopics(unlisted.asJava).topicNameValues().asScala.foreach { case (name, f) =>
        try f.get(TimeoutSeconds, TimeUnit.SECONDS)
        catch {
          case e: ExecutionException
              if e.getCause.isInstanceOf[UnknownTopicOrPartitionException] =>
          case e: ExecutionException if e.getCause.isInstanceOf[TopicAuthorizationException] =>
            // Kafka's exception from this call names no topic; the message should
            val named = new TopicAuthorizationException(
              e.getCause.getMessage,
              java.util.Collections.singleton(name))
            throw KafkaAccessErrors.explain(named, config, KafkaAccessErrors.Describe)
        }
      }
    }

  /** The offset `spec` designates in each partition; a missing partition is left out when tolerated, else an error. */
  def offsets(
      partitions: Seq[TopicPartition],
      spec: OffsetSpec,
      tolerateMissing: Boolean): Map[TopicPartition, Long] =
    offsetInfos(partitions, spec, tolerateMissing).map { case (tp, info) =>
      tp -> info.offset()
    }

  /** The offset (and its record's timestamp) `spec` designates in each partition. */
  def offsetInfos(
      partitions: Seq[TopicPartition],
      spec: OffsetSpec,
      tolerateMissing: Boolean): Map[TopicPartition, ListOffsetsResultInfo] =
    wrap("look up offsets") {
      val isolation =
        if (config.readCommitted) IsolationLevel.READ_COMMITTED
        else IsolationLevel.READ_UNCOMMITTED
      val started = System.nanoTime()
      val limitMs = offsetsLimitMs(userTimeoutMs)
      val deadline = started + TimeUnit.MILLISECONDS.toNanos(limitMs)
      // Kafka's Admin client sends a partition's request to the leader it looked up, and retries
      // it there: a leader that died meanwhile (SIGKILL, no hand-over) is waited for until the
      // call times out, though another replica leads within seconds (seen on the 3-broker test
      // cluster: 60 s, then the query failed). A call of its own per attempt looks the leaders
      // up again; the attempts share the one limit, and grow (`attemptMs`), so that a look-up
      // slow but healthy (timestamps in tiered storage, many partitions) still gets its time.
      def attempt(attemptMs: Long): Map[TopicPartition, ListOffsetsResultInfo] = {
        val result = admin.listOffsets(
          partitions.map(_ -> spec).toMap.asJava,
          new ListOffsetsOptions(isolation).timeoutMs(math.min(attemptMs, Int.MaxValue).toInt))
        partitions.flatMap { tp =>
          try Some(tp -> result.partitionResult(tp).get(attemptMs + 1000, TimeUnit.MILLISECONDS))
          catch {
            case e: ExecutionException
                if tolerateMissing && e.getCause.isInstanceOf[UnknownTopicOrPartitionException] =>
              None
          }
        }.toMap
      }
      var answer: Option[Map[TopicPartition, ListOffsetsResultInfo]] = None
      var attempts = 0
      var lastTimeout: Throwable = null
      while (answer.isEmpty) {
        val leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())
        if (leftMs <= 0)
          throw SluiceError.sourceFault(
            s"KafkaSource: could not look up offsets of ${partitions.size} partition(s): no " +
              s"answer after ${elapsedSeconds(started)} s ($attempts attempt(s), each asking " +
              s"the partitions' leaders anew); $unreachable A look-up that is slow but healthy (timestamps in " +
              s"tiered storage) gets longer with kafka.default.api.timeout.ms (now $limitMs ms " +
              "in all).",
            lastTimeout)
        val attemptMs = KafkaAdminLookups.attemptMs(attempts, leftMs, userTimeoutMs)
        attempts += 1
        try answer = Some(attempt(attemptMs))
        catch {
          case e: ExecutionException
              if e.getCause.isInstanceOf[org.apache.kafka.common.errors.TimeoutException] =>
            lastTimeout = e.getCause
          case e: java.util.concurrent.TimeoutException => lastTimeout = e
        }
      }
      answer.get
    }

  /**
   * The larger of the user's `kafka.default.api.timeout.ms` and `kafka.request.timeout.ms`, when
   * either is set: no attempt is cut shorter than the user allowed one.
   */
  private lazy val userTimeoutMs: Option[Long] = Seq(
    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
    AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG).flatMap { name =>
    config.consumerProperties.collectFirst {
      case (k, v) if k.equalsIgnoreCase(name) && v.trim.matches("[0-9]+") => v.trim.toLong
    }
  }.maxOption

  /**
   * Each partition's largest timestamp and its offset (KIP-734, brokers 3.0 and later); empty from
   * brokers that cannot answer. A missing partition is left out.
   */
  def maxTimestamps(partitions: Seq[TopicPartition]): Map[TopicPartition, ListOffsetsResultInfo] =
    if (partitions.isEmpty || !maxTimestampSupported) Map.empty
    else
      try offsetInfos(partitions, OffsetSpec.maxTimestamp(), tolerateMissing = true)
      catch {
        case e: IllegalStateException if e.getCause.isInstanceOf[UnsupportedVersionException] =>
          maxTimestampSupported = false
          Map.empty
      }

  /**
   * Each topic's `retention.ms` (-1: records are not deleted by age), or, when the brokers refuse
   * it (`describeConfigs` needs DESCRIBE_CONFIGS on the topic, which READ and DESCRIBE do not
   * give), the refusal explained. Other failures throw.
   */
  def retentionMs(topics: Set[String]): Either[Throwable, Map[String, Long]] =
    wrap("describe topic configurations", KafkaAccessErrors.DescribeConfigs) {
      import org.apache.kafka.common.config.{ConfigResource, TopicConfig}
      val resources = topics.map(t => new ConfigResource(ConfigResource.Type.TOPIC, t))
      try {
        Right(
          admin
            .describeConfigs(resources.asJava)
            .all()
            .get(TimeoutSeconds, TimeUnit.SECONDS)
            .asScala
            .map { case (r, c) =>
              r.name -> Option(c.get(TopicConfig.RETENTION_MS_CONFIG))
                .flatMap(e => Option(e.value))
                .map(_.toLong)
                .getOrElse(-1L)
            }
            .toMap)
      } catch {
        case e: ExecutionException if e.getCause.isInstanceOf[TopicAuthorizationException] =>
          // the brokers' answer names no topic; the message should
          val named = new TopicAuthorizationException(
            e.getCause.getMessage,
            new java.util.HashSet[String](topics.asJava))
          Left(KafkaAccessErrors.explain(named, config, KafkaAccessErrors.DescribeConfigs))
      }
    }

  /** A refusal of the brokers (credentials, ACLs) says which options fix it; other faults what failed. */
  private def wrap[T](
      what: String,
      access: KafkaAccessErrors.Access = KafkaAccessErrors.Describe)(body: => T): T = {
    val started = System.nanoTime()
    try body
    catch {
      case e: ExecutionException
          if e.getCause.isInstanceOf[org.apache.kafka.common.errors.TimeoutException] =>
        // the Admin client's own time-out ("Timed out waiting for a node assignment" when no
        // broker answers at all): as unreachable as no answer within our wait
        throw SluiceError.sourceFault(
          s"KafkaSource: could not $what: ${e.getCause.getMessage} (after " +
            s"${elapsedSeconds(started)} s); $unreachable",
          e.getCause)
      case e: ExecutionException =>
        KafkaAccessErrors.explain(e.getCause, config, access) match {
          case refusal: SluiceError => throw refusal
          case _ =>
            throw SluiceError.sourceFault(
              s"KafkaSource: could not $what: ${e.getCause.getMessage}",
              e.getCause)
        }
      case e: org.apache.kafka.common.KafkaException =>
        // raised at once, not through a future: the Admin client could not be created (a key
        // or trust store it could not open), or a refusal
        throw KafkaAccessErrors.explain(e, config, access)
      case e: java.util.concurrent.TimeoutException =>
        throw SluiceError.sourceFault(
          s"KafkaSource: could not $what: no answer after ${elapsedSeconds(started)} s; " +
            unreachable,
          e)
    }
  }

  /** What no answer at all may mean: the servers asked, by the option's name and value (no secret). */
  private def unreachable: String =
    "are the brokers reachable at kafka.bootstrap.servers=" +
      s"${config.consumerProperties.getOrElse("bootstrap.servers", "")} (up, on those hosts and " +
      "ports), and is kafka.security.protocol the protocol of the listener on that port (a TLS " +
      "or SASL client against a PLAINTEXT port, or the reverse, gets no answer)?"

  override def close(): Unit = if (adminClient != null) {
    try adminClient.close(java.time.Duration.ofSeconds(5))
    catch { case NonFatal(_) => }
    adminClient = null
  }
}

private object KafkaAdminLookups {

  /** How long one Admin answer may take. */
  val TimeoutSeconds = 60L

  /** How long the attempts at an offset look-up may take, one after the other (see `offsetInfos`). */
  val OffsetsAttemptsMs: Seq[Long] = Seq(10000L, 20000L)

  /** All attempts at an offset look-up together: 60 s, or the user's time-out if longer. */
  def offsetsLimitMs(userTimeoutMs: Option[Long]): Long =
    math.max(TimeUnit.SECONDS.toMillis(TimeoutSeconds), userTimeoutMs.getOrElse(0L))

  /**
   * How long attempt `index` (0 first) may take, with `leftMs` of the limit left: 10 s, then 20 s
   * (a dead leader is looked up anew soon), then all that is left; never shorter than the user's
   * time-out (`kafka.default.api.timeout.ms` / `kafka.request.timeout.ms`), never past the limit.
   */
  def attemptMs(index: Int, leftMs: Long, userTimeoutMs: Option[Long]): Long = {
    val planned = OffsetsAttemptsMs.lift(index).getOrElse(Long.MaxValue)
    math.max(1L, math.min(leftMs, math.max(planned, userTimeoutMs.getOrElse(0L))))
  }

  private def elapsedSeconds(startedNanos: Long): String =
    f"${(System.nanoTime() - startedNanos) / 1e9}%.1f"
}

package sluice.connector.kafka

import java.util.Properties

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.ByteArrayDeserializer

/**
 * Keeps idle consumers per executor JVM between batches, keyed by their configuration, so a
 * micro-batch does not pay for a new connection and metadata fetch per task (what Spark's
 * consumer pool does for its Kafka source).
 *
 * An idle consumer keeps its partitions assigned, paused: the records it fetched beyond the last
 * range stay in its buffer, and the next batch's reader of the same partitions, which starts
 * exactly there, takes them without a round trip to the broker.
 */
private[kafka] object KafkaConsumerPool {
  type Consumer = KafkaConsumer[Array[Byte], Array[Byte]]

  /** Idle consumers kept per configuration: enough for every partition a few queries read. */
  private val MaxIdlePerKey = 32

  /** An idle consumer unused this long is closed (a query that stopped, partitions read no more). */
  private val MaxIdleMs = 5 * 60 * 1000L

  private final class Idle(val consumer: Consumer, val since: Long)
  private val idle = new java.util.HashMap[Map[String, String], java.util.ArrayDeque[Idle]]()

  /**
   * A consumer for `properties`: preferably the idle one that has the most of `partitions`
   * assigned (what it fetched for them is kept when it is assigned the rest), else the one idle
   * the longest, else a new one. Its assignment and paused partitions are as it was left.
   */
  def borrow(
      properties: Map[String, String],
      partitions: Set[TopicPartition] = Set.empty): Consumer = {
    val pooled = idle.synchronized {
      Option(idle.get(properties)).flatMap { queue =>
        def shared(i: Idle) = i.consumer.assignment().asScala.count(partitions.contains)
        val best =
          if (queue.isEmpty) None else Some(queue.asScala.maxBy(shared)).filter(shared(_) > 0)
        val chosen = best.orElse(Option(queue.peekLast()))
        chosen.foreach(queue.remove)
        chosen.map(_.consumer)
      }
    }
    pooled.getOrElse(create(properties))
  }

  /** Assigns exactly `partitions` and resumes them (a pooled consumer comes back paused). */
  def assign(consumer: Consumer, partitions: Iterable[TopicPartition]): Unit = {
    val wanted = partitions.toSet
    if (consumer.assignment().asScala != wanted) consumer.assign(wanted.asJava)
    consumer.resume(consumer.assignment())
  }

  /**
   * Returns a consumer with its partitions paused, so it fetches nothing while idle; one that
   * failed is closed instead (its state is unknown), as is the one idle the longest when full.
   */
  def release(properties: Map[String, String], consumer: Consumer, healthy: Boolean): Unit =
    withoutInterrupt(releaseNow(properties, consumer, healthy, System.currentTimeMillis()))

  /** `now` is given by tests, to see idle consumers age. */
  private[kafka] def releaseNow(
      properties: Map[String, String],
      consumer: Consumer,
      healthy: Boolean,
      now: Long): Unit = {
    val paused = healthy && {
      try { consumer.pause(consumer.assignment()); true }
      catch { case NonFatal(_) => false }
    }
    val evicted = idle.synchronized {
      val queue = idle.computeIfAbsent(properties, _ => new java.util.ArrayDeque[Idle]())
      if (paused) queue.addFirst(new Idle(consumer, now))
      val full = if (queue.size > MaxIdlePerKey) Option(queue.peekLast()) else None
      full.foreach(queue.remove)
      // every configuration's, not only this one's: a configuration no query uses any more (a
      // stopped query, a group id drawn afresh for each run) is never released under again
      val stale = idle.values().asScala.toSeq.flatMap { q =>
        val old = q.asScala.filter(i => now - i.since > MaxIdleMs).toSeq
        old.foreach(q.remove)
        old
      }
      idle.values().removeIf(_.isEmpty)
      (full.toSeq ++ stale).map(_.consumer).distinct
    }
    (if (paused) evicted else consumer +: evicted).foreach(closeQuietly)
  }

  /** Consumers waiting in the pool for this configuration. */
  private[kafka] def idleCount(properties: Map[String, String]): Int =
    idle.synchronized(Option(idle.get(properties)).map(_.size).getOrElse(0))

  private def create(properties: Map[String, String]): Consumer =
    new KafkaConsumer(
      consumerConfig(properties),
      new ByteArrayDeserializer,
      new ByteArrayDeserializer)

  /**
   * The most a reader's fetch brings of one partition unless `kafka.max.partition.fetch.bytes`
   * says otherwise (Kafka's default: 1 MB). A consumer asks for a partition's next records only
   * once it has handed on all it fetched of it, and a Spark task builds and passes on rows between
   * polls on cores it shares with other tasks: each of those round trips was time the task
   * waited. With 8 MB a raw read ran near the rate that larger polls give (kafka_throughput's
   * tuned side). `fetch.max.bytes` (50 MB) still caps a fetch across its partitions. Readers
   * only: the driver's look-ups of a range's first record read one record a partition.
   */
  val MaxPartitionFetchBytes: Int = 8 * 1024 * 1024

  /**
   * A reader's consumer properties: the user's (named in lower case: `KafkaConfig`), with
   * `MaxPartitionFetchBytes` unless they set the property.
   */
  def readerProperties(properties: Map[String, String]): Map[String, String] =
    if (properties.contains(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG)) properties
    else
      properties + (ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG -> MaxPartitionFetchBytes.toString)

  /** A reader's consumer configuration: the user's consumer properties and Sluice's rules. */
  private[kafka] def consumerConfig(properties: Map[String, String]): Properties = {
    val props = new Properties()
    properties.foreach { case (k, v) => props.put(k, v) }
    // Positions come from the checkpoint, never from Kafka: no commits, no reset; a group id the
    // user gave (kafka.group.id, groupIdPrefix) is only a label, as partitions are assigned.
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")
    props.putIfAbsent(
      ConsumerConfig.CLIENT_ID_CONFIG,
      s"sluice-reader-${java.util.UUID.randomUUID()}")
    props
  }

  /**
   * A killed task (a stopped query) is interrupted; the consumer would then fail to close cleanly
   * and log errors. Closing is quick, so it runs with the flag cleared and restores it after.
   */
  private def withoutInterrupt(body: => Unit): Unit = {
    val interrupted = Thread.interrupted()
    try body
    finally if (interrupted) Thread.currentThread().interrupt()
  }

  private def closeQuietly(consumer: Consumer): Unit =
    try consumer.close(java.time.Duration.ofSeconds(5))
    catch { case NonFatal(_) => }
}

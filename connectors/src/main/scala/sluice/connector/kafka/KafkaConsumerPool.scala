package sluice.connector.kafka

import java.util.Properties
import java.util.concurrent.ConcurrentHashMap

import scala.util.control.NonFatal

import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.common.serialization.ByteArrayDeserializer

/**
 * Keeps idle consumers per executor JVM between batches, keyed by their configuration, so a
 * micro-batch does not pay for a new connection and metadata fetch per task (what Spark's
 * consumer pool does for its Kafka source).
 */
private[kafka] object KafkaConsumerPool {
  type Consumer = KafkaConsumer[Array[Byte], Array[Byte]]

  private val MaxIdlePerKey = 4
  private val idle = new ConcurrentHashMap[Map[String, String], java.util.ArrayDeque[Consumer]]()

  def borrow(properties: Map[String, String]): Consumer = {
    val queue = idle.computeIfAbsent(properties, _ => new java.util.ArrayDeque[Consumer]())
    val pooled = queue.synchronized(queue.pollFirst())
    if (pooled != null) pooled else create(properties)
  }

  /** Returns a consumer, unassigned; one that failed is closed instead (its state is unknown). */
  def release(properties: Map[String, String], consumer: Consumer, healthy: Boolean): Unit =
    withoutInterrupt(releaseNow(properties, consumer, healthy))

  private def releaseNow(properties: Map[String, String], consumer: Consumer, healthy: Boolean): Unit = {
    val queue = idle.computeIfAbsent(properties, _ => new java.util.ArrayDeque[Consumer]())
    val kept = healthy && {
      try { consumer.unsubscribe(); true } catch { case NonFatal(_) => false }
    } && queue.synchronized {
      if (queue.size < MaxIdlePerKey) { queue.addFirst(consumer); true } else false
    }
    if (!kept) closeQuietly(consumer)
  }

  /** Consumers waiting in the pool for this configuration. */
  private[kafka] def idleCount(properties: Map[String, String]): Int =
    Option(idle.get(properties)).map(q => q.synchronized(q.size)).getOrElse(0)

  private def create(properties: Map[String, String]): Consumer = {
    val props = new Properties()
    properties.foreach { case (k, v) => props.put(k, v) }
    // Positions come from the checkpoint, never from Kafka: no group, no commits, no reset.
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")
    props.remove(ConsumerConfig.GROUP_ID_CONFIG)
    props.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, s"sluice-reader-${java.util.UUID.randomUUID()}")
    new KafkaConsumer(props, new ByteArrayDeserializer, new ByteArrayDeserializer)
  }

  /**
   * A killed task (a stopped query) is interrupted; the consumer would then fail to close cleanly
   * and log errors. Closing is quick, so it runs with the flag cleared and restores it after.
   */
  private def withoutInterrupt(body: => Unit): Unit = {
    val interrupted = Thread.interrupted()
    try body finally if (interrupted) Thread.currentThread().interrupt()
  }

  private def closeQuietly(consumer: Consumer): Unit =
    try consumer.close(java.time.Duration.ofSeconds(5)) catch { case NonFatal(_) => }
}

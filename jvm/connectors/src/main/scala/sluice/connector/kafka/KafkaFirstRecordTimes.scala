package sluice.connector.kafka

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.consumer.{ConsumerRecords, OffsetOutOfRangeException}
import org.apache.kafka.common.TopicPartition

import sluice.api.SplitRange

/**
 * The timestamp of the first record of offset ranges, read in the driver with a pooled consumer:
 * only a fetch can tell the timestamp at an offset (the Admin API finds offsets by time, not
 * times by offset). The enumerator's one use of a consumer, kept apart from its Admin look-ups.
 */
private[kafka] final class KafkaFirstRecordTimes(config: KafkaConfig) {
  import KafkaFirstRecordTimes._

  /**
   * Per non-empty range, the timestamp of its first record; a range whose first record does not
   * arrive within `FirstRecordTimeoutMs` (or is gone by retention) is left out.
   */
  def of(ranges: Seq[SplitRange[KafkaPartitionSplit]]): Map[String, Long] = {
    val wanted = ranges.filterNot(_.isEmpty)
    if (wanted.isEmpty) return Map.empty
    // seek a consumer to each range's start and read one record each
    val byTp = wanted.map(r => r.split.topicPartition -> r).toMap
    val consumer = KafkaConsumerPool.borrow(config.consumerProperties, byTp.keySet)
    var healthy = false
    try {
      KafkaConsumerPool.assign(consumer, byTp.keys)
      wanted.foreach(r => consumer.seek(r.split.topicPartition, r.from))
      val times = mutable.Map[String, Long]()
      val deadline = System.currentTimeMillis() + FirstRecordTimeoutMs
      while (times.size < wanted.size && System.currentTimeMillis() < deadline) {
        val polled =
          try consumer.poll(java.time.Duration.ofMillis(200))
          catch {
            case e: OffsetOutOfRangeException =>
              // gone by retention: unknown here; the reader decides about the loss (failOnDataLoss)
              consumer.pause(e.offsetOutOfRangePartitions().keySet())
              ConsumerRecords.empty[Array[Byte], Array[Byte]]()
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
    } catch {
      // a refusal of the brokers (credentials, ACLs) says which options fix it
      case e: org.apache.kafka.common.KafkaException =>
        throw KafkaAccessErrors.explain(e, config, KafkaAccessErrors.Read)
    } finally KafkaConsumerPool.release(config.consumerProperties, consumer, healthy)
  }
}

private object KafkaFirstRecordTimes {

  /** How long finding the first record's timestamp of the partitions may take (answers are cached). */
  val FirstRecordTimeoutMs = 5000L
}

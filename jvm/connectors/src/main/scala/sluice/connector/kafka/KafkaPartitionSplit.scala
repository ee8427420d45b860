package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition

import sluice.api.{SourceSplit, VersionedSerializer}

/**
 * One topic-partition, read from `startPosition` (an offset) to `stopPosition` when bounded.
 *
 * `incarnation` counts how often the partition's log stopped continuing where the query read it
 * (the topic deleted and re-created, the log truncated below the position read): with
 * failOnDataLoss=false the partition then goes on in a new split, and the old one is finished.
 */
final case class KafkaPartitionSplit(
    topic: String,
    partition: Int,
    startPosition: Long,
    stopPosition: Option[Long],
    incarnation: Int = 0)
    extends SourceSplit {
  override val splitId: String =
    if (incarnation == 0) s"$topic-$partition" else s"$topic-$partition@$incarnation"
  def topicPartition: TopicPartition = new TopicPartition(topic, partition)
}

private[kafka] object KafkaSplitSerializer extends VersionedSerializer[KafkaPartitionSplit] {

  /** 2 adds the incarnation; 1 (without it) still reads. */
  override val version: Int = 2

  // partition:start:stop:incarnation:topic — the topic last, since topic names may contain ':'? They
  // may not (Kafka allows [a-zA-Z0-9._-]), but keeping the free-form field last costs nothing.
  override def serialize(s: KafkaPartitionSplit): String =
    s"${s.partition}:${s.startPosition}:${s.stopPosition.map(_.toString).getOrElse("")}:${s.incarnation}:${s.topic}"

  override def deserialize(version: Int, text: String): KafkaPartitionSplit = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("a Kafka split", version, this.version)
    def stop(t: String) = if (t.isEmpty) None else Some(t.toLong)
    if (version == 1) {
      val Array(partition, start, end, topic) = text.split(":", 4)
      KafkaPartitionSplit(topic, partition.toInt, start.toLong, stop(end))
    } else {
      val Array(partition, start, end, incarnation, topic) = text.split(":", 5)
      KafkaPartitionSplit(topic, partition.toInt, start.toLong, stop(end), incarnation.toInt)
    }
  }
}

package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition

import sluice.api.{SourceSplit, VersionedSerializer}

/** One topic-partition, read from `startPosition` (an offset) to `stopPosition` when bounded. */
final case class KafkaPartitionSplit(topic: String, partition: Int, startPosition: Long, stopPosition: Option[Long])
  extends SourceSplit {
  override def splitId: String = s"$topic-$partition"
  def topicPartition: TopicPartition = new TopicPartition(topic, partition)
}

private[kafka] object KafkaSplitSerializer extends VersionedSerializer[KafkaPartitionSplit] {
  override val version: Int = 1

  // partition:start:stop:topic — the topic last, since topic names may contain ':'? They may not
  // (Kafka allows [a-zA-Z0-9._-]), but keeping the free-form field last costs nothing.
  override def serialize(s: KafkaPartitionSplit): String =
    s"${s.partition}:${s.startPosition}:${s.stopPosition.map(_.toString).getOrElse("")}:${s.topic}"

  override def deserialize(version: Int, text: String): KafkaPartitionSplit = {
    if (version > this.version) throw VersionedSerializer.unsupported("a Kafka split", version, this.version)
    val Array(partition, start, stop, topic) = text.split(":", 4)
    KafkaPartitionSplit(topic, partition.toInt, start.toLong, if (stop.isEmpty) None else Some(stop.toLong))
  }
}

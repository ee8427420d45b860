package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition

import sluice.api.VersionedSerializer

/**
 * What a Kafka enumerator keeps in the offset log: the partitions it found (and whether its first
 * discovery ran), so a restarted query does not resolve their start offsets again.
 *
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

  /** 2 adds topic ids and incarnations; 1 ("done;p:topic,...") still reads. */
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

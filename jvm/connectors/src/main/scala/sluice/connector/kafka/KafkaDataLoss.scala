package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition

import sluice.errors.{ErrorClasses, SluiceRuntimeException}

/**
 * Every case the `failOnDataLoss` option decides, in one place. Each method is called where a
 * Kafka source finds records it was to read gone: with failOnDataLoss=true (the default, as in
 * Spark) it throws an error that names what is gone and what failOnDataLoss=false would do
 * instead; with false it returns, and its caller goes on as that advice says (and counts it).
 */
private[kafka] final class KafkaDataLoss(failOnDataLoss: Boolean) {
  import KafkaDataLoss._

  /** Whether a loss is reported and gone past, rather than stopping the query. */
  def tolerated: Boolean = !failOnDataLoss

  /** Planning: a topic's id changed, so it was deleted and re-created after it was read. */
  def topicRecreated(topic: String, oldId: String, newId: String): Unit =
    decide(
      s"KafkaSource: topic $topic was deleted and re-created (its topic id changed from $oldId to $newId) after " +
        "this query started reading it: records of the old topic not read yet are lost, and the new topic's " +
        "offsets do not continue the old ones.",
      "read the new topic from its beginning (counted as partitionsReset in the source metrics)")

  /** Planning: a partition's log now ends below the offset already read. */
  def logEndsBelowRead(tp: TopicPartition, end: Long, read: Long): Unit =
    decide(
      s"KafkaSource: topic ${tp.topic} partition ${tp.partition} now ends at offset $end, below offset $read " +
        "that this query already read up to: its log was truncated, or the topic was deleted and re-created. " +
        "Records may have been lost, and offsets no longer mean what they meant.",
      s"go on from offset $end (counted as partitionsReset in the source metrics)")

  /** Planning: a split's topic or partition no longer exists. */
  def partitionGoneAtPlanning(splitId: String): Unit =
    decide(
      s"KafkaSource: partition $splitId is gone (its topic or partition was deleted), so records not read yet " +
        "may be lost.",
      GoOnWithout)

  /** Reading: the offset to read is older than anything left in the partition (retention, truncation). */
  def offsetsOutOfRange(tp: TopicPartition, offset: Long, until: Long, earliest: Long): Unit =
    decide(
      s"KafkaSource: cannot read offsets [$offset, $until) of topic ${tp.topic} partition ${tp.partition}: the " +
        s"earliest offset still in Kafka is $earliest, so some records were lost (aged out by retention, or the " +
        "topic was deleted and re-created) before they were read.",
      "skip them and count them in the source metrics")

  /** Reading: a partition ends below the offsets planned for the range being read. */
  def logEndsBeforePlanned(tp: TopicPartition, end: Long, until: Long): Unit =
    decide(
      s"KafkaSource: topic ${tp.topic} partition ${tp.partition} ends at offset $end, but offsets up to $until " +
        "were planned to be read: records were lost (the topic was deleted or truncated).",
      "skip them and count them in the metrics")

  /** Reading: the partition being read was deleted before its range was read. */
  def partitionGoneWhileReading(splitId: String, until: Long): Unit =
    decide(
      s"KafkaSource: partition $splitId is gone (its topic or partition was deleted) before offsets up to " +
        s"$until were read.",
      GoOnWithout)

  // the advice ("Set failOnDataLoss=false to ...") is written once, in the error class's template
  private def decide(what: String, instead: String): Unit =
    if (failOnDataLoss)
      throw new SluiceRuntimeException(
        ErrorClasses.DataLoss,
        Map("what" -> what, "instead" -> instead))
}

private[kafka] object KafkaDataLoss {
  private val GoOnWithout = "go on without it"
}

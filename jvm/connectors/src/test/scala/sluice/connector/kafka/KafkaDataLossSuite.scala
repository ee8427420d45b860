package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition
import org.scalatest.funsuite.AnyFunSuite

import sluice.errors.{ErrorClasses, SluiceRuntimeException}

/**
 * Every case `failOnDataLoss` decides: with true an error naming what is gone and what
 * failOnDataLoss=false would do instead (the texts users see, word for word); with false no error,
 * so the caller goes on past the loss. The error is of class SLUICE_DATA_LOSS.
 */
class KafkaDataLossSuite extends AnyFunSuite {
  private val tp = new TopicPartition("orders", 3)

  /** Each case, how it is called, and the error it raises when losses fail the query. */
  private val cases: Seq[(String, KafkaDataLoss => Unit, String)] = Seq(
    (
      "a topic re-created",
      _.topicRecreated("orders", "old-id", "new-id"),
      "KafkaSource: topic orders was deleted and re-created (its topic id changed from old-id to new-id) after " +
        "this query started reading it: records of the old topic not read yet are lost, and the new topic's " +
        "offsets do not continue the old ones. Set failOnDataLoss=false to read the new topic from its beginning " +
        "(counted as partitionsReset in the source metrics)."),
    (
      "a log ending below what was read",
      _.logEndsBelowRead(tp, 10L, 100L),
      "KafkaSource: topic orders partition 3 now ends at offset 10, below offset 100 that this query already " +
        "read up to: its log was truncated, or the topic was deleted and re-created. Records may have been lost, " +
        "and offsets no longer mean what they meant. Set failOnDataLoss=false to go on from offset 10 (counted as " +
        "partitionsReset in the source metrics)."),
    (
      "a partition gone when planning",
      _.partitionGoneAtPlanning("orders-3@1"),
      "KafkaSource: partition orders-3@1 is gone (its topic or partition was deleted), so records not read yet " +
        "may be lost. Set failOnDataLoss=false to go on without it."),
    (
      "offsets out of range when reading",
      _.offsetsOutOfRange(tp, 0L, 100L, 50L),
      "KafkaSource: cannot read offsets [0, 100) of topic orders partition 3: the earliest offset still in Kafka " +
        "is 50, so some records were lost (aged out by retention, or the topic was deleted and re-created) before " +
        "they were read. Set failOnDataLoss=false to skip them and count them in the source metrics."),
    (
      "a log ending before the planned range",
      _.logEndsBeforePlanned(tp, 40L, 100L),
      "KafkaSource: topic orders partition 3 ends at offset 40, but offsets up to 100 were planned to be read: " +
        "records were lost (the topic was deleted or truncated). Set failOnDataLoss=false to skip them and count " +
        "them in the metrics."),
    (
      "a partition gone while reading",
      _.partitionGoneWhileReading("orders-3", 100L),
      "KafkaSource: partition orders-3 is gone (its topic or partition was deleted) before offsets up to 100 " +
        "were read. Set failOnDataLoss=false to go on without it."))

  cases.foreach { case (name, call, message) =>
    test(s"$name: an error saying what failOnDataLoss=false does with true, nothing with false") {
      val e = intercept[IllegalStateException](call(new KafkaDataLoss(failOnDataLoss = true)))
      assert(e.getMessage == message)
      // a runtime fault of class SLUICE_DATA_LOSS, its advice filled in from the class's template
      val classed = e.asInstanceOf[SluiceRuntimeException]
      assert(classed.errorClass == ErrorClasses.DataLoss)
      assert(classed.messageParameters.keySet == Set("what", "instead"))
      assert(
        message.endsWith(s"Set failOnDataLoss=false to ${classed.messageParameters("instead")}."))
      call(new KafkaDataLoss(failOnDataLoss = false)) // returns: the caller goes on
    }
  }

  test("a retention watch reports a loss as tolerated only with failOnDataLoss=false") {
    assert(new KafkaDataLoss(failOnDataLoss = false).tolerated)
    assert(!new KafkaDataLoss(failOnDataLoss = true).tolerated)
  }
}

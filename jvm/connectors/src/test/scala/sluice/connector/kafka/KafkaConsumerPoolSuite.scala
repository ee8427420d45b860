package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerConfig
import org.scalatest.funsuite.AnyFunSuite

/** What a reader's consumer is configured with: the user's properties, then Sluice's rules. */
class KafkaConsumerPoolSuite extends AnyFunSuite {

  private val servers = "bootstrap.servers" -> "127.0.0.1:9"

  private def consumerOf(options: (String, String)*): Map[String, String] =
    KafkaConfig
      .fromOptions(Map("kafka.bootstrap.servers" -> "127.0.0.1:9", "subscribe" -> "t") ++ options)
      .consumerProperties

  test(
    "a reader fetches 8 MB of a partition unless kafka.max.partition.fetch.bytes says otherwise, in any case; commits and resets stay off") {
    val reader =
      KafkaConsumerPool.consumerConfig(KafkaConsumerPool.readerProperties(Map(servers)))
    assert(
      reader.get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == (8 * 1024 * 1024).toString)
    for (key <- Seq("kafka.max.partition.fetch.bytes", "kafka.MAX.PARTITION.FETCH.BYTES")) {
      val told = consumerOf(key -> "1048576", "kafka.Client.Id" -> "c")
      assert(told.get("max.partition.fetch.bytes").contains("1048576"), key)
      assert(KafkaConsumerPool.readerProperties(told) == told, key)
    }
    val told = KafkaConsumerPool.consumerConfig(
      Map(servers, "max.partition.fetch.bytes" -> "1048576", "enable.auto.commit" -> "true"))
    assert(told.get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == "1048576")
    assert(told.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG) == "false")
    assert(told.get(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG) == "none")
    // the driver's look-ups of first records (KafkaFirstRecordTimes) keep Kafka's default
    assert(
      KafkaConsumerPool
        .consumerConfig(Map(servers))
        .get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == null)
  }

  test(
    "consumer property names in any case reach Kafka as its lower-case names; one named twice is refused") {
    val props = consumerOf(
      "kafka.Client.Id" -> "mine",
      "kafka.ISOLATION.LEVEL" -> "read_committed",
      "kafka.group.id" -> "g")
    assert(
      props == Map(
        "bootstrap.servers" -> "127.0.0.1:9",
        "client.id" -> "mine",
        "isolation.level" -> "read_committed",
        "group.id" -> "g"))
    val e = intercept[sluice.errors.SluiceConfigException](
      consumerOf("kafka.client.id" -> "a", "kafka.CLIENT.ID" -> "b"))
    // a property Sluice does not take is named as the user wrote it
    val reserved = intercept[sluice.errors.SluiceConfigException](
      consumerOf("kafka.Enable.Auto.Commit" -> "false"))
    assert(reserved.getMessage.contains("option 'kafka.Enable.Auto.Commit' is not supported"))
    assert(
      e.getMessage.contains(
        "options 'kafka.CLIENT.ID' and 'kafka.client.id' name the same Kafka property"),
      e.getMessage)
  }
}

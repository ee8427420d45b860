package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerConfig
import org.scalatest.funsuite.AnyFunSuite

/** What a reader's consumer is configured with: the user's properties, then Sluice's rules. */
class KafkaConsumerPoolSuite extends AnyFunSuite {

  private val servers = "bootstrap.servers" -> "127.0.0.1:9"

  test(
    "a reader fetches 8 MB of a partition unless kafka.max.partition.fetch.bytes says otherwise, in any case; commits and resets stay off") {
    val reader =
      KafkaConsumerPool.consumerConfig(KafkaConsumerPool.readerProperties(Map(servers)))
    assert(
      reader.get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == (8 * 1024 * 1024).toString)
    for (key <- Seq("max.partition.fetch.bytes", "MAX.PARTITION.FETCH.BYTES")) {
      val told = Map(servers, key -> "1048576", "enable.auto.commit" -> "true")
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
}

package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerConfig
import org.scalatest.funsuite.AnyFunSuite

/** What a reader's consumer is configured with: the user's properties, then Sluice's rules. */
class KafkaConsumerPoolSuite extends AnyFunSuite {

  test(
    "a reader fetches 8 MB of a partition unless kafka.max.partition.fetch.bytes says otherwise; commits and resets stay off") {
    val default = KafkaConsumerPool.consumerConfig(Map("bootstrap.servers" -> "127.0.0.1:9"))
    assert(
      default.get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == (8 * 1024 * 1024).toString)
    val told = KafkaConsumerPool.consumerConfig(
      Map(
        "bootstrap.servers" -> "127.0.0.1:9",
        "max.partition.fetch.bytes" -> "1048576",
        "enable.auto.commit" -> "true"))
    assert(told.get(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG) == "1048576")
    assert(told.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG) == "false")
    assert(told.get(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG) == "none")
  }
}

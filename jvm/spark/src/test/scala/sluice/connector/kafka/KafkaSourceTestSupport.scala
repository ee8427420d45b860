package sluice.connector.kafka

/** Kafka sources for tests that only need one built, not read. */
final class KafkaSourceTestSupport {
  def boundedKafka: KafkaSource = KafkaSource
    .builder()
    .bootstrapServers("127.0.0.1:1")
    .topics("t")
    .stoppingOffsets(OffsetsInitializer.latest())
    .build()
}

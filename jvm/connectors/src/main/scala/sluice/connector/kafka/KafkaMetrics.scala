package sluice.connector.kafka

/** The keys `KafkaEnumerator` reports in query progress (declared by these names in the binding). */
object KafkaMetrics {
  val PartitionsReset = "partitionsReset"

  /** Spark's Kafka source's names for the same figures. */
  val MinOffsetsBehindLatest = "minOffsetsBehindLatest"
  val MaxOffsetsBehindLatest = "maxOffsetsBehindLatest"
  val AvgOffsetsBehindLatest = "avgOffsetsBehindLatest"
}

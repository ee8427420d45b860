package sluice.flinkanchor;

/**
 * One Kafka record as Flink's job holds it: the fields Spark's and Sluice's Kafka rows carry (key,
 * value, topic, partition, offset, timestamp), so the anchor builds as much per record as they do.
 * A public POJO, so Flink serializes it with its own POJO serializer rather than Kryo.
 */
public final class KafkaRecord {
  public byte[] key;
  public byte[] value;
  public String topic;
  public int partition;
  public long offset;
  public long timestamp;

  public KafkaRecord() {}

  public KafkaRecord(
      byte[] key, byte[] value, String topic, int partition, long offset, long timestamp) {
    this.key = key;
    this.value = value;
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.timestamp = timestamp;
  }
}

package sluice.flinkanchor;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/** Turns a consumer record into a {@link KafkaRecord}, copying nothing the consumer gave. */
final class RecordDeserializer implements KafkaRecordDeserializationSchema<KafkaRecord> {
  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<KafkaRecord> out) {
    out.collect(
        new KafkaRecord(
            record.key(),
            record.value(),
            record.topic(),
            record.partition(),
            record.offset(),
            record.timestamp()));
  }

  @Override
  public TypeInformation<KafkaRecord> getProducedType() {
    return TypeInformation.of(KafkaRecord.class);
  }
}

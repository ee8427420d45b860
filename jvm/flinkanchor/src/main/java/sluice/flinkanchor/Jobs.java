package sluice.flinkanchor;

import java.time.Duration;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.OutputTag;

/**
 * The two jobs the anchor runs, each a bounded read of a whole topic from its earliest offsets (as
 * the Spark queries it is compared with read it with Trigger.AvailableNow).
 */
final class Jobs {
  static final String READ = "read";
  static final String WINDOWED = "windowed";
  static final String LATE = "late";

  private static final TypeInformation<KafkaRecord> RECORD = TypeInformation.of(KafkaRecord.class);

  private Jobs() {}

  /** Every record of `topic` into a discarding sink, counted. */
  static void raw(StreamExecutionEnvironment env, String bootstrap, String topic) {
    env.fromSource(source(bootstrap, topic), WatermarkStrategy.noWatermarks(), "kafka")
        .map(new Counted<KafkaRecord>(READ, r -> 1L))
        .returns(RECORD)
        .sinkTo(new DiscardingSink<>());
  }

  /**
   * The skewed catch-up: records' Kafka timestamps as event time, a watermark `delay` behind,
   * aligned by Flink (FLIP-182/217: sources and splits more than `maxDrift` ahead of the group's
   * slowest pause, checked every `update`), counted into 1-minute event-time windows; records that
   * arrive behind the watermark are counted as dropped (Flink drops them from windows too; the
   * side output only lets them be counted).
   */
  static void aligned(
      StreamExecutionEnvironment env,
      String bootstrap,
      String topic,
      Duration maxDrift,
      Duration update,
      Duration delay) {
    WatermarkStrategy<KafkaRecord> strategy =
        WatermarkStrategy.<KafkaRecord>forBoundedOutOfOrderness(delay)
            .withTimestampAssigner((record, kafkaTime) -> record.timestamp)
            .withWatermarkAlignment("anchor", maxDrift, update);
    OutputTag<KafkaRecord> late = new OutputTag<>(LATE, RECORD);
    DataStream<KafkaRecord> records =
        env.fromSource(source(bootstrap, topic), strategy, "kafka")
            .map(new Counted<KafkaRecord>(READ, r -> 1L))
            .returns(RECORD);
    SingleOutputStreamOperator<Long> counts =
        records
            .keyBy(new MinuteOf())
            .window(TumblingEventTimeWindows.of(Duration.ofMinutes(1)))
            .sideOutputLateData(late)
            .aggregate(new Count());
    counts.map(new Counted<Long>(WINDOWED, c -> c)).returns(Types.LONG).sinkTo(new DiscardingSink<>());
    counts
        .getSideOutput(late)
        .map(new Counted<KafkaRecord>(LATE, r -> 1L))
        .returns(RECORD)
        .sinkTo(new DiscardingSink<>());
  }

  private static KafkaSource<KafkaRecord> source(String bootstrap, String topic) {
    return KafkaSource.<KafkaRecord>builder()
        .setBootstrapServers(bootstrap)
        .setTopics(topic)
        .setGroupId("flink-anchor")
        .setStartingOffsets(OffsetsInitializer.earliest())
        .setBounded(OffsetsInitializer.latest())
        .setDeserializer(new RecordDeserializer())
        .build();
  }

  /** The key of a record's 1-minute window (its start), so windows spread over the subtasks. */
  static final class MinuteOf implements KeySelector<KafkaRecord, Long> {
    @Override
    public Long getKey(KafkaRecord record) {
      return Math.floorDiv(record.timestamp, 60_000L);
    }
  }

  /** A window's record count. */
  static final class Count implements AggregateFunction<KafkaRecord, Long, Long> {
    @Override
    public Long createAccumulator() {
      return 0L;
    }

    @Override
    public Long add(KafkaRecord record, Long count) {
      return count + 1;
    }

    @Override
    public Long getResult(Long count) {
      return count;
    }

    @Override
    public Long merge(Long a, Long b) {
      return a + b;
    }
  }
}

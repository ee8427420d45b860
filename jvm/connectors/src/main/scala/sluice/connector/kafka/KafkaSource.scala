package sluice.connector.kafka

import org.apache.kafka.common.TopicPartition
import org.apache.spark.sql.types.StructType

import sluice.api._
import sluice.config.{ConfigOption, RecordLayout}
import sluice.errors.SluiceError

/**
 * Kafka as a FLIP-27 source: one split per topic-partition, discovered in the driver, read in
 * executors with pooled consumers that can pause and resume partitions. Bounded when stopping
 * offsets are given. A query that uses some of its columns gets rows of only those
 * (`withColumns`): one that uses only the payload gets the rows compact records are made of.
 */
final class KafkaSource private (rawOptions: Map[String, String], val config: KafkaConfig)
    extends Source[KafkaPartitionSplit, KafkaEnumeratorState]
    with SupportsStartAtTimestamp
    with SupportsRetentionWatch
    with SupportsSplitPausing[KafkaPartitionSplit]
    with SupportsColumnPruning[KafkaPartitionSplit, KafkaEnumeratorState]
    with SupportsColumnarReads[KafkaPartitionSplit] {

  override def sourceType: String = KafkaSource.Type

  override def boundedness: Boundedness =
    if (config.stopping.isDefined) Boundedness.Bounded else Boundedness.ContinuousUnbounded

  override def schema: StructType = config.decoder(RecordLayout.Full).schema
  override def schema(layout: RecordLayout): StructType = config.decoder(layout).schema

  override def options: Map[String, String] = rawOptions + ("source" -> sourceType)

  /**
   * This source building only the columns `required` names (`KafkaConfig.decoder`); splits,
   * offsets and record times are those of the unpruned source. Itself when that is every column.
   */
  override def pruningKeepsRecords: Boolean = config.payload.forall(_.mode == "PERMISSIVE")

  override def withColumns(required: Set[String]): KafkaSource = {
    val all = config.decoder(RecordLayout.Full).schema.fieldNames
    val used = config.columns.fold(required)(_ intersect required)
    if (all.forall(used.contains)) this
    else new KafkaSource(rawOptions, config.copy(columns = Some(used)))
  }

  override def createEnumerator(): KafkaEnumerator = {
    config.checkStartSubscribed()
    new KafkaEnumerator(config, None)
  }
  override def restoreEnumerator(state: KafkaEnumeratorState): KafkaEnumerator =
    new KafkaEnumerator(config, Some(state))
  override def createReader(context: ReaderContext): KafkaSplitReader =
    new KafkaSplitReader(config, context)

  /**
   * Planned ranges of Spark's raw columns (not headers, not a parsed payload) are read as column
   * batches: micro-batches and batch reads. Open ranges (real-time mode, continuous processing)
   * are read as rows, as the binding never asks for them.
   */
  override def readsColumnar(
      ranges: Seq[SplitRange[KafkaPartitionSplit]],
      layout: RecordLayout): Boolean =
    KafkaRecordVectors.columnsOf(config.decoder(layout)).isDefined && ranges.forall(!_.isOpen)

  override def createColumnarReader(context: ReaderContext): KafkaColumnarReader =
    new KafkaColumnarReader(config, context)

  override def retentionWatch(): KafkaRetentionWatch = new KafkaRetentionWatch(config)

  override def splitSerializer: VersionedSerializer[KafkaPartitionSplit] = KafkaSplitSerializer
  override def enumeratorStateSerializer: VersionedSerializer[KafkaEnumeratorState] =
    KafkaEnumeratorStateSerializer

  /** The same source, starting every partition at its first record at or after `timestampMs`. */
  override def startingAtTimestamp(timestampMs: Long): KafkaSource = {
    import KafkaConfig._
    val replaced = Start.replaced.map(_.name.toLowerCase)
    // a partition with nothing at or after the timestamp starts at its end: nothing there to skip
    val started = KafkaSource.fromOptions(
      rawOptions.filterNot(e => replaced.contains(e._1.toLowerCase)) +
        (StartingTimestamp.name -> timestampMs.toString) +
        (StartingOffsetsByTimestampStrategy.name -> "latest"))
    config.columns.fold(started)(started.withColumns) // a hybrid member keeps its pruning
  }

  override def toString: String = s"KafkaSource($config)"
}

object KafkaSource {
  val Type = "kafka"

  def builder(): Builder = new Builder(Map.empty)

  def fromOptions(options: Map[String, String]): KafkaSource =
    new KafkaSource(options, KafkaConfig.fromOptions(options))

  /** Typed setters over the option map; `build()` validates and names what is wrong. */
  final class Builder private[KafkaSource] (options: Map[String, String]) {
    import KafkaConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))
    private def without(names: ConfigOption[_]*) =
      new Builder(options -- names.map(_.name))

    def bootstrapServers(servers: String): Builder = set(BootstrapServers.name, servers)
    def topics(topics: String*): Builder = set(Subscribe.name, topics.mkString(","))
    def topicPattern(regex: String): Builder = set(SubscribePattern.name, regex)

    /** Spark's `assign`: these partitions only (give this, `topics` or `topicPattern`). */
    def partitions(assigned: Map[String, Seq[Int]]): Builder = set(
      Assign.name,
      assigned.toSeq
        .sortBy(_._1)
        .map { case (t, ps) =>
          OffsetsInitializer.mapper.writeValueAsString(t) + ps.sorted.mkString(":[", ",", "]")
        }
        .mkString("{", ",", "}"))

    /** A Kafka consumer property (e.g. `security.protocol`); passed to every consumer. */
    def property(key: String, value: String): Builder = set(Prefix + key, value)

    /**
     * A timestamp start begins a partition with no record at or after it at its end, as Flink's
     * `OffsetsInitializer.timestamp` does (the raw option `startingOffsetsByTimestampStrategy`
     * defaults to Spark's `error`; set it after this to fail instead).
     */
    def startingOffsets(initializer: OffsetsInitializer): Builder = {
      val b = without(Start.replaced: _*)
      initializer match {
        case OffsetsInitializer.Earliest => b.set(StartingOffsets.name, "earliest")
        case OffsetsInitializer.Latest => b.set(StartingOffsets.name, "latest")
        case OffsetsInitializer.Specific(o) =>
          b.set(StartingOffsets.name, OffsetsInitializer.toJson(o))
        case OffsetsInitializer.Timestamp(ts) =>
          b.set(StartingTimestamp.name, ts).set(StartingOffsetsByTimestampStrategy.name, "latest")
        case OffsetsInitializer.TimestampPerPartition(t) =>
          b.set(StartingOffsetsByTimestamp.name, OffsetsInitializer.toJson(t))
            .set(StartingOffsetsByTimestampStrategy.name, "latest")
      }
    }

    /** Makes the source bounded: it ends at these offsets. */
    def stoppingOffsets(initializer: OffsetsInitializer): Builder = {
      val b = without(Stop.replaced: _*)
      initializer match {
        case OffsetsInitializer.Earliest =>
          throw SluiceError.config(
            "KafkaSource: 'earliest' is not a stopping position; use latest, offsets or a timestamp.")
        case OffsetsInitializer.Latest => b.set(EndingOffsets.name, "latest")
        case OffsetsInitializer.Specific(o) =>
          b.set(EndingOffsets.name, OffsetsInitializer.toJson(o))
        case OffsetsInitializer.Timestamp(ts) => b.set(EndingTimestamp.name, ts)
        case OffsetsInitializer.TimestampPerPartition(t) =>
          b.set(EndingOffsetsByTimestamp.name, OffsetsInitializer.toJson(t))
      }
    }

    def failOnDataLoss(fail: Boolean): Builder = set(FailOnDataLoss.name, fail)
    def includeHeaders(include: Boolean): Builder = set(IncludeHeaders.name, include)

    /** Compact rows (`forceTimestampSupport=false`) hold the value only unless this is true. */
    def includeKey(include: Boolean): Builder = set(IncludeKey.name, include)
    def partitionDiscoveryIntervalMs(ms: Long): Builder =
      set(PartitionDiscoveryIntervalMs.name, ms)
    def option(name: String, value: String): Builder = set(name, value)

    def build(): KafkaSource = KafkaSource.fromOptions(options)
  }

  /** For builders in other languages: `{"topic":{"0":12}}`-style maps from pairs. */
  def partition(topic: String, partition: Int): TopicPartition =
    new TopicPartition(topic, partition)
}

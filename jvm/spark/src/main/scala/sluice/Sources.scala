package sluice

import sluice.api.{Source, SourceResolver, SourceSplit}
import sluice.config.{ConfigOption, OptionsReference}
import sluice.config.OptionsReference.Section
import sluice.connector.file.{FileConfig, FileSource}
import sluice.connector.file.parquet.{ParquetConfig, ParquetSource}
import sluice.connector.generator.{GeneratorConfig, GeneratorSource}
import sluice.connector.kafka.{KafkaConfig, KafkaSource}
import sluice.connector.table.delta.{DeltaConfig, DeltaSource}
import sluice.connector.table.iceberg.{IcebergConfig, IcebergSource}
import sluice.errors.{ErrorClasses, SluiceConfigException}
import sluice.hybrid.HybridSource
import sluice.spark.StreamOptions

/**
 * Rebuilds a source from its options: the one way a source crosses from a builder (Scala or
 * Python) to Spark's DataSource API and back from a checkpointed query's options.
 */
object Sources extends SourceResolver {

  /** The option naming the source type. */
  val TypeOption = "source"

  private val factories: Map[String, Map[String, String] => Source[_ <: SourceSplit, _]] = Map(
    GeneratorSource.Type -> (GeneratorSource.fromOptions _),
    // one source type for files; Parquet files are read by their own source (row-group splits)
    FileSource.Type -> (options =>
      if (ParquetConfig.isParquet(options)) ParquetSource.fromOptions(options)
      else FileSource.fromOptions(options)),
    KafkaSource.Type -> (KafkaSource.fromOptions _),
    IcebergConfig.Type -> (IcebergSource.fromOptions _),
    DeltaConfig.Type -> (DeltaSource.fromOptions _),
    HybridSource.Type -> (options => HybridSource.fromOptions(options, this)))

  def types: Seq[String] = factories.keys.toSeq.sorted

  override def fromOptions(options: Map[String, String]): Source[_ <: SourceSplit, _] = {
    val (typeEntries, rest) = options.partition(_._1.equalsIgnoreCase(TypeOption))
    val sourceType = typeEntries.values.headOption
      .map(_.trim.toLowerCase)
      .getOrElse(
        throw new SluiceConfigException(
          ErrorClasses.MissingOption,
          Map(
            "context" -> "Sluice",
            "option" -> TypeOption,
            "about" -> "",
            "allowed" -> types.mkString(", "))))
    val factory = factories.getOrElse(
      sourceType,
      throw ConfigOption.invalid("Sluice", TypeOption, sourceType, types.mkString(", ")))
    factory(rest)
  }

  /** Java-friendly entry for py4j: validates the options by building the source. */
  def fromJavaOptions(options: java.util.Map[String, String]): Source[_ <: SourceSplit, _] = {
    import scala.jdk.CollectionConverters._
    // Python's builders call this over py4j: their errors carry the class as load()'s do
    try fromOptions(options.asScala.toMap)
    catch sluice.spark.SparkErrors.surface
  }

  /** The option reference of docs/options.md, generated from the declarations. */
  def optionsReference: String = OptionsReference.markdown(
    Seq(
      Section(
        "Read options (every source)",
        "Options of the Spark binding: `format(\"sluice\")` options, or `options=` of `from_source`. " +
          "`source` (required) names the source type: " + types
            .map(t => s"`$t`")
            .mkString(", ") + ".",
        StreamOptions.all),
      Section(
        "Generator source (`source` = `generator`)",
        "Deterministic records `(id, split, timestamp, payload)`: record `i` of split `s` has id " +
          "`i * splits + s` and event time `eventTimeStartMs + skew(s) + i * eventTimeStepMs`.",
        GeneratorConfig.all),
      Section(
        "Kafka source (`source` = `kafka`)",
        "One split per topic-partition. Names follow Spark's Kafka source, whose read options " +
          "`maxOffsetsPerTrigger`, `minOffsetsPerTrigger`, `maxTriggerDelay` and `minPartitions` are read options " +
          "of every source here (above); see docs/migrating-from-spark-kafka.md. " +
          "Raw rows have Spark's Kafka schema: `key`, `value`, `topic`, `partition`, `offset`, " +
          "`timestamp`, `timestampType` (and `headers`).",
        KafkaConfig.documented,
        KafkaConfig.rules),
      Section(
        "File source (`source` = `file`)",
        "JSON lines, CSV lines or text lines, parsed by Spark's own parsers as `spark.read.json/csv/text` " +
          "parse them; rows are the data columns followed by `_split`, `_position` (the line's byte " +
          "offset) and `_timestamp` (the file's modification time). Spark's reader options are taken " +
          "by their Spark names; the format they apply to is in parentheses. Positions are bytes: " +
          "`maxRecordsPerTrigger` is converted with the bytes per record read so far (100 before the first " +
          "batch), so it holds on average.",
        FileConfig.all),
      Section(
        "Parquet files (`source` = `file`, `format` = `parquet`)",
        "Parquet files read by Spark's own Parquet reader (vectorized where Spark's would be), one split per row " +
          "group; positions are row indexes in the file, so `maxRecordsPerTrigger` is exact and a restart resumes at " +
          "the exact row. Rows are the files' columns, the partition columns of `name=value` directories, then " +
          "`_split`, `_position` (the row index) and `_timestamp` (the file's modification time). With " +
          "`timestampColumn`, the row groups' statistics are an event-time index for alignment. See docs/connectors.md.",
        ParquetConfig.all),
      Section(
        "Iceberg tables (`source` = `iceberg`)",
        "A snapshot of an Iceberg table (bounded; with `monitorIntervalMs` unbounded: the files later appends add " +
          "are read, an overwrite or delete fails the query unless `skipChanges`), planned by Iceberg's own library " +
          "(files skipped by partition " +
          "values and column statistics from the pushed filters); its Parquet data files read as the Parquet source " +
          "reads files (row-group splits, exact row positions). Rows are the table's columns at the snapshot, then " +
          "`_split`, `_position` and `_timestamp`. Position deletes (v2, Parquet) and deletion vectors (v3) are " +
          "applied (maxRecordsPerTrigger then counts positions, deleted rows included); snapshots with equality " +
          "deletes, position deletes in Avro or ORC and tables with a name mapping (files imported without field " +
          "ids) are refused. Columns are found by Iceberg field id, as Iceberg finds them: renamed columns and " +
          "reused names read as pyiceberg reads them. See docs/connectors.md.",
        IcebergConfig.all),
      Section(
        "Delta tables (`source` = `delta`)",
        "A version of a Delta table (bounded; with `monitorIntervalMs` unbounded: the files later appends add are " +
          "read, a version removing files fails the query unless `skipChanges`), planned by Delta Kernel; its " +
          "Parquet data files read as the Parquet " +
          "source reads files (row-group splits, exact row positions; files skipped by partition values and the " +
          "log's statistics). Rows are " +
          "the table's data columns, its partition columns, then `_split`, `_position` and `_timestamp`. Column " +
          "mapping (modes `name` and `id`) is read: files by physical names or field ids, partition values from " +
          "the log. Deletion vectors are applied (maxRecordsPerTrigger then counts positions, deleted rows " +
          "included); type widening and timestamp partition columns are refused. See docs/connectors.md.",
        DeltaConfig.all)))

  def main(args: Array[String]): Unit = print(optionsReference)
}

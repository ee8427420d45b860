package sluice.spark

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{SQLContext, SparkSession}
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{Batch, Scan, ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns}
import org.apache.spark.sql.connector.read.streaming.{ContinuousStream, MicroBatchStream}
import org.apache.spark.sql.sources.{BaseRelation, DataSourceRegister, Filter, RelationProvider}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import sluice.api.{Source, SourceSplit}
import sluice.config.RecordLayout
import sluice.errors.SluiceError
import sluice.eventtime.EventTimeSettings

/**
 * `spark.readStream.format("sluice")` and, for bounded sources, `spark.read.format("sluice")`:
 * builds the source from the options, then the stream or the batch.
 */
final class SluiceProvider extends TableProvider with DataSourceRegister with RelationProvider {
  override def shortName(): String = sluice.Sluice.Format

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    try {
      val (streamOptions, source) =
        StreamOptions.parse(options.asCaseSensitiveMap().asScala.toMap)
      streamOptions.outputSchema(source)
    } catch SparkErrors.surface

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]): Table =
    try {
      val raw = properties.asScala.toMap
      val (streamOptions, source) = StreamOptions.parse(raw)
      // the backstop for definitions never released: they go when this application ends
      SparkSession.getActiveSession
        .orElse(SparkSession.getDefaultSession)
        .foreach(s => HybridFactories.adopt(HybridFactories.idsOf(source), s.sparkContext))
      new SluiceTable(
        source,
        streamOptions,
        BatchReadability.refusal(source, streamOptions, raw.keySet))
    } catch SparkErrors.surface

  override def supportsExternalMetadata(): Boolean = false

  /**
   * Not a data source V1: `spark.read` falls back here only when the table lacks BATCH_READ, that
   * is when the source cannot be read as a batch. Refusing here, with the reason, is what makes
   * `load()` fail at once; Spark would otherwise say "not a valid Spark SQL Data Source".
   */
  override def createRelation(
      sqlContext: SQLContext,
      parameters: Map[String, String]): BaseRelation =
    try refuseV1(parameters)
    catch SparkErrors.surface

  private def refuseV1(parameters: Map[String, String]): BaseRelation = {
    val raw =
      parameters match { // Spark hands V1 options lower-cased; connectors get them as given
        case m: CaseInsensitiveMap[String @unchecked] => m.originalMap
        case m => m
      }
    val (streamOptions, source) = StreamOptions.parse(raw)
    throw SluiceError.config(
      BatchReadability
        .refusal(source, streamOptions, raw.keySet)
        .getOrElse(
          s"Sluice: the ${source.sourceType} source cannot be read as a batch here; read it with spark.readStream."))
  }
}

/**
 * One table for both reads: a stream always, a batch when `batchRefusal` is empty (a bounded
 * source, no stream-only options). Spark checks BATCH_READ when `load()` builds a batch read.
 */
final class SluiceTable(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    batchRefusal: Option[String],
    /** Filters a stream's rows pass, found in the started query's plan (`StreamingPushdown`). */
    val streamFilters: Seq[Filter] = Nil)
    extends Table
    with SupportsRead {
  override def name(): String = s"sluice:${options.name.getOrElse(source.sourceType)}"

  /** Full or compact records (`forceTimestampSupport=false`: payload-only rows). */
  def layout: RecordLayout = options.layout

  /** Columns the full layout has and compact rows leave out, the event-time column included. */
  lazy val leftOut: Seq[String] =
    if (layout != RecordLayout.Compact) Nil
    else {
      val kept = source.schema(RecordLayout.Compact).fieldNames
      (source
        .schema(RecordLayout.Full)
        .fieldNames
        .filterNot(kept.contains) :+ options.eventTime.eventTimeColumn).toSeq
    }

  def compactColumnMessage(column: String): String =
    s"Column '$column' does not exist: the Sluice ${source.sourceType} source" +
      s"${options.name.fold("")(n => s" '$n'")} runs in compact mode (forceTimestampSupport=false), whose rows hold " +
      s"only ${source.schema(RecordLayout.Compact).fieldNames.mkString(", ")}. Set the source option forceTimestampSupport=true (or the " +
      s"Spark setting ${TimestampSupport.ForceConf}=true) to read ${options.eventTime.eventTimeColumn}, timestamps and provenance."
  override def schema(): StructType = options.outputSchema(source)

  /** The event-time column of the rows this table gives, under a watermark strategy. */
  def eventTimeColumn: Option[String] =
    Option.when(options.eventTime.enabled)(options.eventTime.eventTimeColumn)

  /** Whether alignment's maxDrift is `auto` and waits for the watermark delay of the query reading it. */
  def driftUnresolved: Boolean = options.eventTime.driftUnresolved

  /** This table with `auto` drift resolved from the reading query's `withWatermark` delay (`SluiceExtensions`). */
  def withWatermarkDelay(delayMs: Long): SluiceTable =
    new SluiceTable(
      source,
      options.copy(eventTime = options.eventTime.withDriftFromWatermark(delayMs, describe)),
      batchRefusal,
      streamFilters)

  /** This table, its streams' sources skipping data by `filters` (`StreamingPushdown`). */
  def withStreamFilters(filters: Seq[Filter]): SluiceTable =
    new SluiceTable(source, options, batchRefusal, filters)

  /** The source as messages name it. */
  def describe: String =
    s"Sluice ${source.sourceType} source${options.name.fold("")(n => s" '$n'")}"

  override def capabilities(): util.Set[TableCapability] =
    if (batchRefusal.isEmpty)
      util.EnumSet.of(
        TableCapability.MICRO_BATCH_READ,
        TableCapability.CONTINUOUS_READ,
        TableCapability.BATCH_READ)
    else util.EnumSet.of(TableCapability.MICRO_BATCH_READ, TableCapability.CONTINUOUS_READ)
  override def newScanBuilder(ignored: CaseInsensitiveStringMap): ScanBuilder =
    new SluiceScanBuilder(source, options, batchRefusal, streamFilters)

  /**
   * The names of the columns a scan of this table gives when the query uses `required`: those,
   * and what the source reads besides (`ScanPushdown`), in the table's order. Asked on every
   * analyzer pass of a started stream: it builds no reader (no broadcast).
   */
  def columnsRead(required: Set[String]): Seq[String] =
    ScanPushdown.outputSchema(source, options, required).fieldNames.toSeq
}

/**
 * Takes the columns the query uses (Spark's `pruneColumns`) and the filters its rows pass
 * (`pushFilters`): `spark.read` hands both from its optimizer; a stream gets every column of its
 * relation's output and no filters, so `StreamingPushdown` narrowed that output to the columns
 * the started query uses and gave the table the filters (`filters` here). Every filter is left to
 * Spark too: the source only skips data whose rows cannot pass them.
 */
final class SluiceScanBuilder(
    source: Source[SourceSplit, Any],
    options: StreamOptions,
    batchRefusal: Option[String],
    private var filters: Seq[Filter])
    extends ScanBuilder
    with SupportsPushDownRequiredColumns
    with SupportsPushDownFilters {
  private var required: Option[Set[String]] = None

  override def pruneColumns(requiredSchema: StructType): Unit =
    required = Some(requiredSchema.fieldNames.toSet)

  override def pushFilters(pushed: Array[Filter]): Array[Filter] = {
    filters = pushed.toSeq
    pushed // Spark applies all of them to the rows read
  }

  override def pushedFilters(): Array[Filter] = filters.toArray

  override def build(): Scan =
    try new SluiceScan(source, options, batchRefusal, required, filters)
    catch SparkErrors.surface
}

/**
 * `required`: the columns the query uses (None: all), `filters`: those its rows pass; the scan's
 * rows are those of the source they are pushed to (`ScanPushdown`), and so is every source it
 * builds for a stream or a batch.
 */
final class SluiceScan(
    unpruned: Source[SourceSplit, Any],
    options: StreamOptions,
    batchRefusal: Option[String],
    required: Option[Set[String]],
    filters: Seq[Filter])
    extends Scan {
  private val source = ScanPushdown(unpruned, options, required, filters)
  override def readSchema(): StructType = options.outputSchema(source)
  override def description(): String =
    s"Sluice ${source.sourceType} source${options.name.fold("")(n => s" '$n'")}"
  override def supportedCustomMetrics()
      : Array[org.apache.spark.sql.connector.metric.CustomMetric] = ReaderMetrics.supported

  /**
   * Each query gets its own source object (for either engine), rebuilt from the options: a DataFrame can start several
   * queries, and a source may keep per-query state (a hybrid's sources built at its switches).
   */
  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream =
    try microBatchStream(checkpointLocation)
    catch SparkErrors.surface

  private def microBatchStream(checkpointLocation: String): MicroBatchStream = {
    AutoDrift.requireResolved(options, description())
    val own = ownSource()
    HybridFactories.pinnedWhile(own, SparkSession.active.sparkContext)(
      new SluiceMicroBatchStream(own, options, checkpointLocation, SparkSession.active))
  }

  override def toContinuousStream(checkpointLocation: String): ContinuousStream =
    try continuousStream(checkpointLocation)
    catch SparkErrors.surface

  private def continuousStream(checkpointLocation: String): ContinuousStream = {
    AutoDrift.requireResolved(options, description())
    val own = ownSource()
    HybridFactories.pinnedWhile(own, SparkSession.active.sparkContext)(
      new SluiceContinuousStream(own, options, checkpointLocation, SparkSession.active))
  }

  /** A batch read gets its own source too, for the same reasons; `load()` already refused what cannot be read. */
  override def toBatch(): Batch =
    try {
      batchRefusal.foreach(why => throw SluiceError.config(why))
      new SluiceBatch(ownSource(), options)
    } catch SparkErrors.surface

  private def ownSource(): Source[SourceSplit, Any] = ScanPushdown(
    sluice.Sources.fromOptions(source.options).asInstanceOf[Source[SourceSplit, Any]],
    options,
    required,
    filters)
}

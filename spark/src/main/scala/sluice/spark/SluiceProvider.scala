package sluice.spark

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import sluice.api.{Source, SourceSplit}

/** `spark.readStream.format("sluice")`: builds the source from the options, then the stream. */
final class SluiceProvider extends TableProvider with DataSourceRegister {
  override def shortName(): String = sluice.Sluice.Format

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    val (streamOptions, source) = StreamOptions.parse(options.asCaseSensitiveMap().asScala.toMap)
    streamOptions.outputSchema(source)
  }

  override def getTable(schema: StructType, partitioning: Array[Transform], properties: util.Map[String, String]): Table = {
    val (streamOptions, source) = StreamOptions.parse(properties.asScala.toMap)
    new SluiceTable(source, streamOptions)
  }

  override def supportsExternalMetadata(): Boolean = false
}

final class SluiceTable(source: Source[SourceSplit, Any], options: StreamOptions) extends Table with SupportsRead {
  override def name(): String = s"sluice:${options.name.getOrElse(source.sourceType)}"

  /** Whether the source runs compact (`forceTimestampSupport=false`): payload-only rows. */
  def compact: Boolean = !options.timestamps.force

  /** Columns the full layout has and compact rows leave out, `event_time` included. */
  lazy val leftOut: Seq[String] = if (!compact) Nil else {
    // the same source in the full layout: without the layout option at any level (a hybrid's sources carry it too)
    val fullOptions = source.options.filterNot(_._1.toLowerCase.endsWith(sluice.config.RecordLayout.Option.name.toLowerCase))
    val full = sluice.Sources.fromOptions(fullOptions).schema.fieldNames
    (full.filterNot(source.schema.fieldNames.contains) :+ sluice.eventtime.EventTimeSettings.EventTimeColumn).toSeq
  }

  def compactColumnMessage(column: String): String =
    s"Column '$column' does not exist: the Sluice ${source.sourceType} source" +
      s"${options.name.fold("")(n => s" '$n'")} runs in compact mode (forceTimestampSupport=false), whose rows hold " +
      s"only ${source.schema.fieldNames.mkString(", ")}. Set the source option forceTimestampSupport=true (or the " +
      s"Spark setting ${TimestampSupport.ForceConf}=true) to read event_time, timestamps and provenance."
  override def schema(): StructType = options.outputSchema(source)
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.MICRO_BATCH_READ)
  override def newScanBuilder(ignored: CaseInsensitiveStringMap): ScanBuilder = () => new SluiceScan(source, options)
}

final class SluiceScan(source: Source[SourceSplit, Any], options: StreamOptions) extends Scan {
  override def readSchema(): StructType = options.outputSchema(source)
  override def description(): String = s"Sluice ${source.sourceType} source${options.name.fold("")(n => s" '$n'")}"
  /**
   * Each query gets its own source object, rebuilt from the options: a DataFrame can start several
   * queries, and a source may keep per-query state (a hybrid's sources built at its switches).
   */
  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    val own = sluice.Sources.fromOptions(source.options).asInstanceOf[Source[SourceSplit, Any]]
    new SluiceMicroBatchStream(own, options, checkpointLocation, SparkSession.active)
  }
}

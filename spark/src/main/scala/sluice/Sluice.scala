package sluice

import org.apache.spark.sql.{DataFrame, SparkSession}

import sluice.api.Source
import sluice.eventtime.WatermarkStrategy
import sluice.spark.StreamOptions

/** The Scala entry point: a streaming DataFrame over a Sluice source. */
object Sluice {
  /** The DataSource short name, for `spark.readStream.format("sluice")`. */
  val Format = "sluice"

  /**
   * Reads `source` as a streaming DataFrame. `watermarkStrategy` may be null (no event time);
   * `name` (may be null) names the source in query progress.
   */
  def fromSource(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String): DataFrame =
    fromSource(spark, source, watermarkStrategy, name, Map.empty[String, String])

  /**
   * As above, with read options of the Spark binding (e.g. `maxRecordsPerTrigger`); see
   * docs/options.md.
   */
  def fromSource(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String,
      readOptions: Map[String, String]): DataFrame = {
    val strategyOptions = Option(watermarkStrategy).map(_.options).getOrElse(Map.empty)
    val nameOption = Option(name).map(StreamOptions.Name.name -> _)
    spark.readStream.format(Format)
      .options(source.options ++ strategyOptions ++ nameOption ++ readOptions)
      .load()
  }

  /** For py4j: read options as a Java map. */
  def fromSource(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String,
      readOptions: java.util.Map[String, String]): DataFrame = {
    import scala.jdk.CollectionConverters._
    fromSource(spark, source, watermarkStrategy, name, readOptions.asScala.toMap)
  }

  def fromSource(spark: SparkSession, source: Source[_, _]): DataFrame =
    fromSource(spark, source, null, null)
}

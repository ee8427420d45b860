package sluice

import org.apache.spark.sql.{DataFrame, SparkSession}

import sluice.api.Source
import sluice.eventtime.WatermarkStrategy
import sluice.spark.StreamOptions

/** The Scala entry point: a streaming DataFrame over a Sluice source, or a batch one over a bounded source. */
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
      readOptions: Map[String, String]): DataFrame =
    spark.readStream
      .format(Format)
      .options(optionsOf(source, watermarkStrategy, name, readOptions))
      .load()

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

  /**
   * Reads a bounded `source` whole as a DataFrame (`spark.read`): the rows and schema a streaming
   * read of it would give, the event-time column included under `watermarkStrategy` (may be null). An
   * unbounded source, a hybrid whose later sources are derived at the switch, or a stream-only
   * read option (`maxRecordsPerTrigger`) is refused here, naming the fix; see docs/batch.md.
   */
  def read(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String): DataFrame =
    read(spark, source, watermarkStrategy, name, Map.empty[String, String])

  /** As above, with read options of the Spark binding (e.g. `forceTimestampSupport`). */
  def read(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String,
      readOptions: Map[String, String]): DataFrame =
    spark.read
      .format(Format)
      .options(optionsOf(source, watermarkStrategy, name, readOptions))
      .load()

  /** For py4j: read options as a Java map. */
  def read(
      spark: SparkSession,
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String,
      readOptions: java.util.Map[String, String]): DataFrame = {
    import scala.jdk.CollectionConverters._
    read(spark, source, watermarkStrategy, name, readOptions.asScala.toMap)
  }

  def read(spark: SparkSession, source: Source[_, _]): DataFrame =
    read(spark, source, null, null)

  /** The options of `format("sluice")` for a source, its strategy, its name and read options. */
  private def optionsOf(
      source: Source[_, _],
      watermarkStrategy: WatermarkStrategy,
      name: String,
      readOptions: Map[String, String]): Map[String, String] = {
    val strategyOptions = Option(watermarkStrategy).map(_.options).getOrElse(Map.empty)
    val nameOption = Option(name).map(StreamOptions.Name.name -> _)
    source.options ++ strategyOptions ++ nameOption ++ readOptions
  }
}

package sluice.spark

import org.apache.spark.sql.SparkSession

import sluice.Sources
import sluice.api.{Source, SourceSplit}
import sluice.config.{ConfigOption, Options}
import sluice.eventtime.EventTimeSettings

/**
 * Options of the Spark binding itself (as opposed to a source's own options). The provider
 * splits the options it receives into these and the source's.
 */
final case class StreamOptions(
    name: Option[String],
    maxRecordsPerTrigger: Option[Long],
    eventTime: EventTimeSettings,
    timestamps: TimestampSupport = TimestampSupport(force = true, None)) {
  /** The rows the stream emits: the source's in its layout, plus `event_time` under a watermark strategy. */
  def outputSchema(source: Source[_, _]): org.apache.spark.sql.types.StructType =
    eventTime.outputSchema(source.schema(timestamps.layout), s"Sluice ${source.sourceType} source")
}

object StreamOptions {
  val Name: ConfigOption[String] = ConfigOption.string("name", "the source's name in query progress")
  val MaxRecordsPerTrigger: ConfigOption[Long] = ConfigOption.long("maxRecordsPerTrigger",
    "upper bound on the records one micro-batch reads, split across splits by backlog")
    .withCheck("an integer >= 1")(_ >= 1)

  val all: Seq[ConfigOption[_]] = Seq(Name, MaxRecordsPerTrigger) ++ TimestampSupport.all ++ EventTimeSettings.all

  /**
   * Separates the binding's options from the source's (which include `source`); Spark settings
   * give the defaults of `forceTimestampSupport` and latency tracking.
   */
  def split(
      options: Map[String, String],
      sparkConf: String => Option[String] = activeConf): (StreamOptions, Map[String, String]) = {
    val names = all.map(_.name.toLowerCase).toSet
    val (mine, sourceOptions) = options.partition { case (k, _) => names.contains(k.toLowerCase) }
    val o = new Options(mine, all, "Sluice")
    val eventTime = EventTimeSettings.parse(o, "Sluice")
    val timestamps = TimestampSupport.resolve(o, sparkConf, eventTime)
    (StreamOptions(o.get(Name), o.get(MaxRecordsPerTrigger), eventTime, timestamps), sourceOptions)
  }

  private def activeConf(key: String): Option[String] = SparkSession.getActiveSession.flatMap(_.conf.getOption(key))

  def parse(options: Map[String, String]): (StreamOptions, Source[SourceSplit, Any]) = {
    val (stream, sourceOptions) = split(options)
    val source = Sources.fromOptions(sourceOptions).asInstanceOf[Source[SourceSplit, Any]]
    stream.outputSchema(source) // checks the layout and the timestamp column now, when the source is built
    (stream, source)
  }
}

package sluice.spark

import sluice.Sources
import sluice.api.{Source, SourceSplit}
import sluice.config.{ConfigOption, Options}

/**
 * Options of the Spark binding itself (as opposed to a source's own options). The provider
 * splits the options it receives into these and the source's.
 */
final case class StreamOptions(name: Option[String], maxRecordsPerTrigger: Option[Long])

object StreamOptions {
  val Name: ConfigOption[String] = ConfigOption.string("name", "the source's name in query progress")
  val MaxRecordsPerTrigger: ConfigOption[Long] = ConfigOption.long("maxRecordsPerTrigger",
    "upper bound on the records one micro-batch reads, split across splits by backlog")
    .withCheck("an integer >= 1")(_ >= 1)
  val WatermarkKind: ConfigOption[String] = ConfigOption.string("watermark.kind",
    "the watermark strategy").withCheck("none")(_ == "none")

  val all: Seq[ConfigOption[_]] = Seq(Name, MaxRecordsPerTrigger, WatermarkKind)

  /** Separates the binding's options from the source's (which include `source`). */
  def split(options: Map[String, String]): (StreamOptions, Map[String, String]) = {
    val names = all.map(_.name.toLowerCase).toSet
    val (mine, sourceOptions) = options.partition { case (k, _) => names.contains(k.toLowerCase) }
    val o = new Options(mine, all, "Sluice")
    (StreamOptions(o.get(Name), o.get(MaxRecordsPerTrigger)), sourceOptions)
  }

  def parse(options: Map[String, String]): (StreamOptions, Source[SourceSplit, Any]) = {
    val (stream, sourceOptions) = split(options)
    (stream, Sources.fromOptions(sourceOptions).asInstanceOf[Source[SourceSplit, Any]])
  }
}

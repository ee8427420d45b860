package sluice.spark

import org.apache.spark.sql.SparkSession

import sluice.Sources
import sluice.api.{Source, SourceSplit}
import sluice.config.{ConfigOption, Options, RecordLayout}
import sluice.errors.SluiceError
import sluice.eventtime.EventTimeSettings

/**
 * Options of the Spark binding itself (as opposed to a source's own options). The provider
 * splits the options it receives into these and the source's.
 */
final case class StreamOptions(
    name: Option[String],
    maxRecordsPerTrigger: Option[Long],
    eventTime: EventTimeSettings,
    /** Full or compact records, from `forceTimestampSupport` (`TimestampSupport.layout`). */
    layout: RecordLayout = RecordLayout.Full,
    /** How often readers take a latency marker; None: off. */
    latencyTrackingIntervalMs: Option[Long] = None,
    /** Fewer records than this available: no batch, until `maxTriggerDelayMs` has passed since the last. */
    minRecordsPerTrigger: Option[Long] = None,
    maxTriggerDelayMs: Long = StreamOptions.DefaultMaxTriggerDelayMs,
    /** Micro-batches: at least this many tasks, dividing ranges of divisible splits (Spark's Kafka `minPartitions`). */
    minPartitions: Option[Int] = None) {

  /**
   * The rows the stream emits: the source's in its layout, plus the event-time column
   * (`watermark.eventTimeColumn`, default `event_time`) under a watermark strategy.
   */
  def outputSchema(source: Source[_, _]): org.apache.spark.sql.types.StructType =
    eventTime.outputSchema(source.schema(layout), s"Sluice ${source.sourceType} source")
}

object StreamOptions {
  val Name: ConfigOption[String] =
    ConfigOption.string("name", "the source's name in query progress")
  val MaxRecordsPerTrigger: ConfigOption[Long] = ConfigOption
    .long(
      "maxRecordsPerTrigger",
      "upper bound on the records one micro-batch reads, split across splits by backlog")
    .atLeast(1)

  /** Spark's Kafka source calls it so: the same bound, under that name. */
  val MaxOffsetsPerTrigger: ConfigOption[Long] = ConfigOption
    .long(
      "maxOffsetsPerTrigger",
      "Spark's Kafka source's name of maxRecordsPerTrigger (give one of them)")
    .atLeast(1)
  val MinRecordsPerTrigger: ConfigOption[Long] = ConfigOption
    .long(
      "minRecordsPerTrigger",
      "micro-batches: while fewer records than this are available, no batch runs, until maxTriggerDelay has " +
        "passed since the last batch (as Spark's Kafka minOffsetsPerTrigger; not under Trigger.AvailableNow, which " +
        "reads everything it found)")
    .atLeast(1)
  val MinOffsetsPerTrigger: ConfigOption[Long] = ConfigOption
    .long(
      "minOffsetsPerTrigger",
      "Spark's Kafka source's name of minRecordsPerTrigger (give one of them)")
    .atLeast(1)
  val DefaultMaxTriggerDelayMs: Long = 15 * 60 * 1000L
  val MaxTriggerDelay: ConfigOption[Long] = ConfigOption[Long](
    "maxTriggerDelay",
    "with minRecordsPerTrigger: the longest a batch waits for that many records (Spark's default, 15m); " +
      "without it, nothing",
    None,
    "a duration: milliseconds, or a number with a unit (500ms, 10s, 15m)",
    TimestampSupport.parseDuration)

  val MinPartitions: ConfigOption[Int] = ConfigOption
    .int(
      "minPartitions",
      "micro-batches: with fewer split ranges than this, the ranges of Kafka partitions (and generator splits) are " +
        "divided so that about this many tasks read them, as Spark's Kafka minPartitions; file ranges are not " +
        "divided; not in real-time mode or continuous processing, whose readers own their splits")
    .atLeast(1)

  val all: Seq[ConfigOption[_]] = Seq(
    Name,
    MaxRecordsPerTrigger,
    MaxOffsetsPerTrigger,
    MinRecordsPerTrigger,
    MinOffsetsPerTrigger,
    MaxTriggerDelay,
    MinPartitions) ++ TimestampSupport.all ++ EventTimeSettings.all

  /** One value from a Sluice name and its Spark alias; both given must agree. */
  private def eitherOf(
      o: Options,
      name: ConfigOption[Long],
      alias: ConfigOption[Long]): Option[Long] =
    (o.get(name), o.get(alias)) match {
      case (Some(a), Some(b)) if a != b =>
        throw SluiceError.config(
          s"Sluice: options '${name.name}' ($a) and '${alias.name}' ($b) are one setting under two names; give one.")
      case (a, b) => a.orElse(b)
    }

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
    // lazy: a bad forceTimestampSupport setting is reported before a bad latency tracking one
    lazy val latencyMs = TimestampSupport.latencyTrackingInterval(o, sparkConf)
    val layout = TimestampSupport.layout(o, sparkConf, eventTime, latencyMs)
    val min = eitherOf(o, MinRecordsPerTrigger, MinOffsetsPerTrigger)
    val max = eitherOf(o, MaxRecordsPerTrigger, MaxOffsetsPerTrigger)
    // maxTriggerDelay without a minimum means nothing, and Spark takes it so: a query moves over unchanged
    for (lo <- min; hi <- max if lo > hi) {
      throw SluiceError.config(s"Sluice: the minimum records per trigger ($lo) is higher than the " +
        s"maximum ($hi), as Spark's Kafka source refuses too; lower '${MinRecordsPerTrigger.name}' " +
        s"('${MinOffsetsPerTrigger.name}') or raise '${MaxRecordsPerTrigger.name}' ('${MaxOffsetsPerTrigger.name}').")
    }
    (
      StreamOptions(
        o.get(Name),
        max,
        eventTime,
        layout,
        latencyMs,
        min,
        o.get(MaxTriggerDelay).getOrElse(DefaultMaxTriggerDelayMs),
        o.get(MinPartitions)),
      sourceOptions)
  }

  private def activeConf(key: String): Option[String] =
    SparkSession.getActiveSession.flatMap(_.conf.getOption(key))

  def parse(options: Map[String, String]): (StreamOptions, Source[SourceSplit, Any]) = {
    val (stream, sourceOptions) = split(options)
    val source = Sources.fromOptions(sourceOptions).asInstanceOf[Source[SourceSplit, Any]]
    stream.outputSchema(
      source
    ) // checks the layout and the timestamp column now, when the source is built
    (stream, source)
  }
}

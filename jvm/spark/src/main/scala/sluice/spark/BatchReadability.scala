package sluice.spark

import sluice.api.{Boundedness, Source}
import sluice.connector.file.FileSource
import sluice.connector.file.parquet.ParquetSource
import sluice.connector.generator.GeneratorSource
import sluice.connector.kafka.KafkaSource
import sluice.hybrid.HybridSource
import sluice.hybrid.HybridSource.{Fixed, FromFactory, StartAtPreviousEnd}

/**
 * Whether a source, with the binding's options, can be read as a batch (`spark.read`), and if
 * not, why and what would change that. Here rather than in each connector because the advice
 * names the connectors' own options, and the binding is what knows them all.
 */
object BatchReadability {

  /**
   * Why `spark.read` cannot read `source` with these options; None when it can. `optionNames` are
   * the options as given, to tell a read option from a session-wide Spark setting (not refused).
   */
  def refusal(
      source: Source[_, _],
      options: StreamOptions,
      optionNames: Set[String]): Option[String] =
    unboundedFix(source)
      .map(fix =>
        s"Sluice: a batch read (spark.read) needs a bounded source, but this " +
          s"${source.sourceType} source is unbounded: $fix. To read it as it grows, use spark.readStream.")
      .orElse(derivedMember(source))
      .orElse(streamingOnly(options, optionNames))

  /** What would make `source` bounded; None when it is. */
  private def unboundedFix(source: Source[_, _]): Option[String] =
    if (source.boundedness == Boundedness.Bounded) None
    else
      Some(source match {
        case _: KafkaSource =>
          "give the Kafka source stopping offsets (endingOffsets / stoppingOffsets, e.g. endingOffsets=latest, " +
            "endingTimestamp or endingOffsetsByTimestamp)"
        case f: FileSource =>
          s"it lists its paths again every ${f.config.monitorIntervalMs.getOrElse(0L)} ms for new files; unset " +
            "monitorIntervalMs to read the files there are when the read is planned"
        case p: ParquetSource =>
          s"it lists its paths again every ${p.config.monitorIntervalMs.getOrElse(0L)} ms for new files; unset " +
            "monitorIntervalMs to read the files there are when the read is planned"
        case _: GeneratorSource =>
          "set recordsPerSplit (records in each split) to make it bounded"
        case h: HybridSource => s"its last source is unbounded: ${memberFix(h.entries.last)}"
        case other => s"give the ${other.sourceType} source a stopping position"
      })

  private def memberFix(entry: HybridSource.Entry): String = entry match {
    case Fixed(s) => unboundedFix(s).getOrElse("it is unbounded")
    case StartAtPreviousEnd(base, _) => unboundedFix(base).getOrElse("it is unbounded")
    case _: FromFactory => "it is built by a factory declared unbounded"
  }

  /**
   * A member built at the switch from the previous member's end state: its splits cannot be
   * planned before the previous member was read, and a batch read plans all splits at once.
   */
  private def derivedMember(source: Source[_, _]): Option[String] = source match {
    case h: HybridSource =>
      h.entries.zipWithIndex
        .collectFirst {
          case (_: FromFactory, i) => (i, "is built by a factory at the switch")
          case (StartAtPreviousEnd(_, marginMs), i) =>
            (i, s"starts at the previous source's last event time minus $marginMs ms")
        }
        .map { case (i, what) =>
          "Sluice: a batch read cannot derive the next source from where the previous one ended; source " +
            s"$i of this hybrid $what. Give it as a fixed source with its own start positions, or read the " +
            "hybrid with spark.readStream and Trigger.AvailableNow, which reads it to its end and stops."
        }
    case _ => None
  }

  /** Options of the binding that only a stream has a use for: refused rather than silently ignored. */
  private def streamingOnly(options: StreamOptions, optionNames: Set[String]): Option[String] = {
    def explicit(name: String) = optionNames.exists(_.equalsIgnoreCase(name))
    options.maxRecordsPerTrigger
      .map(_ =>
        s"Sluice: option ${StreamOptions.MaxRecordsPerTrigger.name} bounds the " +
          "records of one micro-batch and means nothing in a batch read (spark.read), which reads every split to its " +
          "stop in one job; remove it, or read with spark.readStream.")
      .orElse(Option.when(explicit(TimestampSupport.LatencyTrackingInterval.name) &&
        options.latencyTrackingIntervalMs.isDefined) {
        s"Sluice: option ${TimestampSupport.LatencyTrackingInterval.name} reports latency markers in streaming " +
          "query progress, which a batch read (spark.read) does not have; remove it (or set it to 0), or read with " +
          "spark.readStream."
      })
  }
}

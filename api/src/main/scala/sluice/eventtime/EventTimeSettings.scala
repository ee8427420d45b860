package sluice.eventtime

import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.config.{ConfigOption, Options}

/** Alignment of a source with the other members of its group (FLIP-182/217). */
final case class AlignmentSettings(
    group: String,
    maxDriftMs: Long,
    updateIntervalMs: Long,
    allowUnalignedSourceSplits: Option[Boolean])

/**
 * A source's event-time configuration, parsed from the `watermark.*` options a
 * `WatermarkStrategy` produces. `None` as kind means no event time at all. `eventTimeColumn` is
 * the name of the column the strategy adds to every row (option `watermark.eventTimeColumn`).
 */
final case class EventTimeSettings(
    kind: String,
    maxOutOfOrdernessMs: Long,
    timestampColumn: Option[String],
    idleTimeoutMs: Option[Long],
    alignment: Option[AlignmentSettings],
    eventTimeColumn: String = EventTimeSettings.DefaultEventTimeColumn) {

  def enabled: Boolean = kind != EventTimeSettings.Kind.None

  /** A split's watermark for its largest event time, saturating at `Long.MinValue`. */
  def watermarkFor(maxEventTimeMs: Long): Long =
    if (maxEventTimeMs < Long.MinValue + maxOutOfOrdernessMs) Long.MinValue else maxEventTimeMs - maxOutOfOrdernessMs

  /**
   * Checks the timestamp column against the source's rows; returns the rows' schema with the
   * event-time column (`eventTimeColumn`) added last.
   */
  def outputSchema(sourceSchema: StructType, context: String): StructType = {
    if (!enabled) return sourceSchema
    timestampColumn.foreach { c =>
      val field = sourceSchema.find(_.name == c).getOrElse(throw new IllegalArgumentException(
        s"$context: the watermark strategy's timestamp column '$c' (option '${EventTimeSettings.TimestampColumn.name}') " +
          "is not a column of the source " +
          s"(columns: ${sourceSchema.fieldNames.mkString(", ")})."))
      if (field.dataType != TimestampType && field.dataType != LongType) {
        throw new IllegalArgumentException(s"$context: the timestamp column '$c' (option '${EventTimeSettings.TimestampColumn.name}') is " +
          s"${field.dataType.simpleString}; " +
          "it must be a timestamp or a long (epoch milliseconds).")
      }
    }
    sourceSchema.fieldNames.find(_.equalsIgnoreCase(eventTimeColumn)).foreach { existing =>
      throw new IllegalArgumentException(s"$context: the source already has a column named '$existing', and the " +
        s"watermark strategy adds its event-time column under that name (option " +
        s"'${EventTimeSettings.EventTimeColumn.name}' = '$eventTimeColumn'); choose another name with " +
        s"${EventTimeSettings.EventTimeColumn.name} (WatermarkStrategy.withEventTimeColumn / with_event_time_column).")
    }
    sourceSchema.add(eventTimeColumn, TimestampType, nullable = true)
  }
}

object EventTimeSettings {
  /** The default name of the column a watermark strategy adds to every row: the event time Sluice's watermarks use. */
  val DefaultEventTimeColumn = "event_time"

  /** Spark SQL setting: the default for `watermark.alignment.allowUnalignedSourceSplits`. */
  val AllowUnalignedSourceSplitsConf = "spark.sluice.watermarkAlignment.allowUnalignedSourceSplits"

  object Kind {
    val None = "none"
    val BoundedOutOfOrderness = "boundedOutOfOrderness"
    val Monotonous = "monotonous"
    val all: Seq[String] = Seq(None, BoundedOutOfOrderness, Monotonous)
  }

  val KindOption: ConfigOption[String] = ConfigOption.string("watermark.kind",
    "how watermarks are derived: none, boundedOutOfOrderness (needs watermark.maxOutOfOrdernessMs) or monotonous")
    .withCheck(Kind.all.mkString(", "))(Kind.all.contains).withDefault(Kind.None)
  val MaxOutOfOrdernessMs: ConfigOption[Long] = ConfigOption.long("watermark.maxOutOfOrdernessMs",
    "how far event time may go back within a split; a split's watermark is its largest event time minus this")
    .withCheck("an integer >= 0")(_ >= 0)
  val TimestampColumn: ConfigOption[String] = ConfigOption.string("watermark.timestampColumn",
    "the column holding event time (timestamp, or long epoch ms); unset: the connector's record time " +
      "(Kafka record timestamp, the file source's timestampColumn, the generator's event time)")
  val EventTimeColumn: ConfigOption[String] = ConfigOption.string("watermark.eventTimeColumn",
    "the name of the column the watermark strategy adds to every row (the event time to hand to Spark's " +
      "withWatermark); must not be a column the source already has")
    .withCheck("a non-empty name")(_.trim.nonEmpty).withDefault(DefaultEventTimeColumn)
  val IdleTimeoutMs: ConfigOption[Long] = ConfigOption.long("watermark.idleTimeoutMs",
    "a split with nothing read for this long turns idle and stops holding back alignment; unset: never idle")
    .withCheck("an integer >= 1")(_ >= 1)
  val AlignmentGroup: ConfigOption[String] = ConfigOption.string("watermark.alignment.group",
    "sources of one query naming the same group keep their watermarks within maxDriftMs of each other")
    .withCheck("a non-empty name")(_.trim.nonEmpty)
  val AlignmentMaxDriftMs: ConfigOption[Long] = ConfigOption.long("watermark.alignment.maxDriftMs",
    "how far a split's watermark may run ahead of the slowest split of the group")
    .withCheck("an integer >= 0")(_ >= 0)
  val AlignmentUpdateIntervalMs: ConfigOption[Long] = ConfigOption.long("watermark.alignment.updateIntervalMs",
    "in real-time mode, how often running readers report their splits' watermarks to the driver and get the group's limit back; micro-batches re-evaluate the limit every batch")
    .withCheck("an integer >= 1")(_ >= 1).withDefault(1000L)
  val AllowUnalignedSourceSplits: ConfigOption[Boolean] = ConfigOption.boolean(
    "watermark.alignment.allowUnalignedSourceSplits",
    s"let a reader that cannot pause splits align as a whole only; default: the Spark setting $AllowUnalignedSourceSplitsConf, else false")

  val all: Seq[ConfigOption[_]] = Seq(KindOption, MaxOutOfOrdernessMs, TimestampColumn, EventTimeColumn, IdleTimeoutMs,
    AlignmentGroup, AlignmentMaxDriftMs, AlignmentUpdateIntervalMs, AllowUnalignedSourceSplits)

  def parse(o: Options, context: String): EventTimeSettings = {
    val kind = o.get(KindOption).get
    def fail(msg: String) = throw new IllegalArgumentException(s"$context: $msg")
    val ooo = (kind, o.get(MaxOutOfOrdernessMs)) match {
      case (Kind.BoundedOutOfOrderness, Some(ms)) => ms
      case (Kind.BoundedOutOfOrderness, None) =>
        fail(s"watermark.kind=boundedOutOfOrderness needs '${MaxOutOfOrdernessMs.name}'.")
      case (_, Some(_)) => fail(s"'${MaxOutOfOrdernessMs.name}' applies only to watermark.kind=boundedOutOfOrderness.")
      case (_, None) => 0L
    }
    val alignment = (o.get(AlignmentGroup), o.get(AlignmentMaxDriftMs)) match {
      case (Some(group), Some(drift)) =>
        Some(AlignmentSettings(group, drift, o.get(AlignmentUpdateIntervalMs).get, o.get(AllowUnalignedSourceSplits)))
      case (None, None) =>
        if (o.contains(AllowUnalignedSourceSplits) || o.contains(AlignmentUpdateIntervalMs)) {
          fail(s"'${AllowUnalignedSourceSplits.name}' and '${AlignmentUpdateIntervalMs.name}' need watermark alignment " +
            s"('${AlignmentGroup.name}' and '${AlignmentMaxDriftMs.name}').")
        }
        None
      case _ => fail(s"watermark alignment needs both '${AlignmentGroup.name}' and '${AlignmentMaxDriftMs.name}'.")
    }
    val settings = EventTimeSettings(kind, ooo, o.get(TimestampColumn), o.get(IdleTimeoutMs), alignment,
      o.get(EventTimeColumn).get)
    if (!settings.enabled) {
      val needsTime = Seq(TimestampColumn, EventTimeColumn, IdleTimeoutMs, AlignmentGroup).filter(o.contains)
      if (needsTime.nonEmpty) {
        fail(s"${needsTime.map(n => s"'${n.name}'").mkString(", ")} need event time, but the watermark strategy is " +
          "noWatermarks; use forBoundedOutOfOrderness(...) or forMonotonousTimestamps().")
      }
    }
    settings
  }
}

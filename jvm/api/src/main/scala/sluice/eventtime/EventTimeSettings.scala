package sluice.eventtime

import scala.util.Try

import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.config.{AllowedValues, ConfigOption, Options}
import sluice.errors.SluiceError

/**
 * How far a split's watermark may run ahead of the slowest split of its alignment group: a fixed
 * number of milliseconds, or `auto` — the largest drift that cannot make Spark drop a lagging
 * split's records, taken from the query that reads the source when it starts.
 */
sealed trait MaxDrift

object MaxDrift {

  /** A drift given in milliseconds. */
  final case class Fixed(ms: Long) extends MaxDrift {
    override def toString: String = ms.toString
  }

  /** `auto`, not resolved yet: the query's `withWatermark` delay minus the strategy's out-of-orderness, minus 1 ms. */
  case object Auto extends MaxDrift {
    override def toString: String = "auto"
  }

  /** `auto` as the query that reads the source resolved it when it started. */
  final case class FromWatermark(watermarkDelayMs: Long, outOfOrdernessMs: Long)
      extends MaxDrift {
    require(
      watermarkDelayMs >= outOfOrdernessMs,
      s"delay $watermarkDelayMs ms < out-of-orderness $outOfOrdernessMs ms")
    // one millisecond under: Spark drops a row whose event time equals its watermark, and the
    // lagging split's next record may lie exactly at its own watermark
    def ms: Long = math.max(0L, watermarkDelayMs - outOfOrdernessMs - 1)
    override def toString: String = ms.toString
  }

  /** The option value that asks for `auto`. */
  val AutoValue = "auto"

  def parse(raw: String): Option[MaxDrift] =
    if (raw.equalsIgnoreCase(AutoValue)) Some(Auto) else Try(raw.toLong).toOption.map(Fixed)
}

/** Alignment of a source with the other members of its group (FLIP-182/217). */
final case class AlignmentSettings(
    group: String,
    maxDrift: MaxDrift,
    updateIntervalMs: Long,
    allowUnalignedSourceSplits: Option[Boolean]) {

  /** Whether the drift is `auto` and still waits for the query's watermark delay. */
  def driftUnresolved: Boolean = maxDrift == MaxDrift.Auto

  /** The drift in milliseconds; `auto` must have been resolved when the query started. */
  def maxDriftMs: Long = maxDrift match {
    case MaxDrift.Fixed(ms) => ms
    case r: MaxDrift.FromWatermark => r.ms
    case MaxDrift.Auto =>
      throw new IllegalStateException(
        s"watermark alignment group '$group': maxDrift 'auto' was not resolved from the query's withWatermark delay.")
  }
}

object AlignmentSettings {
  def apply(
      group: String,
      maxDriftMs: Long,
      updateIntervalMs: Long,
      allowUnalignedSourceSplits: Option[Boolean]): AlignmentSettings =
    AlignmentSettings(
      group,
      MaxDrift.Fixed(maxDriftMs),
      updateIntervalMs,
      allowUnalignedSourceSplits)
}

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

  /** Whether alignment's drift is `auto` and waits for the query's watermark delay. */
  def driftUnresolved: Boolean = alignment.exists(_.driftUnresolved)

  /**
   * `auto` drift resolved from the `withWatermark` delay of the query reading the source. Spark
   * drops a row once its event time is at or below (max event time seen - delay); alignment keeps
   * every split's largest event time within `maxDrift + outOfOrderness` of the slowest split's
   * watermark, and that split's records lie at or above its watermark. So `delay -
   * outOfOrderness - 1` is the largest drift with which no lagging split's record falls at or
   * below Spark's watermark.
   */
  def withDriftFromWatermark(watermarkDelayMs: Long, context: String): EventTimeSettings =
    alignment match {
      case Some(a) if a.driftUnresolved =>
        if (watermarkDelayMs < maxOutOfOrdernessMs) {
          throw SluiceError.config(
            s"$context: maxDrift 'auto' of alignment group '${a.group}' is the " +
              s"withWatermark delay minus the watermark strategy's out-of-orderness, but the delay on '$eventTimeColumn' " +
              s"($watermarkDelayMs ms) is smaller than the out-of-orderness ($maxOutOfOrdernessMs ms): Spark would drop " +
              "records of a split that are within the out-of-orderness even without alignment. Give withWatermark a delay " +
              s"of at least $maxOutOfOrdernessMs ms, or a fixed maxDrift.")
        }
        copy(alignment =
          Some(a.copy(maxDrift = MaxDrift.FromWatermark(watermarkDelayMs, maxOutOfOrdernessMs))))
      case _ => this
    }

  /** A split's watermark for its largest event time, saturating at `Long.MinValue`. */
  def watermarkFor(maxEventTimeMs: Long): Long =
    if (maxEventTimeMs < Long.MinValue + maxOutOfOrdernessMs) Long.MinValue
    else maxEventTimeMs - maxOutOfOrdernessMs

  /**
   * Checks the timestamp column against the source's rows; returns the rows' schema with the
   * event-time column (`eventTimeColumn`) added last.
   */
  def outputSchema(sourceSchema: StructType, context: String): StructType = {
    if (!enabled) return sourceSchema
    timestampColumn.foreach { c =>
      val field = sourceSchema
        .find(_.name == c)
        .getOrElse(throw SluiceError.config(
          s"$context: the watermark strategy's timestamp column '$c' (option '${EventTimeSettings.TimestampColumn.name}') " +
            "is not a column of the source " +
            s"(columns: ${sourceSchema.fieldNames.mkString(", ")})."))
      if (field.dataType != TimestampType && field.dataType != LongType) {
        throw SluiceError.config(
          s"$context: the timestamp column '$c' (option '${EventTimeSettings.TimestampColumn.name}') is " +
            s"${field.dataType.simpleString}; " +
            "it must be a timestamp or a long (epoch milliseconds).")
      }
    }
    sourceSchema.fieldNames.find(_.equalsIgnoreCase(eventTimeColumn)).foreach { existing =>
      throw SluiceError.config(
        s"$context: the source already has a column named '$existing', and the " +
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
  val AllowUnalignedSourceSplitsConf =
    "spark.sluice.watermarkAlignment.allowUnalignedSourceSplits"

  object Kind {
    val None = "none"
    val BoundedOutOfOrderness = "boundedOutOfOrderness"
    val Monotonous = "monotonous"
    val all: Seq[String] = Seq(None, BoundedOutOfOrderness, Monotonous)
  }

  val KindOption: ConfigOption[String] = ConfigOption
    .string(
      "watermark.kind",
      "how watermarks are derived: none, boundedOutOfOrderness (needs watermark.maxOutOfOrdernessMs) or monotonous")
    .oneOf(Kind.all.mkString(", "), Kind.all, ignoreCase = false)
    .withDefault(Kind.None)
  val MaxOutOfOrdernessMs: ConfigOption[Long] = ConfigOption
    .long(
      "watermark.maxOutOfOrdernessMs",
      "how far event time may go back within a split; a split's watermark is its largest event time minus this")
    .atLeast(0)
  val TimestampColumn: ConfigOption[String] = ConfigOption.string(
    "watermark.timestampColumn",
    "the column holding event time (timestamp, or long epoch ms); unset: the connector's record time " +
      "(Kafka record timestamp, the file source's timestampColumn, the generator's event time)")
  val EventTimeColumn: ConfigOption[String] = ConfigOption
    .string(
      "watermark.eventTimeColumn",
      "the name of the column the watermark strategy adds to every row (the event time to hand to Spark's " +
        "withWatermark); must not be a column the source already has")
    .nonBlank("a non-empty name")
    .withDefault(DefaultEventTimeColumn)
  val IdleTimeoutMs: ConfigOption[Long] = ConfigOption
    .long(
      "watermark.idleTimeoutMs",
      "a split with nothing read for this long turns idle and stops holding back alignment; unset: never idle")
    .atLeast(1)
  val AlignmentGroup: ConfigOption[String] = ConfigOption
    .string(
      "watermark.alignment.group",
      "sources of one query naming the same group keep their watermarks within maxDriftMs of each other")
    .nonBlank("a non-empty name")
  val AlignmentMaxDriftMs: ConfigOption[MaxDrift] = ConfigOption[MaxDrift](
    "watermark.alignment.maxDriftMs",
    "how far a split's watermark may run ahead of the slowest split of the group; auto: the withWatermark delay " +
      "of the query that reads the source minus watermark.maxOutOfOrdernessMs (resolved when the query starts; " +
      "needs withWatermark on the event-time column), the largest drift with which Spark drops no record of a " +
      "lagging split",
    None,
    "an integer >= 0, or auto",
    MaxDrift.parse)
    .withCheck("an integer >= 0, or auto") {
      case MaxDrift.Fixed(ms) => ms >= 0
      case _ => true
    }
    .withValues(AllowedValues(min = Some(0), words = Seq(MaxDrift.AutoValue), ignoreCase = true))
  val AlignmentUpdateIntervalMs: ConfigOption[Long] = ConfigOption
    .long(
      "watermark.alignment.updateIntervalMs",
      "in real-time mode, how often running readers report their splits' watermarks to the driver and get the group's limit back; micro-batches re-evaluate the limit every batch")
    .atLeast(1)
    .withDefault(1000L)
  val AllowUnalignedSourceSplits: ConfigOption[Boolean] = ConfigOption.boolean(
    "watermark.alignment.allowUnalignedSourceSplits",
    s"let a reader that cannot pause splits align as a whole only; default: the Spark setting $AllowUnalignedSourceSplitsConf, else false")

  val all: Seq[ConfigOption[_]] = Seq(
    KindOption,
    MaxOutOfOrdernessMs,
    TimestampColumn,
    EventTimeColumn,
    IdleTimeoutMs,
    AlignmentGroup,
    AlignmentMaxDriftMs,
    AlignmentUpdateIntervalMs,
    AllowUnalignedSourceSplits)

  def parse(o: Options, context: String): EventTimeSettings = {
    val kind = o.get(KindOption).get
    def fail(msg: String) = throw SluiceError.config(s"$context: $msg")
    val ooo = (kind, o.get(MaxOutOfOrdernessMs)) match {
      case (Kind.BoundedOutOfOrderness, Some(ms)) => ms
      case (Kind.BoundedOutOfOrderness, None) =>
        fail(s"watermark.kind=boundedOutOfOrderness needs '${MaxOutOfOrdernessMs.name}'.")
      case (_, Some(_)) =>
        fail(
          s"'${MaxOutOfOrdernessMs.name}' applies only to watermark.kind=boundedOutOfOrderness.")
      case (_, None) => 0L
    }
    val alignment = (o.get(AlignmentGroup), o.get(AlignmentMaxDriftMs)) match {
      case (Some(group), Some(drift)) =>
        Some(
          AlignmentSettings(
            group,
            drift,
            o.get(AlignmentUpdateIntervalMs).get,
            o.get(AllowUnalignedSourceSplits)))
      case (None, None) =>
        if (o.contains(AllowUnalignedSourceSplits) || o.contains(AlignmentUpdateIntervalMs)) {
          fail(
            s"'${AllowUnalignedSourceSplits.name}' and '${AlignmentUpdateIntervalMs.name}' need watermark alignment " +
              s"('${AlignmentGroup.name}' and '${AlignmentMaxDriftMs.name}').")
        }
        None
      case _ =>
        fail(
          s"watermark alignment needs both '${AlignmentGroup.name}' and '${AlignmentMaxDriftMs.name}'.")
    }
    val settings = EventTimeSettings(
      kind,
      ooo,
      o.get(TimestampColumn),
      o.get(IdleTimeoutMs),
      alignment,
      o.get(EventTimeColumn).get)
    if (!settings.enabled) {
      val needsTime =
        Seq(TimestampColumn, EventTimeColumn, IdleTimeoutMs, AlignmentGroup).filter(o.contains)
      if (needsTime.nonEmpty) {
        fail(
          s"${needsTime.map(n => s"'${n.name}'").mkString(", ")} need event time, but the watermark strategy is " +
            "noWatermarks; use forBoundedOutOfOrderness(...) or forMonotonousTimestamps().")
      }
    }
    settings
  }
}

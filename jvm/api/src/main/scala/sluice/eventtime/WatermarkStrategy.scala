package sluice.eventtime

import java.time.Duration

import sluice.eventtime.EventTimeSettings._

/**
 * How a source derives event time and watermarks (Flink's WatermarkStrategy). Like sources, a
 * strategy is a value described by options, so it crosses to Spark's DataSource API (and to
 * Python) unchanged; `EventTimeSettings` parses and checks them.
 *
 * {{{
 * WatermarkStrategy.forBoundedOutOfOrderness(Duration.ofSeconds(30))
 *   .withIdleness(Duration.ofMinutes(1))
 *   .withWatermarkAlignment("orders", Duration.ofMinutes(5))
 * }}}
 *
 * or, with the drift taken from the query's `withWatermark` delay (Python's `max_drift="auto"`):
 * `.withWatermarkAlignmentFromQueryWatermark("orders")`.
 */
final class WatermarkStrategy private (val options: Map[String, String]) extends Serializable {

  /** Event time from this column of the source's rows (TIMESTAMP, or LONG epoch milliseconds). */
  def withTimestampColumn(column: String): WatermarkStrategy = set(TimestampColumn.name -> column)

  /**
   * The name of the column the strategy adds to every row (default `event_time`): choose another
   * when the source already has a column of that name, e.g. a source whose own `event_time` is the
   * timestamp column: `.withTimestampColumn("event_time").withEventTimeColumn("et")`.
   */
  def withEventTimeColumn(name: String): WatermarkStrategy = set(EventTimeColumn.name -> name)

  /** A split that reads nothing for `timeout` (while not paused by alignment) turns idle. */
  def withIdleness(timeout: Duration): WatermarkStrategy = set(
    IdleTimeoutMs.name -> timeout.toMillis.toString)

  /** Keeps this source within `maxDrift` of the other members of `group` (and its splits of each other). */
  def withWatermarkAlignment(group: String, maxDrift: Duration): WatermarkStrategy =
    set(AlignmentGroup.name -> group, AlignmentMaxDriftMs.name -> maxDrift.toMillis.toString)

  /**
   * As above; `updateInterval` is how often a continuously running engine re-evaluates the
   * limit. Micro-batches re-evaluate it at every batch.
   */
  def withWatermarkAlignment(
      group: String,
      maxDrift: Duration,
      updateInterval: Duration): WatermarkStrategy =
    withWatermarkAlignment(group, maxDrift).set(
      AlignmentUpdateIntervalMs.name -> updateInterval.toMillis.toString)

  /**
   * Keeps this source within the largest drift that cannot make Spark drop a lagging split's
   * records: the `withWatermark` delay of the query that reads the source, on its event-time
   * column, minus this strategy's out-of-orderness. Resolved when the query starts (it needs the
   * Sluice extensions, `spark.sql.extensions=sluice.spark.SluiceExtensions`); a query without
   * such a `withWatermark`, or with a smaller delay than the out-of-orderness, fails to start.
   */
  def withWatermarkAlignmentFromQueryWatermark(group: String): WatermarkStrategy =
    set(AlignmentGroup.name -> group, AlignmentMaxDriftMs.name -> MaxDrift.AutoValue)

  /** As above, with the update interval of a continuously running engine. */
  def withWatermarkAlignmentFromQueryWatermark(
      group: String,
      updateInterval: Duration): WatermarkStrategy =
    withWatermarkAlignmentFromQueryWatermark(group).set(
      AlignmentUpdateIntervalMs.name -> updateInterval.toMillis.toString)

  /** Lets a reader that cannot pause splits run with source-level alignment only (FLIP-182). */
  def withAllowUnalignedSourceSplits(allow: Boolean): WatermarkStrategy =
    set(AllowUnalignedSourceSplits.name -> allow.toString)

  private def set(kv: (String, String)*): WatermarkStrategy = new WatermarkStrategy(options ++ kv)

  override def toString: String = s"WatermarkStrategy(${options.toSeq.sorted.mkString(", ")})"
}

object WatermarkStrategy {

  /** No event time: the source emits no watermarks and rows carry no event-time column. */
  def noWatermarks(): WatermarkStrategy = kind(Kind.None)

  /** Watermark = largest event time seen − `maxOutOfOrderness`, per split. */
  def forBoundedOutOfOrderness(maxOutOfOrderness: Duration): WatermarkStrategy =
    kind(Kind.BoundedOutOfOrderness).set(
      MaxOutOfOrdernessMs.name -> maxOutOfOrderness.toMillis.toString)

  /** Event time never decreases within a split: watermark = largest event time seen. */
  def forMonotonousTimestamps(): WatermarkStrategy = kind(Kind.Monotonous)

  /** Rebuilds a strategy from its options (the Python builders' route). */
  def fromJavaOptions(options: java.util.Map[String, String]): WatermarkStrategy = {
    import scala.jdk.CollectionConverters._
    new WatermarkStrategy(options.asScala.toMap)
  }

  private def kind(k: String) = new WatermarkStrategy(Map(KindOption.name -> k))
}

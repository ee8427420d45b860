package sluice.spark

import scala.util.Try

import org.apache.spark.network.util.JavaUtils

import sluice.config.{ConfigOption, Options, RecordLayout}
import sluice.errors.SluiceError
import sluice.eventtime.EventTimeSettings

/**
 * The options that decide whether a source's records carry time: FLIP-371's
 * `forceTimestampSupport`, resolved once into the source's `RecordLayout`, and latency tracking,
 * which needs it. With `forceTimestampSupport=false` and nothing that needs event time, the
 * source emits compact records: readers build payload-only rows and read no record times.
 */
object TimestampSupport {

  /** Spark SQL settings: the defaults of the per-source options below. */
  val ForceConf = "spark.sluice.forceTimestampSupport"
  val LatencyTrackingConf = "spark.sluice.latencyTrackingInterval"

  val Force: ConfigOption[Boolean] = ConfigOption.boolean(
    "forceTimestampSupport",
    s"false: compact records (the payload only, no timestamps or provenance) when no watermark strategy " +
      s"and no latency tracking need time; default: the Spark setting $ForceConf, else true")
  val LatencyTrackingInterval: ConfigOption[Long] = ConfigOption[Long](
    "latencyTrackingInterval",
    s"how often each reader records a latency marker (record arrival to emission), reported in query " +
      s"progress, never as rows; e.g. 1000 or 1s; 0: off; default: the Spark setting $LatencyTrackingConf, else off",
    None,
    "a duration: milliseconds, or a number with a unit (500ms, 1s, 1m); 0 for off",
    parseDuration)

  val all: Seq[ConfigOption[_]] = Seq(Force, LatencyTrackingInterval)

  /** A duration as Spark's settings take it: milliseconds, or a number with a unit. */
  private[spark] def parseDuration(s: String): Option[Long] =
    Try(JavaUtils.timeStringAsMs(s)).toOption.filter(_ >= 0)

  /** The latency tracking interval from the source's options, else the Spark setting; None: off. */
  def latencyTrackingInterval(o: Options, sparkConf: String => Option[String]): Option[Long] =
    o.get(LatencyTrackingInterval)
      .orElse(sparkConf(LatencyTrackingConf).map { v =>
        parseDuration(v.trim).getOrElse(throw ConfigOption
          .invalid("Sluice", LatencyTrackingConf, v, LatencyTrackingInterval.allowed))
      })
      .filter(_ > 0)

  /**
   * The record layout from `forceTimestampSupport` in the source's options, else the Spark
   * setting; refuses compact records together with anything that needs time (`latencyMs`: the
   * resolved latency tracking interval), naming the conflict and the fix.
   */
  def layout(
      o: Options,
      sparkConf: String => Option[String],
      eventTime: EventTimeSettings,
      latencyMs: => Option[Long]): RecordLayout = {
    val (force, forceFrom) = o.get(Force) match {
      case Some(f) => (f, s"the source option ${Force.name}=false")
      case None =>
        val conf = sparkConf(ForceConf).map(_.trim)
        conf.foreach { v =>
          if (!Seq("true", "false").contains(v.toLowerCase))
            throw ConfigOption.invalid("Sluice", ForceConf, v, "true or false")
        }
        (!conf.exists(_.equalsIgnoreCase("false")), s"the Spark setting $ForceConf=false")
    }
    if (!force) {
      def conflict(what: String, why: String, fix: String) = throw SluiceError.config(
        s"Sluice: $forceFrom (compact records, without timestamps) conflicts with $what, which $why. $fix, or set " +
          s"${Force.name}=true.")
      eventTime.alignment.foreach(a =>
        conflict(
          s"watermark alignment (group '${a.group}')",
          "needs each record's event time",
          "Remove the alignment and the watermark strategy"))
      if (eventTime.enabled) {
        conflict(
          s"the watermark strategy (watermark.kind=${eventTime.kind})",
          "needs each record's event time",
          "Use WatermarkStrategy.noWatermarks()")
      }
      latencyMs.foreach(ms =>
        conflict(
          s"latency tracking (${LatencyTrackingInterval.name} = $ms ms)",
          "needs each record's arrival time",
          s"Turn it off (${LatencyTrackingInterval.name}=0)"))
    }
    if (force) RecordLayout.Full else RecordLayout.Compact
  }
}

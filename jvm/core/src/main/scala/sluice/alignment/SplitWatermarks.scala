package sluice.alignment

import sluice.eventtime.EventTimeSettings

/** FLIP-180's watermark status: it concerns watermarks only, never whether records flow. */
sealed abstract class WatermarkStatus(val name: String)
object WatermarkStatus {
  case object Active extends WatermarkStatus("ACTIVE")
  case object Idle extends WatermarkStatus("IDLE")
}

/** What the driver knows of one split's event time at a batch boundary. */
final case class SplitEventTime(
    splitId: String,
    watermark: Option[Long],
    status: WatermarkStatus,
    paused: Boolean,
    finished: Boolean) {

  /**
   * Why the split does not hold the group back or read now: `finished` (read to its stop),
   * `alignment` (paused: at or past the event time the batch reads up to), `idleness` (nothing
   * read or waiting for the idle timeout); None while it reads.
   */
  def reason: Option[String] =
    if (finished) Some("finished")
    else if (paused) Some("alignment")
    else if (status == WatermarkStatus.Idle) Some("idleness")
    else None
}

object SplitEventTime {

  /**
   * `[{"split", "watermarkMs", "status", "paused", "finished", "reason"}]`; a split without a
   * watermark yet has none, one that reads has no reason.
   */
  def json(states: Seq[SplitEventTime]): String = states
    .map { s =>
      val wm = s.watermark.map(w => s""","watermarkMs":$w""").getOrElse("")
      val reason = s.reason.map(r => s""","reason":"$r"""").getOrElse("")
      s"""{"split":${quote(
          s.splitId)}$wm,"status":"${s.status.name}","paused":${s.paused},"finished":${s.finished}$reason}"""
    }
    .mkString("[", ",", "]")

  /** A JSON string literal (split ids are file paths, topic names: any character). */
  private[sluice] def quote(text: String): String = {
    val out = new StringBuilder("\"")
    text.foreach {
      case '"' => out.append("\\\"")
      case '\\' => out.append("\\\\")
      case c if c < ' ' => out.append(f"\\u${c.toInt}%04x")
      case c => out.append(c)
    }
    out.append('"').toString
  }
}

/**
 * The driver's per-split watermark and idleness bookkeeping, updated at every batch planning.
 *
 * Idleness (FLIP-180) at batch granularity, by the rule of `SplitIdleness`: a split is idle once
 * nothing was read from it for the user's timeout and nothing is waiting to be read; new data
 * makes it active again. A split paused by alignment is never idle, and its idleness clock does
 * not run while it is paused (FLINK-35886, FLINK-40093). A finished split is not idle: it holds
 * the maximum watermark.
 */
final class SplitWatermarks(settings: EventTimeSettings, clock: () => Long) {
  private val idleness = new SplitIdleness(settings.idleTimeoutMs)

  /**
   * Records what a split looks like now: how many records were read from it so far and how many
   * positions are waiting to be read. Returns whether it is idle.
   */
  def observe(splitId: String, records: Long, waiting: Long, finished: Boolean): Boolean = {
    val now = clock()
    idleness.track(splitId, now, records)
    idleness.observe(splitId, records, waiting > 0, now)
    !finished && idleness.isIdle(splitId, now)
  }

  /** Marks the splits held back by the batch just planned; un-pausing restarts the idleness clock. */
  def setPaused(paused: Set[String]): Unit = {
    val now = clock()
    idleness.splitIds.foreach(id => idleness.setPaused(id, paused.contains(id), now))
  }

  def isPaused(splitId: String): Boolean = idleness.isPaused(splitId)

  /** A split's watermark from its largest event time. */
  def watermark(maxEventTime: Option[Long]): Option[Long] =
    maxEventTime.map(settings.watermarkFor)
}

package sluice.spark

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

import sluice.alignment._
import sluice.api._
import sluice.eventtime.{AlignmentSettings, EventTimeSettings, SplitEventTime, SplitWatermarks, WatermarkStatus}

/**
 * A source's event time in the driver: per-split watermarks and idleness, and — when the
 * strategy asks for alignment — its membership in the query's alignment group and the planning
 * of each batch's ranges under the group's limit.
 */
final class SourceEventTime(
    settings: EventTimeSettings,
    source: Source[SourceSplit, Any],
    queryKey: String,
    memberId: String,
    allowUnalignedByDefault: Boolean,
    clock: () => Long = () => System.currentTimeMillis()) extends Logging {

  private val watermarks = new SplitWatermarks(settings, clock)
  private val alignment = settings.alignment
  private val group: Option[AlignmentGroup] = alignment.map(a => AlignmentCoordinator.join(queryKey, a.group, memberId))
  private var lastPlan: Option[SourcePlan] = None
  private var lastMode: Option[AlignmentMode] = None
  private var idle = Set.empty[String]
  private var finished = Set.empty[String]
  /** Splits whose reader was asked whether it can pause them, and its answer. */
  private var pausable = Map.empty[String, Boolean]

  /**
   * Plans the ends of a batch. `unaligned` are the ends planned without alignment (the read
   * limit shared by backlog); they are returned unchanged when the source does not align.
   */
  def planBatch(
      splits: Seq[SourceSplit],
      from: Map[String, Long],
      readableEnd: Map[String, Long],
      isFinished: String => Boolean,
      progress: String => SplitProgress,
      budgetRecords: Option[Long],
      positionsPerRecord: Map[String, Double],
      enumerator: SplitEnumerator[SourceSplit, Any],
      unaligned: Map[String, Long]): Map[String, Long] = {
    finished = splits.map(_.splitId).filter(isFinished).toSet
    idle = splits.filter { s =>
      val id = s.splitId
      watermarks.observe(id, progress(id).records, readableEnd(id) - from(id), finished.contains(id))
    }.map(_.splitId).toSet
    (alignment, group) match {
      case (Some(a), Some(g)) =>
        val index = enumerator match {
          case i: SupportsEventTimeIndex[SourceSplit @unchecked] if i.hasEventTimeIndex => Some(i)
          case _ => None
        }
        val ranges = splits.filterNot(s => finished.contains(s.splitId))
          .map(s => SplitRange(s, from(s.splitId), readableEnd(s.splitId)))
        val latest = index.map(_.latestEventTimes(ranges.filterNot(_.isEmpty))).getOrElse(Map.empty)
        // FLIP-182's check first, so that a member waiting for its group fails as early as the others
        val splitsPause = splitsCanPause(ranges.map(_.split), a)
        val mode =
          if (g.othersUnknown(memberId)) AlignmentMode.Hold
          else if (!splitsPause) AlignmentMode.WholeSource
          else if (index.isDefined) AlignmentMode.SplitsByIndex
          else AlignmentMode.SplitsByWatermark
        // Where unread splits start matters without an index, and to the other members; a single
        // source cut by an exact index needs no look-up (a split starting later gets nothing).
        val placeUnread = mode != AlignmentMode.SplitsByIndex || g.hasOtherMembers(memberId)
        val firsts = if (!placeUnread) Map.empty[String, Long]
          else firstEventTimes(enumerator, ranges.filter(r => !r.isEmpty && progress(r.split.splitId).maxEventTime.isEmpty))
        val toPlan = splits.map { s =>
          val id = s.splitId
          SplitToPlan(id, from(id), readableEnd(id), progress(id).maxEventTime, latest.get(id),
            idle.contains(id), finished.contains(id), positionsPerRecord.getOrElse(id, 1.0), firsts.get(id))
        }
        val timeIndex = index.map(i => new TimeIndex {
          override def positionsBefore(t: Long): Map[String, Long] = i.positionsBefore(ranges.filterNot(_.isEmpty), t)
        })
        def nextEventTimes(ids: Seq[String]) =
          firstEventTimes(enumerator, ranges.filter(r => ids.contains(r.split.splitId) && !r.isEmpty))
        val plan = HorizonPlanner.plan(toPlan, settings.watermarkFor, settings.maxOutOfOrdernessMs, a.maxDriftMs,
          g.othersFrontier(memberId), budgetRecords, timeIndex, mode, nextEventTimes)
        // look-ups stay valid while a split stays where it is; forget the ones it moved past
        startTimes.filterInPlace { case ((id, at), _) => plan.ends.get(id).contains(at) }
        g.publish(memberId, plan.frontier)
        watermarks.setPaused(plan.heldBack)
        lastPlan = Some(plan)
        lastMode = Some(mode)
        plan.ends
      case _ => unaligned
    }
  }

  /**
   * The event time of the record at each range's start — where a split not read yet starts, or
   * what a held-back split would read next — asked of the connector once per split and position
   * (a split held back for many batches is not looked up again).
   */
  private def firstEventTimes(enumerator: SplitEnumerator[SourceSplit, Any], ranges: Seq[SplitRange[SourceSplit]]): Map[String, Long] =
    enumerator match {
      case e: SupportsStartEventTime[SourceSplit @unchecked] =>
        val unknown = ranges.filterNot(r => startTimes.contains((r.split.splitId, r.from)))
        if (unknown.nonEmpty) {
          val found = e.firstEventTimes(unknown)
          unknown.foreach(r => startTimes((r.split.splitId, r.from)) = found.get(r.split.splitId))
        }
        ranges.flatMap(r => startTimes((r.split.splitId, r.from)).map(r.split.splitId -> _)).toMap
      case _ => Map.empty
    }
  private val startTimes = scala.collection.mutable.Map[(String, Long), Option[Long]]()

  /**
   * FLIP-182: aligning several splits needs a reader that can pause them. Asks a fresh reader
   * once per new set of splits (a hybrid's next source brings a new reader).
   */
  private def splitsCanPause(unfinished: Seq[SourceSplit], a: AlignmentSettings): Boolean = {
    if (unfinished.size <= 1) return true
    val known = unfinished.flatMap(s => pausable.get(s.splitId))
    val canPause = known.headOption.getOrElse {
      val probe = unfinished.head
      val reader = source.createReader()
      val answer = try {
        reader.pauseOrResumeSplits(Seq(probe), Nil)
        true
      } catch {
        case _: UnsupportedOperationException => false
      } finally {
        try reader.close() catch { case NonFatal(e) => logWarning("closing a probe reader failed", e) }
      }
      pausable += probe.splitId -> answer
      answer
    }
    if (!canPause && !a.allowUnalignedSourceSplits.getOrElse(allowUnalignedByDefault)) {
      throw new UnsupportedOperationException(
        s"This source reader does not support pause or resume splits. The ${source.sourceType} source " +
          s"reads ${unfinished.size} splits with watermark alignment (group '${a.group}'), which needs to pause " +
          s"them. Set the source option '${EventTimeSettings.AllowUnalignedSourceSplits.name}=true' (or the Spark " +
          s"setting ${EventTimeSettings.AllowUnalignedSourceSplitsConf}=true) to align this source as a whole only.")
    }
    canPause
  }

  /**
   * Each split's watermark and status as of the last report. A finished split (read to its stop,
   * or to the end of the current AvailableNow trigger at the last planning) holds the maximum watermark.
   */
  def splitStates(splits: Seq[SourceSplit], progress: String => Option[SplitProgress]): Seq[SplitEventTime] =
    splits.map { s =>
      val id = s.splitId
      val done = finished.contains(id) || s.stopPosition.exists(stop => progress(id).exists(_.position >= stop))
      val wm = if (done) Some(Long.MaxValue) else watermarks.watermark(progress(id).flatMap(_.maxEventTime))
      val status = if (idle.contains(id) && !done) WatermarkStatus.Idle else WatermarkStatus.Active
      SplitEventTime(id, wm, status, watermarks.isPaused(id) && !done, done)
    }

  /** Figures for query progress. */
  def metrics(splits: Seq[SourceSplit], progress: String => Option[SplitProgress]): Map[String, String] = {
    val states = splitStates(splits, progress)
    val constraining = states.filter(s => s.status == WatermarkStatus.Active && !s.finished).flatMap(_.watermark)
    group.foreach(_.publishWatermarks(memberId, constraining))
    val unfinished = states.filterNot(_.finished)
    val sourceStatus =
      if (unfinished.nonEmpty && unfinished.forall(_.status == WatermarkStatus.Idle)) WatermarkStatus.Idle
      else WatermarkStatus.Active
    val base = Map(
      "watermark.status" -> sourceStatus.name,
      "watermark.idleSplits" -> states.count(_.status == WatermarkStatus.Idle).toString,
      "watermark.pausedSplits" -> states.count(_.paused).toString,
      "watermark.splits" -> SourceEventTime.splitsJson(states)) ++
      states.filterNot(_.finished).flatMap(_.watermark).minOption.map("watermarkMs" -> _.toString) ++
      (if (constraining.isEmpty) None else Some("watermark.spreadMs" -> (constraining.max - constraining.min).toString))
    val aligned = for (a <- alignment; g <- group) yield Map(
      "alignment.group" -> a.group,
      "alignment.maxDriftMs" -> a.maxDriftMs.toString,
      "alignment.mode" -> lastMode.map(_.toString).getOrElse("")) ++
      lastPlan.flatMap(_.limit).map("alignment.maxAllowedWatermarkMs" -> _.toString) ++
      lastPlan.flatMap(_.horizon).map("alignment.horizonMs" -> _.toString) ++
      g.spread.map("alignment.groupSpreadMs" -> _.toString)
    base ++ aligned.getOrElse(Map.empty)
  }

  def close(): Unit = alignment.foreach(a => AlignmentCoordinator.leave(queryKey, a.group, memberId))
}

object SourceEventTime {
  private val Mapper = new com.fasterxml.jackson.databind.ObjectMapper()

  /** `[{"split", "watermarkMs", "status", "paused", "finished"}]`; a split without a watermark yet has none. */
  private[spark] def splitsJson(states: Seq[SplitEventTime]): String = {
    val array = Mapper.createArrayNode()
    states.foreach { s =>
      val node = array.addObject()
      node.put("split", s.splitId)
      s.watermark.foreach(node.put("watermarkMs", _))
      node.put("status", s.status.name)
      node.put("paused", s.paused)
      node.put("finished", s.finished)
    }
    Mapper.writeValueAsString(array)
  }
}

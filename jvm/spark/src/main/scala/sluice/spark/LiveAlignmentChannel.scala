package sluice.spark

import scala.concurrent.Future
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success}

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.internal.Logging
import org.apache.spark.sluice.DriverChannel

import sluice.alignment.{LiveAlignment, LiveDecision, LiveReport, LiveSplitGate, LiveSplitState}

/** Who a source is in its live alignment group; travels to the readers with the reader factory. */
final case class LiveAlignmentMember(
    queryKey: String,
    group: String,
    memberId: String,
    maxDriftMs: Long,
    updateIntervalMs: Long)

/**
 * Live alignment over Spark's driver RPC (real-time mode): readers report their splits'
 * watermarks every `updateIntervalMs`, the driver's `LiveAlignment` answers with the group's
 * maximum allowed watermark. Reports and answers travel as JSON text (see `DriverChannel`).
 */
object LiveAlignmentChannel extends Logging {
  val EndpointName = "sluice-live-alignment"
  private val Mapper = new ObjectMapper()

  /** The driver's coordinator, shared by every query of this driver (groups are per query). */
  val coordinator = new LiveAlignment()

  /** On the driver, before readers start: serves reports. */
  def serve(): Unit = DriverChannel.serve(EndpointName) { request =>
    val (report, updateIntervalMs) = decodeReport(request)
    encodeDecision(coordinator.report(report, expiryMs(updateIntervalMs)))
  }

  /**
   * A split not reported for this long leaves the group's minimum: a few missed updates are
   * tolerated (a slow task, a long GC), a task that ended or died no longer holds the others.
   */
  def expiryMs(updateIntervalMs: Long): Long = math.max(5 * updateIntervalMs, 5000L)

  /** On the driver, when an open batch is planned: when each of the member's splits last read a record. */
  def lastActive(member: LiveAlignmentMember): Map[String, Long] =
    coordinator.lastActive(member.queryKey, member.group, member.memberId)

  /**
   * On the driver, when an open batch is planned: records where the member's splits stand, and
   * returns the group's limit for its readers to start with.
   */
  def seed(member: LiveAlignmentMember, splits: Seq[LiveSplitState]): Option[Long] =
    coordinator
      .seed(
        LiveReport(member.queryKey, member.group, member.memberId, member.maxDriftMs, splits),
        expiryMs(member.updateIntervalMs))
      .maxAllowedWatermark

  /** What query progress shows of a member's group while its readers run. */
  def metrics(member: LiveAlignmentMember): Map[String, String] = {
    val states = coordinator.states(member.queryKey, member.group)
    val limit = LiveAlignment.limitOf(states.map(_._2), member.maxDriftMs)
    val own = states.collect { case (m, s) if m == member.memberId => s }
    Map(LiveAlignmentMetrics.LiveSplits -> own.map(json).mkString("[", ",", "]")) ++
      limit.map(l => LiveAlignmentMetrics.LiveMaxAllowedWatermarkMs -> l.toString) ++
      coordinator
        .maxObservedSpread(member.queryKey, member.group)
        .map(s => LiveAlignmentMetrics.LiveMaxObservedDriftMs -> s.toString)
  }

  private def json(s: LiveSplitState): String = {
    val node = Mapper.createObjectNode()
    node.put("split", s.splitId)
    s.watermark.foreach(node.put("watermarkMs", _))
    node.put("idle", s.idle)
    node.put("paused", s.paused)
    node.put("finished", s.finished)
    s.lastActiveMs.foreach(node.put("lastActiveMs", _))
    Mapper.writeValueAsString(node)
  }

  private[spark] def encodeReport(r: LiveReport, updateIntervalMs: Long): String = {
    val root = Mapper.createObjectNode()
    root.put("query", r.queryKey)
    root.put("group", r.group)
    root.put("member", r.memberId)
    root.put("maxDriftMs", r.maxDriftMs)
    root.put("updateIntervalMs", updateIntervalMs)
    val splits = root.putArray("splits")
    r.splits.foreach(s => splits.add(Mapper.readTree(json(s))))
    Mapper.writeValueAsString(root)
  }

  private[spark] def decodeReport(text: String): (LiveReport, Long) = {
    val root = Mapper.readTree(text)
    val splits = root
      .get("splits")
      .elements()
      .asScala
      .map { n =>
        LiveSplitState(
          n.get("split").asText,
          Option(n.get("watermarkMs")).map(_.asLong),
          n.get("idle").asBoolean,
          n.get("paused").asBoolean,
          n.get("finished").asBoolean,
          Option(n.get("lastActiveMs")).map(_.asLong))
      }
      .toSeq
    (
      LiveReport(
        root.get("query").asText,
        root.get("group").asText,
        root.get("member").asText,
        root.get("maxDriftMs").asLong,
        splits),
      root.get("updateIntervalMs").asLong)
  }

  private def encodeDecision(d: LiveDecision): String =
    d.maxAllowedWatermark.map(_.toString).getOrElse("none")
  private def decodeDecision(text: String): LiveDecision =
    LiveDecision(if (text == "none") None else Some(text.toLong))

  /**
   * A running reader's side: reports its splits every update interval without blocking the read
   * (the answer is applied when it has arrived), and turns the latest limit into splits to pause
   * and resume. A split whose watermark the coordinator has not seen (its first record came after
   * the batch was planned) is reported at once and waits for the answer. When the driver cannot
   * be reached, the last limit stays in force and a warning is logged; reports go on, so
   * alignment resumes as soon as the driver answers again.
   */
  final class ReaderSide(
      member: LiveAlignmentMember,
      idleTimeoutMs: Option[Long],
      initialLimit: Option[Long],
      initiallyConfirmed: Set[String],
      initiallyActive: Map[String, Long],
      pausesSplits: Boolean,
      clock: () => Long) {
    val gate = new LiveSplitGate(idleTimeoutMs, clock)
    private lazy val client =
      DriverChannel.connect(EndpointName, math.max(member.updateIntervalMs * 10, 10000L).millis)
    private var pending: Option[Future[String]] = None
    private var nextReportMs = 0L
    private var limit: Option[Long] = initialLimit
    private var failures = 0

    /** Splits whose watermark the coordinator has answered for, and those in the report on its way. */
    private var confirmed = initiallyConfirmed
    private var inFlight = Set.empty[String]

    /**
     * Called between fetches with each split's state (without idle/paused, which the gate
     * knows) and how many records were read from it so far: returns the splits to pause and to
     * resume now.
     */
    def tick(
        now: Long,
        splits: Seq[LiveSplitState],
        records: Map[String, Long],
        waiting: Set[String]): (Set[String], Set[String]) = {
      records.foreach { case (id, n) =>
        gate.track(id, initiallyActive.get(id))
        gate.observe(id, n, waiting.contains(id), now)
      }
      pending.filter(_.isCompleted).foreach { f =>
        pending = None
        f.value.get match {
          case Success(answer) =>
            limit = decodeDecision(answer).maxAllowedWatermark
            confirmed ++= inFlight
            failures = 0
          case Failure(e) =>
            confirmed ++= inFlight // reading goes on under the last limit rather than waiting for a driver that is gone
            failures += 1
            if (failures == 1 || failures % 10 == 0) {
              logWarning(
                s"Sluice: the alignment coordinator on the driver did not answer ($failures time(s)): " +
                  s"${e.getMessage}; the last limit stays in force.")
            }
        }
      }
      val unconfirmed = splits
        .filter(s => s.watermark.isDefined && !confirmed.contains(s.splitId))
        .map(_.splitId)
        .toSet
      // decided before the report: a split paused now is not idle now (a new task starts unpaused)
      val decision =
        if (!pausesSplits) (Set.empty[String], Set.empty[String])
        else
          gate.decide(
            splits.map(s => s.splitId -> s.watermark).toMap,
            splits.filter(_.finished).map(_.splitId).toSet,
            limit,
            unconfirmed)
      val withStatus = splits.map(s =>
        s.copy(
          idle = gate.isIdle(s.splitId, now),
          paused = gate.isPaused(s.splitId),
          lastActiveMs = gate.lastActive(s.splitId)))
      // a split that just got its first watermark is reported at once, not at the next interval
      if (pending.isEmpty && (now >= nextReportMs || (unconfirmed -- inFlight).nonEmpty)) {
        nextReportMs = now + member.updateIntervalMs
        inFlight = splits.filter(_.watermark.isDefined).map(_.splitId).toSet
        val report = LiveReport(
          member.queryKey,
          member.group,
          member.memberId,
          member.maxDriftMs,
          withStatus)
        pending = Some(client.ask(encodeReport(report, member.updateIntervalMs)))
      }
      decision
    }
  }
}

package sluice.hybrid

import java.util.concurrent.{ExecutorService, Executors, Future, ThreadFactory}

import scala.util.control.NonFatal

import sluice.api.{RetentionCheck, RetentionWatch}
import sluice.errors.{ErrorClasses, SluiceRuntimeException}

/**
 * Where a hybrid's next source will start, as the switch will derive it, seen from now.
 *
 * @param timestampMs its first record at or after this event time; None: its own start positions
 * @param known       true when this is where the switch will start (a fixed start, or the end the
 *                    previous source will reach, told by its event-time index); false when it is
 *                    only a lower bound (the event time the previous source reached so far)
 * @param describe    how it was derived, for messages
 */
private[hybrid] final case class PlannedStart(
    timestampMs: Option[Long],
    known: Boolean,
    describe: String)

/**
 * Watches, while a hybrid reads its bounded sources, whether the next source — one whose system
 * deletes old records (Kafka) — still holds the records its start will need.
 *
 * Checks call the system, so they run on a thread of their own, at most every `intervalMs`,
 * and planning never waits for one: it reads the last answer. A check that fails (the brokers
 * unreachable) is logged and tried again at the next interval; only an answer that the needed
 * records are gone, for a start that is known, fails the query. What a check could not find out
 * (Kafka's `retention.ms` without DESCRIBE_CONFIGS) is logged once; the rest of it still counts.
 */
private[hybrid] final class RetentionGuard(
    nextIndex: Int,
    nextType: String,
    watch: RetentionWatch,
    intervalMs: Long,
    warnBelowMs: Long,
    clock: () => Long = () => System.currentTimeMillis())
    extends AutoCloseable {
  import RetentionGuard._

  private val executor: ExecutorService = Executors.newSingleThreadExecutor(DaemonThreads)
  private var running: Option[Future[_]] = None
  private var lastStartedMs = Long.MinValue
  @volatile private var last: Option[Observed] = None

  /** The last tolerated loss logged, so that each is logged once rather than at every check. */
  private var warnedLoss: Option[String] = None

  /** The last limit of the check logged (`RetentionCheck.unchecked`), logged once too. */
  private var warnedUnchecked: Option[String] = None

  /**
   * At every planning: fails when the last check found the needed records gone, and starts a new
   * check when one is due (`start` is evaluated only then; None: nothing to check yet).
   */
  def observe(start: => Option[PlannedStart]): Unit = {
    last.foreach { o =>
      if (o.start.known && !o.check.tolerated) o.check.lost.foreach { what =>
        throw new SluiceRuntimeException(
          ErrorClasses.RetentionExceeded,
          Map("message" -> (s"HybridSource: source $nextIndex ($nextType) will start ${o.start.describe}, " +
            s"but $what The query stops now, before the switch, rather than skip those records after it. " +
            s"(Checked every ${HybridOptions.RetentionCheckIntervalMs.name} = $intervalMs ms.)")))
      }
    }
    val now = clock()
    val due = lastStartedMs == Long.MinValue || now - lastStartedMs >= intervalMs
    if (due && running.forall(_.isDone)) {
      start.foreach { s =>
        lastStartedMs = now
        running = Some(executor.submit(new Runnable { override def run(): Unit = check(s) }))
      }
    }
  }

  /**
   * Right before the switch, with the start now exact: one more check, waited for (at most
   * `timeoutMs`, queued behind a check in flight, which holds the watch's client), then fails as
   * `observe` does when the records are gone. A check that cannot answer in time lets the switch
   * go ahead, as an unreachable system never fails the query. Without it, a loss that happened
   * since the last periodic check (up to an interval ago) would only show after the switch.
   */
  def confirmBeforeSwitch(
      start: Option[PlannedStart],
      timeoutMs: Long = SwitchCheckTimeoutMs): Unit = {
    start.filter(_.known).foreach { s =>
      val done = executor.submit(new Runnable { override def run(): Unit = check(s) })
      try done.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS)
      catch {
        case _: java.util.concurrent.TimeoutException =>
          done.cancel(true)
          log.warn(
            s"HybridSource: the retention of source $nextIndex ($nextType) could not be checked within " +
              s"$timeoutMs ms before the switch; switching on the last check's answer.")
      }
      lastStartedMs = clock()
    }
    observe(None)
  }

  private def check(start: PlannedStart): Unit = {
    val now = clock()
    try {
      val found = watch.check(start.timestampMs, now)
      last = Some(Observed(start, found, now))
      found.unchecked.filterNot(warnedUnchecked.contains).foreach { what =>
        warnedUnchecked = Some(what)
        log.warn(
          s"HybridSource: the retention check of source $nextIndex ($nextType) is partial: $what")
      }
      if (start.known && found.tolerated)
        found.lost.filterNot(warnedLoss.contains).foreach { what =>
          warnedLoss = Some(what)
          log.warn(
            s"HybridSource: source $nextIndex ($nextType) will start ${start.describe}, but $what It was told to " +
              "go on past records that are gone (failOnDataLoss=false): the switch goes ahead, without those records.")
        }
      found.headroomMs.filter(h => start.known && found.lost.isEmpty && h < warnBelowMs).foreach {
        h =>
          log.warn(
            s"HybridSource: the records source $nextIndex ($nextType) will start at (${start.describe}) can be " +
              s"deleted by its retention in $h ms (below ${HybridOptions.RetentionWarningMs.name} = $warnBelowMs ms); " +
              "once they are, the query fails before the switch. Keep them longer (raise the topic's retention.ms) or let " +
              "the sources before it finish sooner.")
      }
    } catch {
      case NonFatal(e) =>
        log.warn(
          s"HybridSource: could not check the retention of source $nextIndex ($nextType); trying again in " +
            s"$intervalMs ms: $e")
    }
  }

  /**
   * `retentionHeadroomMs` as the last check found it (nothing before a check succeeded or when
   * nothing ages out), and `retentionRecordsLost` when records a known start needs are gone and
   * the source goes on without them.
   */
  def metrics: Map[String, String] = last
    .map { o =>
      o.check.headroomMs.map(HybridMetrics.RetentionHeadroomMs -> _.toString).toMap ++
        o.start.timestampMs.map(HybridMetrics.RetentionStartMs -> _.toString) +
        (HybridMetrics.RetentionCheckedAtMs -> o.atMs.toString) ++
        Option.when(o.start.known && o.check.lost.isDefined)(
          HybridMetrics.RetentionRecordsLost -> "true")
    }
    .getOrElse(Map.empty)

  /** What records a known start needs are gone, when the source goes on without them. */
  def toleratedLoss: Option[String] =
    last.filter(o => o.start.known && o.check.tolerated).flatMap(_.check.lost)

  /** Waits for the check `observe` started last, if any (tests: instead of sleeping). */
  private[hybrid] def awaitCheck(timeoutMs: Long = SwitchCheckTimeoutMs): Unit =
    running.foreach(_.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS))

  /** Waits briefly for a check in flight: it holds the watch's client. */
  override def close(): Unit = {
    executor.shutdownNow()
    try executor.awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS)
    catch { case _: InterruptedException => }
    try watch.close()
    catch { case NonFatal(_) => }
  }
}

private[hybrid] object RetentionGuard {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[RetentionGuard])

  /** How long the switch waits for its own last check. */
  val SwitchCheckTimeoutMs = 10000L

  private final case class Observed(start: PlannedStart, check: RetentionCheck, atMs: Long)

  private object DaemonThreads extends ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "sluice-hybrid-retention-watch")
      t.setDaemon(true)
      t
    }
  }
}

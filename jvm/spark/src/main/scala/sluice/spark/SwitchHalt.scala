package sluice.spark

import sluice.api.{Source, SourceSplit, SplitRange}
import sluice.hybrid.HybridSource
import sluice.runtime.{SourceCheckpoint, SplitReport}

/**
 * A fault injection for tests, never for users: halts the driver JVM while Spark's offset log
 * holds the micro-batch whose end offset performs a hybrid's switch and its commit log does not.
 * A SIGKILL at a random moment lands there only by luck; the chaos harness (`chaos/run.py`,
 * "switch") needs that moment every time, to show that a restart replays the switch exactly once.
 *
 * Off unless the driver's environment sets `Variable`: `logged` halts when Spark plans the
 * batch's tasks (the offset log holds it, nothing of it ran); `ran` halts once the driver has
 * every report of that batch's tasks (its ranges were read and the runtime took their progress
 * in, but neither the sink nor the commit log committed it). One hybrid per driver: the state
 * of `ran` is this object's.
 *
 * Read once, here only, when the class is first used: the checks on the planning and reporting
 * paths are then one read of a constant, and with the variable unset nothing else happens.
 */
private[spark] object SwitchHalt {

  /** The environment variable that turns the halt on; its name says it is a test's fault. */
  val Variable = "SLUICE_TEST_FAULT_HALT_AT_SWITCH"

  /**
   * The JVM's exit status at the halt. A PySpark driver's Python process then ends on the lost
   * gateway with its own status: a harness there goes by the line below.
   */
  val ExitStatus = 86

  /** The line written to the driver's stderr just before the halt (the harness looks for it). */
  val Announcement = "SLUICE TEST FAULT: halting the driver at the hybrid switch"

  private val moment: Option[String] = sys.env.get(Variable).filter(_.nonEmpty)

  val armed: Boolean = moment.isDefined

  /** `ran`: the switch batch's ranges (split id, from) -> until whose full report has not come. */
  private var pending: Option[(String, Map[(String, Long), Long])] = None

  /**
   * Called when Spark plans the tasks of the batch `start` -> `end`, which it does after writing
   * the batch to the offset log and before running it (Spark 4.3 `MicroBatchExecution`:
   * `markMicroBatchStart` writes the log, then `runBatch` plans the scan, runs it and
   * `markMicroBatchEnd` writes the commit log). `logged` halts here; `ran` waits for the
   * reports of `ranges`.
   */
  def atPlanning(
      source: Source[_, _],
      start: SourceCheckpoint,
      end: SourceCheckpoint,
      ranges: Seq[SplitRange[SourceSplit]],
      batchId: Option[String]): Unit =
    if (switches(source, start, end)) {
      val batch = batchId.getOrElse("?")
      moment match {
        case Some("logged") => halt(s"batch $batch is in the offset log, nothing of it ran")
        case Some("ran") if ranges.isEmpty => halt(s"batch $batch ran: it had nothing to read")
        case Some("ran") =>
          synchronized {
            pending = Some(batch -> ranges.map(r => (r.split.splitId, r.from) -> r.until).toMap)
          }
        case other =>
          // a test that mistyped the moment would otherwise wait for a halt that never comes
          throw new IllegalArgumentException(
            s"$Variable is '${other.mkString}': set it to 'logged' or 'ran', or unset it")
      }
    }

  /**
   * Called after the runtime took in finished tasks' reports (the driver merges a task's
   * accumulators as it ends, before the job ends and the sink commits): `ran` halts once every
   * range of the switch batch was reported read to its end.
   */
  def afterReports(reports: Seq[SplitReport]): Unit = {
    val done = synchronized {
      pending.flatMap { case (batch, left) =>
        val still = left.filterNot { case ((id, from), until) =>
          reports.exists(r => r.splitId == id && r.from == from && r.until >= until)
        }
        pending = Some(batch -> still)
        Option.when(still.isEmpty)(batch)
      }
    }
    done.foreach(batch => halt(s"batch $batch ran, neither the sink nor the commit log has it"))
  }

  /** As a SIGKILL would leave the driver: no shutdown hook runs, nothing is committed. */
  private def halt(where: String): Unit = {
    System.err.println(s"$Announcement: $where")
    System.err.flush()
    Runtime.getRuntime.halt(ExitStatus)
  }

  /** Whether the batch `start` -> `end` of `source` is the one that switches to the next source. */
  private def switches(
      source: Source[_, _],
      start: SourceCheckpoint,
      end: SourceCheckpoint): Boolean = source match {
    case hybrid: HybridSource =>
      def active(c: SourceCheckpoint): Int = hybrid.enumeratorStateSerializer
        .deserialize(c.enumeratorVersion, c.enumeratorState)
        .activeIndex
      active(end) > active(start)
    case _ => false
  }
}

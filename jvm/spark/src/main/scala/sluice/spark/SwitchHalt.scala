package sluice.spark

import sluice.api.Source
import sluice.hybrid.HybridSource
import sluice.runtime.SourceCheckpoint

/**
 * A fault injection for tests, never for users: halts the driver JVM at the moment Spark's offset
 * log holds the micro-batch whose end offset performs a hybrid's switch and its commit log does
 * not. A SIGKILL at a random moment lands there only by luck; the chaos harness
 * (`chaos/run.py`, "switch") needs that moment every time, to show that a restart replays the
 * switch exactly once. Off unless the driver's environment sets [[Variable]] to `1`.
 *
 * Read once, here only, when the class is first used: the check on the planning path is then one
 * read of a constant, and with the variable unset nothing else happens.
 */
private[spark] object SwitchHalt {

  /** The environment variable that turns the halt on; its name says it is a test's fault. */
  val Variable = "SLUICE_TEST_FAULT_HALT_AT_SWITCH"

  /** The driver's exit status at the halt, for a harness to tell it from a crash. */
  val ExitStatus = 86

  /** The line written to the driver's stderr just before the halt (the harness looks for it). */
  val Announcement = "SLUICE TEST FAULT: halting the driver at the hybrid switch"

  val armed: Boolean = sys.env.get(Variable).contains("1")

  /**
   * Called when Spark plans the tasks of the batch `start` -> `end`, which it does after writing
   * the batch to the offset log and before running it (Spark 4.3 `MicroBatchExecution`:
   * `markMicroBatchStart` writes the log, then `runBatch` plans the scan, runs it and
   * `markMicroBatchEnd` writes the commit log). Halts, as a SIGKILL would leave the driver: no
   * shutdown hook runs and nothing is committed.
   */
  def atPlanning(
      source: Source[_, _],
      start: SourceCheckpoint,
      end: SourceCheckpoint,
      batchId: Option[String]): Unit =
    if (armed && switches(source, start, end)) {
      System.err.println(
        s"$Announcement: batch ${batchId.getOrElse("?")} is in the offset log, not committed")
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

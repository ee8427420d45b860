package sluice.spark

/**
 * Which kind of batch a task reads, so its reader knows which it is. The two long modes read an
 * open batch: the runtime's `OpenBatch`, whose ranges are open-ended (or end where a bounded split
 * stops) and whose tasks run until the engine ends the batch (real-time mode) or the epochs'
 * set (continuous processing). "Open batch" is this module's one name for such a long batch.
 */
sealed trait TaskMode extends Serializable {

  /**
   * The task reads an open batch: it waits for data rather than finishing, reports where its
   * splits stand while it runs, and pauses splits for live alignment.
   */
  def readsOpenBatch: Boolean
}

object TaskMode {

  /** A bounded batch: a micro-batch, or a batch read (`spark.read`), which Spark reads the same way. */
  case object MicroBatch extends TaskMode {
    override def readsOpenBatch: Boolean = false
  }

  /** An open batch of real-time mode (`SluiceMicroBatchStream` under a real-time trigger). */
  case object RealTime extends TaskMode {
    override def readsOpenBatch: Boolean = true
  }

  /** An open batch of continuous processing (`SluiceContinuousStream`). */
  case object Continuous extends TaskMode {
    override def readsOpenBatch: Boolean = true
  }
}

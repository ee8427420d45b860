package sluice.api

import sluice.config.RecordLayout

/**
 * What the binding decides for every reader it creates (Flink's `SourceReaderContext`): which rows
 * to build and which clock to read. Given once, when the reader is created; connectors never take
 * these from their own options.
 */
trait ReaderContext extends Serializable {
  /** Full rows, or the payload only (compact). */
  def recordLayout: RecordLayout

  /** Wall-clock milliseconds, for the reader's own timeouts. */
  def currentTimeMillis(): Long
}

object ReaderContext {
  /** Full rows and the system clock: what tests and tools that read splits directly use. */
  val Default: ReaderContext = of(RecordLayout.Full)

  def of(layout: RecordLayout): ReaderContext = SystemClockContext(layout)

  private final case class SystemClockContext(recordLayout: RecordLayout) extends ReaderContext {
    override def currentTimeMillis(): Long = System.currentTimeMillis()
  }
}

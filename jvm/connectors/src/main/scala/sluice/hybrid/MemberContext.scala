package sluice.hybrid

import sluice.api.ReaderContext
import sluice.config.RecordLayout

/** The hybrid's reader context as the reader of its `index`-th member sees it: counters go to the hybrid's split ids. */
private[hybrid] final class MemberContext(context: ReaderContext, index: Int)
    extends ReaderContext {
  override def recordLayout: RecordLayout = context.recordLayout
  override def currentTimeMillis(): Long = context.currentTimeMillis()
  override def count(splitId: String, name: String, delta: Long): Unit =
    context.count(HybridSplit.id(index, splitId), name, delta)
  override def addBytesRead(n: Long): Unit = context.addBytesRead(n)
}

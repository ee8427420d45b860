package sluice.runtime

import sluice.api.SplitProgress

/**
 * Where a runtime keeps the progress readers reported, between the moment a report arrives and
 * the next checkpoint that carries it: a driver that dies after a batch but before the next
 * offset is written must not forget what that batch read (DESIGN.md). The binding provides it
 * (a file in the source's checkpoint folder); `InMemory` keeps nothing across a restart.
 */
trait ProgressStore {
  def read(): Seq[SplitProgress]
  def write(progress: Seq[SplitProgress]): Unit
}

object ProgressStore {
  final class InMemory extends ProgressStore {
    @volatile private var kept: Seq[SplitProgress] = Nil
    override def read(): Seq[SplitProgress] = kept
    override def write(progress: Seq[SplitProgress]): Unit = kept = progress
  }
}

package sluice.runtime

import sluice.api.SplitProgress

/**
 * Writes a runtime's progress to its store on a thread of its own. Reports arrive on Spark's
 * scheduler thread as tasks end; a checkpoint write there (one per task, on S3 or ABFS a slow
 * one) would hold up every query of the driver. Only the newest snapshot is written; `flush`
 * waits until it is, and raises a write that failed.
 */
final class ProgressWriter(store: ProgressStore, name: String) {
  private var latest: Option[Seq[SplitProgress]] = None
  private var writing = false
  private var failure: Option[Throwable] = None
  private var closed = false

  private val thread = new Thread(() => run(), s"sluice-progress-$name")
  thread.setDaemon(true)
  thread.start()

  /** Replaces what is waiting to be written. */
  def submit(progress: Seq[SplitProgress]): Unit = synchronized {
    latest = Some(progress)
    notifyAll()
  }

  /** Waits until everything submitted so far is in the store (at most `timeoutMs`, when given). */
  def flush(timeoutMs: Option[Long] = None): Unit = synchronized {
    val deadline = timeoutMs.map(System.currentTimeMillis() + _)
    while ((latest.isDefined || writing) && failure.isEmpty && thread.isAlive) {
      if (deadline.exists(System.currentTimeMillis() >= _)) {
        throw new IllegalStateException(
          s"Sluice: the progress of source '$name' was not kept in the checkpoint within ${timeoutMs.get} ms")
      }
      wait(100)
    }
    failure.foreach { e =>
      failure = None
      throw new IllegalStateException(
        s"Sluice: could not keep the progress of source '$name' in the checkpoint",
        e)
    }
  }

  /** Flushes, then stops the thread. */
  def close(): Unit = {
    try flush()
    finally
      synchronized {
        closed = true
        notifyAll()
      }
  }

  private def run(): Unit = {
    while (true) {
      val next = synchronized {
        while (latest.isEmpty && !closed) wait()
        if (latest.isEmpty) return
        writing = true
        val p = latest.get
        latest = None
        p
      }
      try store.write(next)
      catch { case e: Throwable => synchronized { failure = Some(e) } }
      finally
        synchronized {
          writing = false
          notifyAll()
        }
    }
  }
}

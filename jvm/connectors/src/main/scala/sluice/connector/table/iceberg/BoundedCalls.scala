package sluice.connector.table.iceberg

import java.util.concurrent.{Callable, ExecutionException, Executors, ThreadFactory, TimeUnit, TimeoutException}
import java.util.concurrent.atomic.AtomicInteger

/**
 * Calls into a catalog library bounded by a time of Sluice's own: the call runs on a daemon
 * thread and the caller waits for it at most `timeoutMs`. Past that the caller goes on (with
 * None) and the thread is interrupted; a library blocked in a socket read does not notice an
 * interrupt, so that thread stays until the library's own timeouts end the call, and what it
 * returns then is handed to `late` (a catalog built too late is closed there).
 */
private[iceberg] object BoundedCalls {
  private val Running = 0
  private val Taken = 1
  private val Abandoned = 2

  private val threads = Executors.newCachedThreadPool(new ThreadFactory {
    private val count = new AtomicInteger()
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"sluice-iceberg-catalog-${count.incrementAndGet()}")
      t.setDaemon(true) // a call that never returns must not keep the driver's JVM alive
      t
    }
  })

  /** `work` on a thread of the pool, not waited for (closing a catalog whose connections hang). */
  def detached(work: => Unit): Unit = {
    val loader = Thread.currentThread.getContextClassLoader
    threads.execute { () =>
      Thread.currentThread.setContextClassLoader(loader)
      work
    }
  }

  /** `work`'s result, or None when it took longer than `timeoutMs`; its exception is rethrown. */
  def within[T](timeoutMs: Long)(work: => T)(late: T => Unit): Option[T] = {
    val state = new AtomicInteger(Running)
    // the caller's class loader: a catalog's classes (a JDBC driver added with --packages, a
    // Connect session's jars) are found through it, and a pooled thread keeps the one it began with
    val loader = Thread.currentThread.getContextClassLoader
    val call = threads.submit(new Callable[T] {
      override def call(): T = {
        Thread.currentThread.setContextClassLoader(loader)
        val result = work
        if (!state.compareAndSet(Running, Taken)) late(result)
        result
      }
    })
    try Some(call.get(timeoutMs, TimeUnit.MILLISECONDS))
    catch {
      case _: TimeoutException =>
        if (state.compareAndSet(Running, Abandoned)) {
          call.cancel(true)
          None
        } else Some(call.get()) // it returned as the wait ended
      case e: ExecutionException => throw e.getCause
      case e: InterruptedException =>
        // the caller stopped (a query stopped while it planned): what the call still returns is
        // nobody's, so it goes to `late` as a result past the bound does
        if (state.compareAndSet(Running, Abandoned)) call.cancel(true)
        else
          try late(call.get())
          catch { case _: ExecutionException => () }
        throw e
    }
  }
}

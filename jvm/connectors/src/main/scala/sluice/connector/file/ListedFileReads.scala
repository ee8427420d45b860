package sluice.connector.file

import java.util.concurrent.{Callable, ExecutionException, Executors, TimeUnit}

/**
 * What a listing reads of each new file on the driver (a Parquet footer, a compressed file's
 * decompressed length), several files at once: one at a time, a listing of many new files would
 * take as long as all their reads. A file that cannot be read is a Left, for `NotReadyFiles` to
 * judge (it may still be being written); a refusal (IllegalArgumentException: the file is fine,
 * the options reject it) still throws.
 */
private[connector] object ListedFileReads {
  def inParallel[T](files: Seq[DiscoveredFile], threads: Int, threadName: String)(
      read: DiscoveredFile => T): Seq[(DiscoveredFile, Either[Throwable, T])] = {
    def one(f: DiscoveredFile): Either[Throwable, T] =
      try Right(read(f))
      catch {
        case e: IllegalArgumentException => throw e
        case e: java.io.IOException => Left(e)
        case e: RuntimeException => Left(e)
      }
    if (files.size <= 1) files.map(f => f -> one(f))
    else {
      val pool = Executors.newFixedThreadPool(
        math.max(1, math.min(threads, files.size)),
        (r: Runnable) => {
          val t = new Thread(r, threadName)
          t.setDaemon(true)
          t
        })
      try {
        val futures = files.map(f =>
          f -> pool.submit(new Callable[Either[Throwable, T]] { def call() = one(f) }))
        futures.map { case (f, future) =>
          try f -> future.get()
          catch { case e: ExecutionException => throw e.getCause }
        }
      } finally {
        pool.shutdownNow()
        pool.awaitTermination(10, TimeUnit.SECONDS)
      }
    }
  }
}

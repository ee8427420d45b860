package sluice.connector.file

import scala.collection.mutable

import sluice.errors.SluiceError

/**
 * Files a listing found but could not read yet, for every file format. A file written in place
 * in a monitored folder is incomplete until its writer is done: a Parquet file has no footer, a
 * compressed file's stream is cut short. Monitored, such a file is left out of this listing and
 * tried again at the next ones (its enumerator does not remember it as known), so it is read
 * once, when complete. It is read again only once its length or modification time changed: a
 * listing does not pay a full read of a file nobody writes at every trigger. A file that stays
 * unreadable must not be waited for silently forever: once the listings saw it unchanged for
 * `limitMs` (by the driver's clock, so the file system's clock and an open file's modification
 * time do not matter) it is taken for corrupt and fails the query, naming it. Read once
 * (bounded), an unreadable file fails at once.
 *
 * One per enumerator and kind of file, on the driver. Each file waited for is logged once; how
 * many are waited for is a metric (`filesNotReady`). `advice` says what to do about a file that
 * failed the query, and `limitOption` names the option that sets `limitMs` (None: fixed).
 *
 * `writeClockSlackMs`, for files written in one go (a table's metadata file): such a file is taken
 * as unchanged since its modification time, plus this allowance for the file system's clock
 * running ahead of the driver's, where that is earlier than the first failed read. A query
 * restarted, or run with `Trigger.AvailableNow`, more often than `limitMs` starts waiting afresh
 * each time and would otherwise never fail. Not for a folder's files (None): one written in
 * place may keep its modification time until its writer closes it.
 */
private[connector] final class NotReadyFiles(
    context: String,
    monitored: Boolean,
    clock: () => Long,
    limitMs: Long = NotReadyFiles.LimitMs,
    advice: String = NotReadyFiles.FolderAdvice,
    limitOption: Option[String] = Some("notReadyTimeoutMs"),
    writeClockSlackMs: Option[Long] = None) {
  import NotReadyFiles.Waiting

  private val waiting = mutable.Map[String, Waiting]()

  /**
   * True when `f` is waited for and unchanged since a read of it failed: reading it again would
   * fail again, so it is left out of this listing without reading it. Throws once it has been
   * unchanged for the limit.
   */
  def unchangedSinceFailure(f: DiscoveredFile): Boolean =
    waiting.get(f.path).filter(_.sameAs(f)).exists { w =>
      failIfTooLong(w)
      true
    }

  /**
   * `f` could not be read (`what` names what, `why` the likely reason, `cause` the error): true
   * when it is left for a later listing, else it throws.
   */
  def retryLater(f: DiscoveredFile, what: String, why: String, cause: Throwable): Boolean = {
    if (!monitored) throw failure(what, why, None, cause)
    val now = clock()
    val w = waiting.get(f.path) match {
      case Some(seen) if seen.sameAs(f) => seen.copy(what = what, why = why, cause = cause)
      case seen =>
        if (seen.isEmpty) {
          NotReadyFiles.log.info(
            s"$context: $what: $why, or still being written; it is left out of this listing " +
              s"and tried again once it changes, until it is complete or unchanged for ${limitMs / 1000} s " +
              s"(then the query fails). (${cause.getMessage})")
        }
        val since =
          writeClockSlackMs.fold(now)(slack => math.min(now, f.modificationTime + slack))
        Waiting(f.length, f.modificationTime, since, what, why, cause)
    }
    waiting(f.path) = w
    failIfTooLong(w)
    true
  }

  private def failIfTooLong(w: Waiting): Unit = {
    val unchangedMs = clock() - w.sinceMs
    if (unchangedMs >= limitMs) throw failure(w.what, w.why, Some(unchangedMs), w.cause)
  }

  private def failure(what: String, why: String, unchangedMs: Option[Long], cause: Throwable) =
    SluiceError.sourceFault(
      s"$context: $what" + unchangedMs
        .map(ms => s", unchanged for ${ms / 1000} s")
        .getOrElse("") +
        s": $why. $advice" +
        unchangedMs
          .flatMap(_ => limitOption)
          .map(option =>
            s" (or, for a writer that pauses longer, raise option '$option', now $limitMs)")
          .getOrElse("") + s". (${cause.getMessage})",
      cause)

  /** `path` was read: no longer waited for. */
  def ready(path: String): Unit =
    if (waiting.remove(path).isDefined)
      NotReadyFiles.log.info(s"$context: '$path' is complete now and read.")

  /** Forgets files no longer found by a listing (removed while waited for). */
  def retainFound(found: Seq[DiscoveredFile]): Unit = {
    val paths = found.iterator.map(_.path).toSet
    waiting.filterInPlace((path, _) => paths.contains(path))
  }

  /** How many files are waited for. */
  def size: Int = waiting.size

  /** For query progress: how many files are waited for. */
  def metrics: Map[String, String] =
    if (monitored) Map(FileMetrics.FilesNotReady -> size.toString) else Map.empty
}

private[connector] object NotReadyFiles {

  /** How long a monitored file may stay unreadable and unchanged unless `notReadyTimeoutMs` says otherwise. */
  val LimitMs: Long = 10 * 60 * 1000L

  /** What to do about a file of a monitored folder that failed the query. */
  val FolderAdvice: String =
    "Files must be complete when they appear: write them elsewhere or under a hidden name (starting with " +
      "'.' or '_'), then rename them into the folder; replace or remove this one"

  private val log = org.slf4j.LoggerFactory.getLogger(classOf[NotReadyFiles])

  /** A file waited for: its status when a read of it last failed, and since when (driver clock) it is so. */
  private final case class Waiting(
      length: Long,
      modificationTime: Long,
      sinceMs: Long,
      what: String,
      why: String,
      cause: Throwable) {
    def sameAs(f: DiscoveredFile): Boolean =
      f.length == length && f.modificationTime == modificationTime
  }
}

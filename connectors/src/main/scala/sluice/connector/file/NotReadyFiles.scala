package sluice.connector.file

import scala.collection.mutable

/**
 * Files a listing found but could not read yet, for every file format. A file written in place
 * in a monitored folder is incomplete until its writer is done: a Parquet file has no footer, a
 * compressed file's stream is cut short. Monitored, such a file is left out of this listing and
 * tried again at the next ones (its enumerator does not remember it as known), so it is read
 * once, when complete. A file that stays unreadable must not be retried silently forever: once
 * it has not been modified for `limitMs` it is taken for corrupt and fails the query, naming it.
 * Read once (bounded), an unreadable file fails at once.
 *
 * One per enumerator, on the driver. Each file waited for is logged once; how many are waited
 * for is a metric (`filesNotReady`).
 */
private[connector] final class NotReadyFiles(context: String, monitored: Boolean, clock: () => Long,
    limitMs: Long = NotReadyFiles.LimitMs) {
  private val waiting = mutable.Set[String]()

  /**
   * `f` could not be read (`what` names what, `why` the likely reason, `cause` the error): true
   * when it is left for a later listing, else it throws.
   */
  def retryLater(f: DiscoveredFile, what: String, why: String, cause: Throwable): Boolean = {
    val unchangedMs = clock() - f.modificationTime
    if (monitored && unchangedMs < limitMs) {
      if (waiting.add(f.path)) {
        NotReadyFiles.log.info(s"$context: $what: $why, or still being written; it is left out of this listing " +
          s"and tried again at the next ones, until it is complete or unmodified for ${limitMs / 1000} s " +
          s"(then the query fails). (${cause.getMessage})")
      }
      true
    } else {
      throw new IllegalStateException(s"$context: $what" +
        (if (monitored) s", unmodified for ${unchangedMs / 1000} s" else "") + s": $why. Files must be complete " +
        "when they appear: write them elsewhere or under a hidden name (starting with '.' or '_'), then rename them " +
        s"into the folder; replace or remove this one. (${cause.getMessage})", cause)
    }
  }

  /** `path` was read: no longer waited for. */
  def ready(path: String): Unit =
    if (waiting.remove(path)) NotReadyFiles.log.info(s"$context: '$path' is complete now and read.")

  /** Forgets files no longer found by a listing (removed while waited for). */
  def retainFound(found: Seq[DiscoveredFile]): Unit = {
    val paths = found.iterator.map(_.path).toSet
    waiting.filterInPlace(paths.contains)
  }

  /** For query progress: how many files are waited for. */
  def metrics: Map[String, String] = if (monitored) Map(NotReadyFiles.Metric -> waiting.size.toString) else Map.empty
}

private[connector] object NotReadyFiles {
  /** How long after its last modification a monitored file may still be unreadable. */
  val LimitMs: Long = 10 * 60 * 1000L

  val Metric = "filesNotReady"

  private val log = org.slf4j.LoggerFactory.getLogger(classOf[NotReadyFiles])
}

package sluice.docs

import scala.collection.mutable

import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener._

/**
 * What became of every query started while a page's snippets run (tests/test_doc_snippets.py's
 * `_Queries`): a query may fail after the snippet that started it returned, or before anyone
 * looked. Spark posts the start synchronously with `start()`, progress and termination later.
 *
 * A query *ran* when every source its progress names read rows in some batch (not necessarily the
 * same one). Ending is not running: an `AvailableNow` query over a mistyped path ends having read
 * nothing, and a second source over a misspelled topic reads nothing while the first reads. Only
 * a snippet marked `idle` may count a trigger without rows, an idle query or an ended one.
 */
final class DocQueries extends StreamingQueryListener {
  private val started = mutable.ArrayBuffer.empty[String]
  // per query, the rows each source read so far
  private val rows = mutable.Map.empty[String, mutable.LinkedHashMap[String, Long]]
  private val triggered =
    mutable.Set.empty[String] // a trigger ran (rows or not), or it went idle
  private val ended = mutable.Set.empty[String]
  private val failures = mutable.LinkedHashMap.empty[String, String]

  override def onQueryStarted(event: QueryStartedEvent): Unit = synchronized {
    started += event.id.toString
  }

  override def onQueryProgress(event: QueryProgressEvent): Unit = synchronized {
    val query = event.progress.id.toString
    val read = rows.getOrElseUpdate(query, mutable.LinkedHashMap.empty)
    event.progress.sources.zipWithIndex.foreach { case (source, i) =>
      val name = s"source $i (${source.description})"
      read(name) = read.getOrElse(name, 0L) + source.numInputRows
    }
    triggered += query
    notifyAll()
  }

  override def onQueryIdle(event: QueryIdleEvent): Unit = synchronized {
    triggered += event.id.toString
    notifyAll()
  }

  override def onQueryTerminated(event: QueryTerminatedEvent): Unit = synchronized {
    ended += event.id.toString
    event.exception.foreach(e => failures(event.id.toString) = e)
    notifyAll()
  }

  /** The ids of the queries started so far, in order. */
  def startedIds: Seq[String] = synchronized(started.toList)

  /** Those of `ids` that failed, with their failure. */
  def failed(ids: Seq[String]): Seq[(String, String)] = synchronized {
    ids.flatMap(q => failures.get(q).map(q -> _))
  }

  private def read(query: String): Boolean =
    rows.get(query).exists(r => r.nonEmpty && r.values.forall(_ > 0))

  /**
   * Waits until each query's sources all read rows (with `mayIdle`: until it ran a trigger at all,
   * or ended); returns those that did not in time (or ended first), each with the sources that
   * read nothing.
   */
  def ran(ids: Seq[String], timeoutMs: Long, mayIdle: Boolean): Map[String, String] =
    synchronized {
      val deadline = System.currentTimeMillis() + timeoutMs
      def done(q: String) = read(q) || (mayIdle && (triggered(q) || ended(q)))
      while (ids.exists(q => !done(q) && !ended(q)) && System.currentTimeMillis() < deadline)
        wait(math.max(1L, deadline - System.currentTimeMillis()))
      ids
        .filterNot(done)
        .map { q =>
          val unread = rows.get(q).toSeq.flatMap(_.collect { case (s, 0L) => s })
          q -> (if (unread.isEmpty) "no source" else unread.mkString(", "))
        }
        .toMap
    }
}

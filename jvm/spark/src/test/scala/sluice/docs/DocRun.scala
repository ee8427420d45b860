package sluice.docs

import java.nio.file.{Files, Path}
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}

import scala.util.{Failure, Try}
import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.Assertions.fail
import org.scalatest.exceptions.TestFailedException

import sluice.SparkSuiteBase

/**
 * Runs one page's Scala snippets (a method `DocSnippets` generated: the snippets in order, each
 * between `begin` and `end`, its checks in between) with the contract of the Python snippets
 * (tests/test_doc_snippets.py): every source of every query a snippet starts reads rows within
 * `waitMs`, and no query fails, then or while the page's later snippets run. A failure names the
 * snippet's page and line. A page runs on a session of its own (`session.newSession()`), so the
 * SQL settings, views and functions it makes do not outlive it; queries it leaves running are
 * stopped after it. A page that outlives `pageMs` (a snippet waiting on a query without bound) has
 * its queries stopped and fails, naming where it waited; one still blocked `graceMs` later (on
 * something else) is given up, its thread interrupted, and fails naming the frames it waits in.
 */
final class DocRun(
    session: SparkSession,
    val givens: DocGiven,
    work: Path,
    bootstrapServers: String,
    waitMs: Long = DocRun.QueryWaitMs,
    pageMs: Long = DocRun.PageMs,
    graceMs: Long = DocRun.GraceMs) {

  /** The page's session: `spark` in its snippets. */
  val spark: SparkSession = session.newSession()
  private val queries = new DocQueries
  // read by the watchdog's thread
  @volatile private var where = "(before its first snippet)"
  private var idle: Option[String] = None
  private var startedBefore = 0
  // where the page was when it outlived `pageMs`, set by the watchdog
  @volatile private var overdue: Option[String] = None

  /** Runs the page `name`'s snippets, `body`; returns the ids of the queries they started. */
  def page(name: String, body: DocRun => Unit): Seq[String] = {
    spark.streams.addListener(queries)
    val watchdog = DocRun.watchdog(pageMs) {
      // a snippet waiting on a query without bound (`start().awaitTermination()` on a stream that
      // does not end) would hang the build: stopping the queries returns it, and any it starts next
      if (overdue.isEmpty) overdue = Some(where)
      spark.streams.active.foreach(q => Try(q.stop()))
    }
    // on a thread of its own: a page blocked on something other than a query (a lock, a socket)
    // is given up `graceMs` after its deadline, rather than hanging the build
    val (ran, pageThread) = DocRun.onThread(s"doc-page-$name", pageMs + graceMs) {
      // Sluice reads its `spark.sluice.*` settings from the thread's active session: the page's
      SparkSession.setActiveSession(spark)
      try body(this)
      catch {
        case e: TestFailedException => throw e
        case NonFatal(e) => fail(s"$where does not run as written: $e", e)
      }
      // a query may fail in a later batch, while the page's next snippets run
      assertNoneFailed(queries.startedIds, name)
      queries.startedIds
    }
    // a page thread given up but still alive (an interrupt does not end a spin or a socket read)
    // could start queries into later suites: the watchdog stays, stopping them, until it ends
    if (!pageThread.isAlive) watchdog.shutdownNow()
    // a query may also fail between that check and its stop: its own exception says so
    val left = spark.streams.active.toSeq
    val stopped = Try {
      left.foreach(_.stop())
      spark.streams.removeListener(queries)
    }
    val late = left.flatMap(q => q.exception.map(e => s"${q.id}: ${DocRun.causes(e)}"))
    overdue.foreach { at =>
      val why =
        s"$at did not end within $pageMs ms, $name's deadline: its queries were stopped. " +
          "A snippet must not wait on a query without bound: use Trigger.AvailableNow() or " +
          "awaitTermination(timeoutMs), or mark it `skip <why>`"
      // what it raised once stopped is told, and kept as the cause: it may be the real fault
      ran.failed.toOption.fold(fail(why))(e => fail(s"$why. Then: ${e.getMessage}", e))
    }
    // the page's own failure first: one in stopping its queries is told with it, not instead
    ran.failed.foreach { e =>
      stopped.failed.foreach(e.addSuppressed)
      throw e
    }
    stopped.get
    if (late.nonEmpty) fail(s"$name started a query that failed: ${late.mkString("; ")}")
    ran.get
  }

  /** The snippet at `at` begins; its queries may read nothing if it is marked `idle`. */
  def begin(at: String, idle: Option[String]): Unit = {
    where = at
    this.idle = idle
    startedBefore = queries.startedIds.size
  }

  /** A check of the snippet's marker (`expect`), run in its scope. */
  def expect(text: String)(check: => Boolean): Unit =
    if (!check) fail(s"$where: expected $text")

  /** The snippet ended: each query it started read rows from every source, and none failed. */
  def end(): Unit = {
    val mine = queries.startedIds.drop(startedBefore)
    val stalled = queries.ran(mine, waitMs, mayIdle = idle.isDefined)
    assertNoneFailed(mine, where) // a failed query read nothing either
    val unread = stalled.map { case (q, sources) => s"$q: $sources" }.mkString("; ")
    if (stalled.nonEmpty)
      fail(
        if (idle.isDefined) s"$where started queries that ran no trigger in $waitMs ms: $unread"
        else
          s"$where started queries whose sources did not all read rows in $waitMs ms " +
            s"(read nothing: $unread; mark it `idle <why>` if it means to read nothing)")
  }

  private def assertNoneFailed(ids: Seq[String], at: String): Unit = {
    val failed = queries.failed(ids)
    if (failed.nonEmpty)
      fail(
        s"$at started a query that failed: " + failed
          .map { case (q, e) => s"$q: ${DocRun.causes(e)}" }
          .mkString("; "))
  }

  /**
   * A literal a reader replaces by their own, as this run's: `broker:9092` is the test broker, a
   * path under `/archive/`, `/tmp/`, `s3a://warehouse/`, ... is one under the run's folder.
   */
  def localized(literal: String): String = {
    val local = literal.replace("broker:9092", bootstrapServers)
    DocSnippetLiterals.Places
      .find(local.startsWith)
      .fold(local) { place =>
        val folder = place.stripSuffix("/").split('/').last
        s"$work/$folder/${local.stripPrefix(place)}"
      }
  }

  /** What a page's checks (`expect`) may call besides what its snippets define. */
  object checks {

    /**
     * Runs the stream `df` to the end of what it finds, in a checkpoint of its own (one a page
     * before used would make it resume, reading nothing); the rows its batches read.
     */
    def rowsRead(df: DataFrame): Long = {
      val checkpoint = Files.createTempDirectory(work, "check")
      val query = df.writeStream
        .format("noop")
        .option("checkpointLocation", checkpoint.toString)
        .trigger(Trigger.AvailableNow())
        .start()
      if (!query.awaitTermination(waitMs)) {
        val state = SparkSuiteBase.describe(query)
        query.stop()
        fail(s"$where: rowsRead's query did not end within $waitMs ms; $state")
      }
      query.exception.foreach(e => throw e)
      query.recentProgress.map(_.numInputRows).sum
    }
  }
}

object DocRun {

  /** How long a query a snippet started may take to read its first rows (or end). */
  val QueryWaitMs: Long = 60000

  /**
   * How long a page's snippets may take, all together (the longest, README.md's, takes 9 to 21 s
   * here, by the machine's load).
   */
  val PageMs: Long = 300000

  /**
   * How long a page may take to return once its queries were stopped at its deadline (each stop
   * is bounded by the test session's `spark.sql.streaming.stopTimeout`, 30 s).
   */
  val GraceMs: Long = 60000

  /**
   * `body` run on a daemon thread named `name`, which the caller waits for up to `timeoutMs`: past
   * that, the thread is interrupted and left, and the result is a failure naming where it waited.
   * Also the thread, which may outlive an interrupt (a spin, a blocking socket read).
   */
  private def onThread[T](name: String, timeoutMs: Long)(body: => T): (Try[T], Thread) = {
    @volatile var result: Option[Try[T]] = None
    // InterruptedException and the like are no NonFatal, which Try lets through
    val thread = new Thread(
      () =>
        result = Some(
          try Try(body)
          catch { case e: Throwable => Failure(e) }),
      name)
    thread.setDaemon(true)
    thread.start()
    thread.join(timeoutMs)
    val outcome = result.getOrElse {
      val frames = thread.getStackTrace.take(8).mkString("\n  at ")
      thread.interrupt()
      thread.join(5000)
      Failure(new TestFailedException(s"still blocked after $timeoutMs ms, at:\n  at $frames", 0))
    }
    (outcome, thread)
  }

  /** Runs `overdue` after `afterMs`, then every second, until shut down. */
  private def watchdog(afterMs: Long)(overdue: => Unit): ScheduledExecutorService = {
    val timer = Executors.newSingleThreadScheduledExecutor { r =>
      val thread = new Thread(r, "doc-snippets-watchdog")
      thread.setDaemon(true)
      thread
    }
    timer.scheduleWithFixedDelay(() => overdue, afterMs, 1000, TimeUnit.MILLISECONDS)
    timer
  }

  // a line of a stack trace that names an exception: "org.apache.x.YException: ..."
  private val ErrorLine = """^(Caused by: )?[\w.$]*(Error|Exception)\b.*""".r

  /** A failure's exception and its causes, outermost first. */
  def causes(failure: Throwable): String =
    Iterator
      .iterate(failure)(_.getCause)
      .takeWhile(_ != null)
      .map(_.toString)
      .toSeq
      .distinct
      .mkString(" / ")
      .take(1000)

  /** The exception lines of a failure's stack traces, without the frames. */
  def causes(failure: String): String = {
    val lines = failure.linesIterator.map(_.trim).filter(ErrorLine.matches).toSeq.distinct
    (if (lines.isEmpty) failure else lines.mkString(" / ")).take(1000)
  }
}

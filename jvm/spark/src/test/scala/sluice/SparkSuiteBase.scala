package sluice

import java.nio.file.{Files, Path}

import scala.concurrent.{Await, ExecutionContext, Future, TimeoutException}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanExecBase
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.{Args, Assertions, BeforeAndAfterAll, Status, Suite}

/**
 * A SparkSession of its own per suite (its SQL settings, temporary views and streaming queries
 * are the suite's), all sharing the test JVM's one SparkContext: starting a context costs seconds,
 * a session nothing. Sized for a 2-core machine.
 */
trait SparkSuiteBase extends BeforeAndAfterAll { self: Suite =>
  @transient protected var spark: SparkSession = _

  /** Spark's master; a suite whose queries run all their tasks at once may need more task slots. */
  protected def master: String = "local[2]"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark = SharedSparkContext.session(master)
  }

  // each test's CPU, for where make test's time goes (TestCpu)
  abstract override protected def runTest(testName: String, args: Args): Status = {
    val (cpu, wall) = (TestCpu.now(), System.nanoTime())
    try super.runTest(testName, args)
    finally TestCpu.record(suiteName, testName, cpu, wall)
  }

  override protected def afterAll(): Unit = {
    // a query a failed test left running would read on into the next suite
    try if (spark != null) spark.streams.active.foreach(_.stop())
    finally
      try
        tempDirs.foreach(d => org.apache.spark.network.util.JavaUtils.deleteRecursively(d.toFile))
      finally super.afterAll()
  }

  /** Rows with how often each occurs: equal multisets are the same rows, in any order. */
  protected def multiset(
      rows: Seq[org.apache.spark.sql.Row]): Map[org.apache.spark.sql.Row, Int] =
    rows.groupBy(identity).map { case (r, s) => r -> s.size }

  private var runs = 0

  /**
   * Runs the stream `df` to the end of what it finds (`Trigger.AvailableNow`) into the memory
   * sink in `outputMode`, from `checkpoint` (a new one unless given), and fails with the query's error if it
   * ends with one: the rows it wrote, the input rows its batches counted, and the query.
   */
  protected def runToEnd(
      df: DataFrame,
      checkpoint: String = null,
      outputMode: String = "append"): SparkSuiteBase.Run = {
    runs += 1
    val name = s"${getClass.getSimpleName.replaceAll("\\W", "")}_run_$runs"
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .outputMode(outputMode)
      .option("checkpointLocation", Option(checkpoint).getOrElse(tempDir("ckpt").toString))
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    SparkSuiteBase.Run(
      df.sparkSession.table(name).collect().toSeq,
      q.recentProgress.map(_.numInputRows).sum,
      q)
  }

  /**
   * Starts `df` in real-time mode or continuous processing (`trigger`) into the `RealTimeSink`
   * named `sink`, in update mode, with real-time batches of at least a second.
   */
  protected def startOpen(df: DataFrame, sink: String, trigger: Trigger): StreamingQuery =
    withConf("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")(
      df.writeStream
        .foreach(sluice.spark.RealTimeSink.writer(sink))
        .outputMode("update")
        .option("checkpointLocation", tempDir("ckpt").toString)
        .trigger(trigger)
        .start())

  /** Runs `body` with the Spark setting `key` = `value`, then restores what it was. */
  protected def withConf[T](key: String, value: String)(body: => T): T = {
    val before = spark.conf.getOption(key)
    spark.conf.set(key, value)
    try body
    finally
      before match {
        case Some(v) => spark.conf.set(key, v)
        case None => spark.conf.unset(key)
      }
  }

  protected def tempDir(prefix: String): Path = {
    val dir = Files.createTempDirectory(prefix)
    tempDirs += dir
    dir
  }

  // deleted with what they hold once the suite's queries are stopped (the JVM's deleteOnExit
  // deletes empty folders only: every run left thousands of checkpoints in the temporary folder)
  private val tempDirs = scala.collection.mutable.ArrayBuffer.empty[Path]

  /**
   * Waits until `done` holds, polling; fails after `timeoutMs` naming `what` it waited for. Given
   * the query the condition depends on, it fails at once when that query ends first, and either
   * failure describes the query: running or not, its exception, its last progress.
   */
  protected def eventually(
      what: String,
      query: StreamingQuery = null,
      timeoutMs: Long = SparkSuiteBase.WaitMs)(done: => Boolean): Unit =
    SparkSuiteBase.eventually(what, Option(query), timeoutMs)(done)

  /** Asserts that `query` ends within `timeoutMs` (an ignored `awaitTermination` would hide a hang). */
  protected def awaitEnd(query: StreamingQuery, timeoutMs: Long = SparkSuiteBase.WaitMs): Unit =
    SparkSuiteBase.awaitEnd(query, timeoutMs)

  /** `query.processAllAvailable()`, which has no time limit of its own, with one. */
  protected def processAllAvailable(
      query: StreamingQuery,
      timeoutMs: Long = SparkSuiteBase.WaitMs): Unit = {
    val waiting = Future(query.processAllAvailable())(ExecutionContext.global)
    try Await.result(waiting, timeoutMs.millis)
    catch {
      // the waiting thread ends when the query stops (every test stops its queries)
      case _: TimeoutException =>
        Assertions.fail(
          s"the query did not process all available data within $timeoutMs ms; " +
            SparkSuiteBase.describe(query))
    }
  }
}

object SparkSuiteBase {

  /** The columns each scan of `query`'s last batch (or epoch) read: its scan's read schema. */
  def scanColumns(query: StreamingQuery): Seq[Seq[String]] = query
    .asInstanceOf[StreamingQueryWrapper]
    .streamingQuery
    .lastExecution
    .executedPlan
    .collect { case s: DataSourceV2ScanExecBase => s.scan.readSchema().fieldNames.toSeq }

  /** What `runToEnd` gave: the rows written, the input rows counted, the query that ended. */
  final case class Run(rows: Seq[Row], inputRows: Long, query: StreamingQuery) {

    /** The columns each Sluice scan of the query's last batch read (its scan's read schema). */
    def scanColumns: Seq[Seq[String]] = SparkSuiteBase.scanColumns(query)

    /** Whether Spark read the last batch's scan as column batches (`ColumnarToRow` above it). */
    def readColumnar: Boolean = query
      .asInstanceOf[StreamingQueryWrapper]
      .streamingQuery
      .lastExecution
      .executedPlan
      .exists(_.isInstanceOf[org.apache.spark.sql.execution.ColumnarToRowExec])

    /** The end offset of the query's only source, as its last batch logged it. */
    def endOffset: String = query.lastProgress.sources.head.endOffset
  }

  /** How long a test waits for a query before it fails: ample on a busy 2-core machine. */
  val WaitMs: Long = 120000

  /** As the trait's; `what` is evaluated when the wait fails, so it may say how far things got. */
  def eventually(what: => String, query: Option[StreamingQuery], timeoutMs: Long)(
      done: => Boolean): Unit = {
    val deadline = System.currentTimeMillis() + timeoutMs
    while (!done) {
      query.filterNot(_.isActive).foreach { q =>
        // it may have got there just before it ended
        if (!done)
          failWith(s"the query ended while waiting for $what; ${describe(q)}", q.exception)
      }
      if (System.currentTimeMillis() > deadline) {
        failWith(
          s"timed out after $timeoutMs ms waiting for $what" + query
            .map(q => s"; ${describe(q)}")
            .getOrElse(""),
          query.flatMap(_.exception))
      }
      Thread.sleep(50)
    }
  }

  private def failWith(message: String, cause: Option[Throwable]): Nothing =
    cause.fold(Assertions.fail(message))(Assertions.fail(message, _))

  def awaitEnd(query: StreamingQuery, timeoutMs: Long): Unit =
    if (!query.awaitTermination(timeoutMs))
      Assertions.fail(s"the query did not end within $timeoutMs ms; ${describe(query)}")

  /** A query's state for a failure message: running or not, its exception, its last progress. */
  def describe(q: StreamingQuery): String = {
    val name = Option(q.name).getOrElse(q.id.toString)
    val state = if (q.isActive) s"running (${q.status.message})" else "not running"
    val error = q.exception.map(e => s", failed with: ${e.getMessage}").getOrElse("")
    val last = Option(q.lastProgress)
      .map { p =>
        val metrics = p.sources.map(
          _.metrics.asScala.toSeq.sortBy(_._1).map { case (k, v) => s"$k=$v" }.mkString(", "))
        s"; last progress: batch ${p.batchId}, ${p.numInputRows} rows, source metrics ${metrics.mkString("[", "] [", "]")}"
      }
      .getOrElse("; no progress yet")
    val text = s"query $name $state$error$last"
    if (text.length > 4000) text.take(4000) + " ..." else text
  }
}

/**
 * The test JVM's SparkContext (see [[SparkSuiteBase]]): started for the first suite, started again
 * only when a suite needs another master; Spark's shutdown hook stops it when the JVM exits.
 */
object SharedSparkContext {
  private var base: SparkSession = _

  /** A new session on a context with `master`. */
  def session(master: String): SparkSession = synchronized {
    if (base != null && base.sparkContext.master != master) {
      base.stop()
      base = null
    }
    if (base == null || base.sparkContext.isStopped) {
      base = SparkSession
        .builder()
        .master(master)
        .appName("sluice-tests")
        .config("spark.sql.shuffle.partitions", "2")
        // a managed table (toTable, saveAsTable) goes here, not into the checkout (Spark's default)
        .config("spark.sql.warehouse.dir", Files.createTempDirectory("sluice-warehouse").toString)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.sql.extensions", "sluice.spark.SluiceExtensions")
        // Spark 4 runs the tasks of an isolated session (the default) under a class loader that
        // asks the driver, over RPC, for each class it cannot find, and Janino asks for many names
        // that are no class while it compiles generated code. The suites add no artifacts to
        // their sessions; the Python suites, the chaos drivers and the examples keep Spark's
        // default, so Sluice's tasks still run under that loader in make test. Parquet and hybrid
        // suites, 4 interleaved pairs: the test JVM's CPU 0.94x (0.91-1.01) without isolation.
        .config("spark.sql.artifact.isolation.enabled", "false")
        .getOrCreate()
      base.sparkContext.setLogLevel("WARN")
    }
    val session = base.newSession()
    SparkSession.setActiveSession(session)
    SparkSession.setDefaultSession(session)
    session
  }
}

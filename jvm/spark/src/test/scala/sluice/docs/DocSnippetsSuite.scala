package sluice.docs

import java.nio.file.{Files, Path, Paths}
import java.sql.Timestamp
import java.time.Instant
import java.util.concurrent.CountDownLatch

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.Row
import org.apache.spark.sql.functions.{col, udf}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.exceptions.TestFailedException
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.connector.generator.GeneratorSource
import sluice.connector.table.delta.DeltaSource
import sluice.testkit.KafkaSuiteBase

/**
 * Every ```scala block of README.md, python/README.md and docs/ runs, as written, against this
 * JVM's broker and a session of its SparkContext, with the contract of the Python snippets
 * (tests/test_doc_snippets.py; `DocRun` says what it checks): `DocSnippets`, generated from the
 * pages by project/DocSnippets.scala, holds each page's snippets as one method, with their
 * markers' givens (`DocGiven`) and checks. Leaving a snippet unrun, or letting its queries read
 * nothing, is a decision: listed here, with the reason its marker gives.
 */
class DocSnippetsSuite extends AnyFunSuite with SparkSuiteBase with KafkaSuiteBase {

  /** Snippets not run, with the reason their marker gives. */
  private val Skipped = Seq(
    // KafkaSecuritySuite reads over mutual TLS and SASL_SSL from its own secured cluster
    "docs/connectors.md" -> "needs a TLS listener, its key stores and their passwords",
    "docs/connectors.md" -> "needs a SASL_SSL listener, a SCRAM user and a trust store")

  /** Snippets whose queries may read nothing (`idle`), with the reason their marker gives: none yet. */
  private val Idle = Seq.empty[(String, String)]

  private lazy val work: Path = tempDir("docs")
  private lazy val givens: DocGiven = new DocGiven(kafka, work).write()

  private val Json = new ObjectMapper()

  private def run(
      waitMs: Long = DocRun.QueryWaitMs,
      pageMs: Long = DocRun.PageMs,
      graceMs: Long = DocRun.GraceMs) =
    new DocRun(spark, givens, work, kafka.bootstrapServers, waitMs, pageMs, graceMs)

  /** A checkpoint no query used before. */
  private def checkpoint(): String = Files.createTempDirectory(work, "checkpoint").toString

  for ((page, body) <- DocSnippets.pages)
    test(s"the Scala snippets of $page run as written") {
      run().page(page, body)
    }

  test("the snippets not run are the listed ones") {
    val skipped = DocSnippets.all.filter(_.skip.isDefined)
    info(
      s"${skipped.size} of ${DocSnippets.all.size} not run: " +
        skipped.map(s => s"${s.where} (${s.skip.get})").mkString("; "))
    assert(skipped.map(s => s.page -> s.skip.get) == Skipped)
    assert(DocSnippets.all.exists(s => s.page == "README.md" && s.skip.isEmpty))
    assert(DocSnippets.all.exists(s => s.page == "docs/hybrid.md" && s.skip.isEmpty))
  }

  test("the snippets that may read nothing are the listed ones") {
    assert(DocSnippets.all.collect { case s if s.idle.isDefined => s.page -> s.idle.get } == Idle)
  }

  test(
    "delta_events is the six events, in a version 0 Delta Kernel committed with its statistics") {
    val dir = Paths.get(givens.delta_events)
    val table = DeltaSource.builder().table(dir.toString).build()
    // the source's own columns (file, row index, modification time) follow the table's
    val read = runToEnd(Sluice.fromSource(spark, table).select("id", "user", "amount", "ts"))
    val events = (0 until 6).map { i =>
      Row(
        i.toLong,
        s"u${i % 3}",
        i * 1.5,
        Timestamp.from(Instant.ofEpochMilli(DocGiven.EventsMs + i * 1000L)))
    }
    assert(multiset(read.rows) == multiset(events))
    val log = dir.resolve("_delta_log")
    val listed = Files.list(log)
    val commits =
      try listed.iterator.asScala.map(_.getFileName.toString).filter(_.endsWith(".json")).toSeq
      finally listed.close()
    assert(commits == Seq("00000000000000000000.json"))
    val actions = Files
      .readAllLines(log.resolve("00000000000000000000.json"))
      .asScala
      .map(Json.readTree)
    val commit = actions.map(_.path("commitInfo")).find(!_.isMissingNode).get
    assert(commit.path("engineInfo").asText.startsWith("Kernel-"), commit)
    val stats = actions.map(_.path("add")).filter(!_.isMissingNode).map { add =>
      Json.readTree(add.path("stats").asText)
    }
    assert(stats.map(_.path("numRecords").asLong) == Seq(6L), stats)
    // the event times' bounds, which place the file in event time when a source is aligned
    assert(stats.head.path("minValues").path("ts").asText == "2023-11-14T22:13:20.000Z", stats)
    assert(stats.head.path("maxValues").path("ts").asText == "2023-11-14T22:13:25.000Z", stats)
  }

  // -- the runner itself: snippets written here as DocSnippets writes a page's -------------------

  /** An `AvailableNow` query over a folder with no files: it ends having read nothing. */
  private def emptyFolder(r: DocRun, idle: Option[String]): Unit = {
    Files.createDirectories(work.resolve("archive/nothing-here"))
    r.begin("example.md:7", idle)
    val files = FileSource
      .builder()
      .path(r.localized("/archive/nothing-here"))
      .format("json")
      .schema("id BIGINT")
      .build()
    Sluice
      .fromSource(r.spark, files)
      .writeStream
      .format("noop")
      .option("checkpointLocation", r.localized("/checkpoints/nothing-here"))
      .trigger(Trigger.AvailableNow())
      .start()
      .awaitTermination(SparkSuiteBase.WaitMs)
    r.end()
  }

  test("a snippet whose query read nothing fails, naming its page, line and source") {
    val failed =
      intercept[TestFailedException](run(waitMs = 3000).page("example.md", emptyFolder(_, None)))
    assert(
      failed.getMessage.matches(
        "(?s)example.md:7 started queries whose sources did not all read rows in 3000 ms " +
          """\(read nothing: [-\w]+: source 0 \(SluiceMicroBatchStream.*"""),
      failed.getMessage)
  }

  test("a snippet marked idle may read nothing") {
    val started =
      run(waitMs = 3000).page("example.md", emptyFolder(_, Some("the folder is empty")))
    assert(started.size == 1)
  }

  test("a snippet whose query fails after it returned is reported with its page and line") {
    val failed = intercept[TestFailedException](
      run().page(
        "example.md",
        { r =>
          r.begin("example.md:3", None)
          val source = GeneratorSource.builder().splits(1).recordsPerSplit(5).build()
          Sluice
            .fromSource(r.spark, source)
            .writeStream
            .foreachBatch { (_: org.apache.spark.sql.DataFrame, id: Long) =>
              throw new IllegalStateException(s"the sink refused batch $id")
            }
            .start()
          r.end()
        }))
    assert(
      failed.getMessage.matches(
        "(?s)example.md:3 started a query that failed: .*the sink refused batch 0.*"),
      failed.getMessage)
  }

  test("a snippet that throws is reported with its page and line") {
    val failed = intercept[TestFailedException](
      run().page(
        "example.md",
        { r =>
          r.begin("example.md:11", None)
          FileSource.builder().path(r.localized("/archive/events")).format("yaml").build()
          r.end()
        }))
    assert(
      failed.getMessage.startsWith("example.md:11 does not run as written: "),
      failed.getMessage)
    assert(failed.getMessage.contains("yaml"), failed.getMessage)
  }

  test("rowsRead reads its stream from its start on every page, in a checkpoint of its own") {
    def rowsRead(): Long = {
      var read = 0L
      run().page(
        "example.md",
        { r =>
          r.begin("example.md:13", None)
          val source = GeneratorSource.builder().splits(2).recordsPerSplit(50).build()
          read = r.checks.rowsRead(Sluice.fromSource(r.spark, source))
          r.end()
        })
      read
    }
    assert(Seq(rowsRead(), rowsRead()) == Seq(100L, 100L))
  }

  test("a page that outlives its deadline fails, naming where it waited, and stops its queries") {
    val overdue = run(pageMs = 2000)
    val failed = intercept[TestFailedException](
      overdue.page(
        "example.md",
        { r =>
          r.begin("example.md:5", None)
          // a stream with no end, waited on without bound: only the watchdog's stop returns it
          Sluice
            .fromSource(r.spark, r.givens.kafka_orders)
            .writeStream
            .format("noop")
            .option("checkpointLocation", checkpoint())
            .start()
            .awaitTermination()
          r.end()
        }))
    assert(
      failed.getMessage.startsWith(
        "example.md:5 did not end within 2000 ms, example.md's deadline: its queries were stopped"),
      failed.getMessage)
    assert(overdue.spark.streams.active.isEmpty)
  }

  test(
    "a page blocked on something other than a query is given up, naming the frames it waits in") {
    val never = new CountDownLatch(1)
    val failed = intercept[TestFailedException](
      run(pageMs = 1000, graceMs = 1000).page(
        "example.md",
        { r =>
          r.begin("example.md:3", None)
          never.await() // no query to stop: only giving the page's thread up returns the build
        }))
    val message = failed.getMessage
    assert(
      message.startsWith(
        "example.md:3 did not end within 1000 ms, example.md's deadline: its queries were stopped"),
      message)
    assert(message.contains("Then: still blocked after 2000 ms, at:"), message)
    assert(message.contains("CountDownLatch.await"), message)
  }

  test("a snippet that fails once its queries were stopped at the deadline keeps its own error") {
    val failed = intercept[TestFailedException](
      run(pageMs = 1000).page(
        "example.md",
        { r =>
          r.begin("example.md:4", None)
          val q = Sluice
            .fromSource(r.spark, r.givens.kafka_orders)
            .writeStream
            .format("noop")
            .option("checkpointLocation", checkpoint())
            .start()
          q.awaitTermination()
          throw new IllegalStateException("the snippet's own fault")
        }))
    assert(
      failed.getMessage.startsWith("example.md:4 did not end within 1000 ms"),
      failed.getMessage)
    assert(
      failed.getMessage.contains("Then: example.md:4 does not run as written"),
      failed.getMessage)
    // the snippet's error is the cause, not replaced by the deadline's message
    val causes = Iterator.iterate[Throwable](failed)(_.getCause).takeWhile(_ != null).toSeq
    assert(causes.exists(_.getMessage == "the snippet's own fault"), causes)
  }

  /** An `AvailableNow` query over the union of one file source per folder. */
  private def unionOfFolders(r: DocRun, folders: String*): Unit = {
    r.begin("example.md:9", None)
    val files = folders.map { folder =>
      val source =
        FileSource.builder().path(r.localized(folder)).format("json").schema("id BIGINT").build()
      Sluice.fromSource(r.spark, source)
    }
    files
      .reduce(_ unionByName _)
      .writeStream
      .format("noop")
      .option("checkpointLocation", checkpoint())
      .trigger(Trigger.AvailableNow())
      .start()
      .awaitTermination(SparkSuiteBase.WaitMs)
    r.end()
  }

  test("every source of a query must read: a second one that reads nothing fails the snippet") {
    Files.createDirectories(work.resolve("archive/nothing-here"))
    val failed = intercept[TestFailedException](
      run(waitMs = 3000)
        .page("example.md", unionOfFolders(_, "/archive/events/", "/archive/nothing-here/")))
    assert(
      failed.getMessage.matches(
        """(?s)example.md:9 started queries whose sources did not all read rows in 3000 ms """ +
          """\(read nothing: [-\w]+: source 1 \(SluiceMicroBatchStream.*"""),
      failed.getMessage)
    assert(!failed.getMessage.contains("source 0"), failed.getMessage)
  }

  /**
   * A query over a folder with no files, with no end: it runs no batch, and goes idle. Spark's own
   * file stream, as Sluice's reports a batch of no rows when its enumerator's state moves: then a
   * progress, not only `onQueryIdle`, would say the query triggered.
   */
  private def idleFolder(r: DocRun, idle: Option[String]): Unit = {
    val folder = Files.createDirectories(work.resolve("archive/nothing-here"))
    // Spark reports a query idle after 10 s without data by default
    r.spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200ms")
    r.begin("example.md:7", idle)
    r.spark.readStream
      .schema("id BIGINT")
      .json(folder.toString)
      .writeStream
      .format("noop")
      .option("checkpointLocation", checkpoint())
      .start()
    r.end()
  }

  test("a query that only went idle did not run") {
    val failed =
      intercept[TestFailedException](run(waitMs = 3000).page("example.md", idleFolder(_, None)))
    assert(
      failed.getMessage.startsWith(
        "example.md:7 started queries whose sources did not all read rows in 3000 ms"),
      failed.getMessage)
  }

  test("a snippet marked idle passes once its query went idle, without reading a row") {
    val started =
      run(waitMs = 30000).page("example.md", idleFolder(_, Some("the folder is empty")))
    assert(started.size == 1)
  }

  test("a page's settings, views and functions do not outlive it") {
    run().page(
      "example.md",
      { r =>
        r.begin("example.md:3", None)
        r.spark.conf.set("spark.sluice.forceTimestampSupport", "false")
        r.spark.conf.set("spark.sql.shuffle.partitions", "3")
        r.spark.range(3).createOrReplaceTempView("doc_page_view")
        r.spark.udf.register("doc_page_udf", (x: Long) => x + 1)
        r.end()
      })
    assert(spark.conf.getOption("spark.sluice.forceTimestampSupport").isEmpty)
    assert(spark.conf.get("spark.sql.shuffle.partitions") != "3")
    assert(!spark.catalog.tableExists("doc_page_view"))
    assert(!spark.catalog.functionExists("doc_page_udf"))
  }

  test("a check's query that does not end fails, naming the page and line of its snippet") {
    val gate = new CountDownLatch(1)
    DocSnippetsSuite.gate = gate
    try {
      val failed = intercept[TestFailedException](
        run(waitMs = 2000).page(
          "example.md",
          { r =>
            r.begin("example.md:13", None)
            val source = GeneratorSource.builder().splits(1).recordsPerSplit(5).build()
            // its one batch waits at the gate: the query cannot end before the check gives up
            val held = udf { (id: Long) => DocSnippetsSuite.gate.await(); id }
            r.checks.rowsRead(Sluice.fromSource(r.spark, source).select(held(col("id"))))
            r.end()
          }))
      assert(
        failed.getMessage.startsWith(
          "example.md:13: rowsRead's query did not end within 2000 ms"),
        failed.getMessage)
    } finally gate.countDown()
  }
}

object DocSnippetsSuite {

  /** Where a test's tasks wait (tasks of this local session run in the suite's JVM). */
  @volatile var gate: CountDownLatch = new CountDownLatch(0)
}

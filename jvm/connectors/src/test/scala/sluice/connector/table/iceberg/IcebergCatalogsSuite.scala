package sluice.connector.table.iceberg

import java.nio.file.Files
import java.util.concurrent.{Callable, Executors, ThreadFactory, TimeUnit}

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{PartitionSpec, Schema, Table}
import org.apache.iceberg.catalog.{Namespace, TableIdentifier}
import org.apache.iceberg.hadoop.HadoopCatalog
import org.apache.iceberg.types.Types
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.table.iceberg.IcebergCatalogs.CatalogSpec
import sluice.config.ConfigOption
import sluice.errors.{SluiceConfigException, SluiceRuntimeException}

/**
 * The catalog cache without Spark: catalogs iceberg-core builds (a REST catalog pointed at a
 * server on 127.0.0.1 that accepts and never answers, Hadoop catalogs on a temporary folder).
 */
class IcebergCatalogsSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private lazy val warehouse = Files.createTempDirectory("sluice-iceberg-catalogs").toUri.toString

  private val threads = Executors.newCachedThreadPool(new ThreadFactory {
    override def newThread(r: Runnable): Thread = {
      val t = new Thread(r, "iceberg-catalogs-suite")
      t.setDaemon(true) // a stalled build must not keep the test JVM alive
      t
    }
  })

  private def async[T](body: => T) = threads.submit(new Callable[T] { def call(): T = body })

  /** Polls `done` every 20 ms until `seconds` pass. */
  private def await(seconds: Int, what: String)(done: => Boolean): Unit = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds.toLong)
    while (!done) {
      assert(System.nanoTime() < deadline, s"after $seconds s: $what")
      Thread.sleep(20)
    }
  }

  test(
    "a catalog that never answers holds no other catalog's build, one in its cache bin neither") {
    val silent = new SilentServer
    try {
      def stalled(i: Int) = CatalogSpec(
        "stalled",
        Map(
          "type" -> "rest",
          "uri" -> s"http://127.0.0.1:${silent.port}",
          "test.variant" -> s"$i"))
      def other(i: Int) =
        CatalogSpec(
          "other",
          Map("type" -> "hadoop", "warehouse" -> warehouse, "test.variant" -> s"$i"))
      val hadoop = IcebergCatalogs.keyOf(stalled(0), conf).hadoop // one digest of the settings
      def hash(s: CatalogSpec) = new IcebergCatalogs.CatalogKey(s, hadoop).hashCode
      // two keys of one hash share a bin of the cache's map whatever its size (a birthday search:
      // 2^17 hashes of one side, about 2^15 tries of the other)
      val byHash = (0 until (1 << 17)).map(i => hash(stalled(i)) -> i).toMap
      val (a, b) = Iterator
        .from(0)
        .flatMap(j => byHash.get(hash(other(j))).map(_ -> j))
        .next()
      assert(hash(stalled(a)) == hash(other(b)))

      // bounded far beyond the test: the build stays blocked on the server
      val first =
        async(IcebergCatalogs.catalog(stalled(a), conf, 3600000L, "db.t", later = false))
      await(30, "the REST catalog never connected")(silent.connections > 0)
      val second = async(IcebergCatalogs.catalog(other(b), conf, 30000L, "db.t", later = false))
      val built =
        second.get(30, TimeUnit.SECONDS) // blocked behind the stalled build before the fix
      assert(built.isInstanceOf[HadoopCatalog])
      assert(!first.isDone, "the REST catalog's build was expected to still wait for its server")
      assert(
        IcebergCatalogs.catalog(other(b), conf, 30000L, "db.t", later = false) eq built
      ) // kept
    } finally silent.close()
  }

  /**
   * The time `body` takes to fail with a runtime fault, and that fault; run on a thread of its
   * own and waited for 20 s at most, so that a call left unbounded fails the test instead of
   * hanging it.
   */
  private def timedFailure(body: => Any): (Long, SluiceRuntimeException) = {
    val start = System.nanoTime()
    val call = async(body)
    val failed =
      try {
        call.get(20, TimeUnit.SECONDS)
        fail("no failure")
      } catch {
        case e: java.util.concurrent.ExecutionException
            if e.getCause.isInstanceOf[SluiceRuntimeException] =>
          e.getCause.asInstanceOf[SluiceRuntimeException]
        case _: java.util.concurrent.TimeoutException =>
          call.cancel(true)
          fail("still waiting for the catalog after 20 s")
      }
    (TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), failed)
  }

  /**
   * `call` to a catalog that does not answer fails after catalogTimeoutMs (1500 ms) as a runtime
   * fault naming the catalog, what it was doing and the option, once `reached` says the call
   * reached the catalog's server.
   */
  private def assertTimesOut(catalog: String, doing: String, reached: => Boolean)(
      call: => Any): Unit = {
    val (ms, failed) = timedFailure(call)
    assert(reached, s"$doing never reached the catalog's server")
    assert(ms >= 1500L && ms < 20000L, s"failed after $ms ms")
    Seq(
      s"Iceberg catalog '$catalog'",
      "did not answer within 1500 ms (option 'catalogTimeoutMs')",
      s"while $doing for table 'db.t'").foreach { part =>
      assert(failed.getMessage.contains(part), failed.getMessage)
    }
  }

  test(
    "a call its caller stops waiting for (a query stopped while planning) hands its result to late") {
    val started = new java.util.concurrent.CountDownLatch(1)
    val release = new java.util.concurrent.CountDownLatch(1)
    val late = new java.util.concurrent.LinkedBlockingQueue[String]()
    val caller = Executors.newSingleThreadExecutor()
    try {
      val waiting = caller.submit(new Callable[Option[String]] {
        override def call(): Option[String] = BoundedCalls.within(60000) {
          started.countDown()
          // as a library blocked in a socket read: an interrupt does not end it
          var done = false
          while (!done)
            try done = release.await(60, TimeUnit.SECONDS)
            catch { case _: InterruptedException => () }
          "built"
        }(late.put)
      })
      assert(started.await(30, TimeUnit.SECONDS), "the call did not start")
      caller.shutdownNow() // interrupts the caller in its wait
      val stopped =
        intercept[java.util.concurrent.ExecutionException](waiting.get(30, TimeUnit.SECONDS))
      assert(stopped.getCause.isInstanceOf[InterruptedException], stopped.getCause)
      release.countDown()
      assert(late.poll(30, TimeUnit.SECONDS) == "built", "the result went to no one")
    } finally caller.shutdownNow()
  }

  test("building a catalog that never answers fails after catalogTimeoutMs, naming it") {
    val silent = new SilentServer
    try {
      val spec =
        CatalogSpec("silent", Map("type" -> "rest", "uri" -> s"http://127.0.0.1:${silent.port}"))
      assertTimesOut("silent", "building it", silent.connections > 0) {
        IcebergCatalogs.catalog(spec, conf, 1500L, "db.t", later = false)
      }
    } finally silent.close()
  }

  /** The table `db.t` of `catalog`, loaded through the cache of catalogs, bounded by 1500 ms. */
  private def loaded[T](spec: CatalogSpec, later: Boolean)(use: Table => T): T =
    IcebergCatalogs.withTable(spec, "db.t", conf, 1500L, later)(use)

  test(
    "loading a table from a catalog that stops answering fails after catalogTimeoutMs, naming it") {
    val server = new StallingRestServer
    try {
      val spec = CatalogSpec("stalling", Map("type" -> "rest", "uri" -> server.uri))
      assertTimesOut("stalling", "loading the table", server.stalled > 0) {
        loaded(spec, later = false)(identity)
      }
    } finally server.close()
  }

  test(
    "a catalog whose table load timed out is dropped: once its service answers again, a fresh one loads the table") {
    // a Hadoop catalog holds the table the REST server serves
    val served = new HadoopCatalog(conf, warehouse)
    val id = TableIdentifier.of("db", "recovering")
    if (!served.namespaceExists(Namespace.of("db"))) served.createNamespace(Namespace.of("db"))
    val uuid = served
      .createTable(
        id,
        new Schema(Types.NestedField.optional(1, "id", Types.LongType.get)),
        PartitionSpec.unpartitioned)
      .uuid
    val server = new StallingRestServer(Some(served))
    try {
      // a pool of one connection, as a small JDBC pool: the load that hangs holds it
      val spec = CatalogSpec(
        "recovering",
        Map("type" -> "rest", "uri" -> server.uri, "rest.client.connections-per-route" -> "1"))
      def load() =
        IcebergCatalogs.withTable(spec, "db.recovering", conf, 1500L, later = true)(_.uuid)
      assert(load() == uuid)
      val first = IcebergCatalogs.catalog(spec, conf, 1500L, "db.recovering", later = true)
      server.stall()
      val (_, failed) = timedFailure(load())
      assert(server.stalled == 1)
      assert(failed.getMessage.contains("did not answer within 1500 ms"), failed.getMessage)
      // the request it stalled stays unanswered: the kept catalog's one connection would wait
      // for it, and every later load time out, before the fix
      server.recover()
      assert(load() == uuid)
      assert(IcebergCatalogs.catalog(spec, conf, 1500L, "db.recovering", later = true) ne first)
    } finally server.close()
  }

  private def gated(name: String) =
    CatalogSpec(name, Map("catalog-impl" -> classOf[GatedCatalog].getName, "test.gate" -> name))

  test("a catalog whose table load fails at a later plan is dropped and closed") {
    val spec = gated("failing-later")
    val gate = GatedCatalog.gate("failing-later")
    val first = IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = false)
    gate.failing = true
    val failed = intercept[SluiceRuntimeException](loaded(spec, later = true)(identity))
    assert(failed.getMessage.contains("the catalog's service failed"), failed.getMessage)
    await(30, "the dropped catalog was not closed")(gate.closes.get >= 1)
    gate.failing = false
    assert(loaded(spec, later = true)(_.name) == "failing-later.db.t")
    assert(IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = true) ne first)
  }

  test(
    "a catalog whose load is interrupted (its query stopped while the load waited) is dropped") {
    val spec = gated("interrupted")
    val gate = GatedCatalog.gate("interrupted")
    val first = IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = false)
    gate.holding = true
    val thrown = new java.util.concurrent.atomic.AtomicReference[Throwable]()
    val finished = new java.util.concurrent.CountDownLatch(1)
    // a query's planning thread, stopped (interrupted) while the catalog holds its load
    val planning = new Thread(() =>
      try IcebergCatalogs.withTable(spec, "db.t", conf, 60000L, later = true)(_.name)
      catch { case e: Throwable => thrown.set(e) }
      finally finished.countDown())
    planning.setDaemon(true)
    planning.start()
    await(30, "the load was not held")(gate.held.get == 1)
    planning.interrupt()
    assert(finished.await(30, TimeUnit.SECONDS), "the interrupted load did not return")
    assert(thrown.get.isInstanceOf[InterruptedException], String.valueOf(thrown.get))
    gate.holding = false
    // the abandoned load may hold the catalog's pooled connection: the next load builds afresh
    assert(loaded(spec, later = true)(_.name) == "interrupted.db.t")
    assert(IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = true) ne first)
    await(30, "the dropped catalog was not closed")(gate.closes.get >= 1)
  }

  test("a catalog that answers that a table is missing is kept for the loads of other tables") {
    val spec = gated("missing")
    val gate = GatedCatalog.gate("missing")
    val first = IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = false)
    // another query's `table` with a typo, at its build and at a later plan
    for (later <- Seq(false, true)) {
      // a configuration error at the build, a source fault at a later plan
      val failed = intercept[RuntimeException](
        IcebergCatalogs.withTable(spec, "db.typo", conf, 30000L, later)(identity))
      assert(failed.getMessage.contains("cannot load table 'db.typo'"), failed.getMessage)
      assert(failed.getMessage.contains("Table does not exist: db.typo"), failed.getMessage)
    }
    assert(loaded(spec, later = true)(_.name) == "missing.db.t")
    assert(IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = true) eq first)
    assert(gate.closes.get == 0, "the catalog that answered was closed")
  }

  test(
    "a catalog dropped while another caller uses a table loaded from it is closed once that caller is done") {
    val spec = gated("shared")
    val gate = GatedCatalog.gate("shared")
    val inside = new java.util.concurrent.CountDownLatch(1)
    val proceed = new java.util.concurrent.CountDownLatch(1)
    // a query planning from the table (its manifests read through the catalog's FileIO)
    val planning =
      async(IcebergCatalogs.withTable(spec, "db.t", conf, 60000L, later = true) { t =>
        gate.inUse = true
        inside.countDown()
        proceed.await(30, TimeUnit.SECONDS)
        gate.inUse = false
        t.name
      })
    assert(inside.await(30, TimeUnit.SECONDS), "the first load did not return")
    gate.holding = true
    // another query's load of the same catalog hangs and runs out of its time: the catalog is dropped
    val (_, failed) = timedFailure(loaded(spec, later = true)(identity))
    assert(failed.getMessage.contains("did not answer within 1500 ms"), failed.getMessage)
    assert(gate.held.get == 1)
    gate.holding = false
    proceed.countDown()
    assert(planning.get(30, TimeUnit.SECONDS) == "shared.db.t")
    await(30, "the dropped catalog was not closed")(gate.closes.get >= 1)
    assert(!gate.closedInUse, "the catalog was closed while a table loaded from it was in use")
  }

  test(
    "a catalog is kept per Hadoop settings: other settings build another, Spark's own do not") {
    val spec = CatalogSpec("settings", Map("type" -> "hadoop", "warehouse" -> warehouse))
    def confWith(settings: (String, String)*) = {
      val c = new Configuration()
      settings.foreach { case (k, v) => c.set(k, v) }
      c
    }
    val first = IcebergCatalogs.catalog(
      spec,
      confWith("fs.sluice-test.setting" -> "a"),
      30000L,
      "db.t",
      later = false)
    val other = IcebergCatalogs.catalog(
      spec,
      confWith("fs.sluice-test.setting" -> "b"),
      30000L,
      "db.t",
      later = false)
    assert(other ne first, "a catalog built with other Hadoop settings was the first one's")
    assert(other.asInstanceOf[HadoopCatalog].getConf.get("fs.sluice-test.setting") == "b")
    // equal settings in another object, or only Spark's own settings (spark.*) differing: kept
    val same = confWith("fs.sluice-test.setting" -> "a", "spark.sql.adaptive.enabled" -> "false")
    assert(IcebergCatalogs.catalog(spec, same, 30000L, "db.t", later = false) eq first)
  }

  /** A token whose URL-encoded and JSON-escaped forms differ from it. */
  private val token = """tk-3e9a p@ss/w"rd\&never-shown"""

  /** Everything a stack trace of `e` prints: messages of causes and suppressed exceptions too. */
  private def printed(e: Throwable): String = {
    val w = new java.io.StringWriter()
    e.printStackTrace(new java.io.PrintWriter(w))
    w.toString
  }

  private def failedBuild(failure: String, more: (String, String)*): SluiceConfigException = {
    val spec = CatalogSpec(
      "failing",
      Map(
        "catalog-impl" -> classOf[FailingCatalog].getName,
        "token" -> token,
        "test.failure" -> failure) ++ more)
    intercept[SluiceConfigException](
      IcebergCatalogs.catalog(spec, conf, 30000L, "db.t", later = false))
  }

  private def assertNoFormOfTheToken(text: String): Unit =
    Seq("tk-3e9a", "p%40ss", "p@ss").foreach(part => assert(!text.contains(part), text))

  test("a credential a library's error writes URL-encoded or JSON-escaped is masked") {
    val failed = failedBuild("encoded")
    assert(
      failed.getMessage.contains(
        "GET https://catalog.test/v1/config?token=*** failed; body {\"token\": \"***\"}"),
      failed.getMessage)
    assertNoFormOfTheToken(printed(failed))
    // the library's exception is kept, masked, naming its class
    assert(failed.getCause.getMessage.startsWith("java.lang.IllegalStateException: GET"))
  }

  test("a credential in an exception the library's error suppressed is masked") {
    val failed = failedBuild("suppressed")
    assert(failed.getMessage.contains("cannot reach the catalog"), failed.getMessage)
    val trace = printed(failed)
    assert(trace.contains("Suppressed: "), trace) // the suppressed exception is still shown
    assert(trace.contains("closing the session of *** failed"), trace)
    assertNoFormOfTheToken(trace)
  }

  test("a credential a library's error writes percent-encoded as a URI does is masked") {
    val failed = failedBuild("uri")
    // the URI's form leaves '@' and '/' as they are, which URL-encoding does not
    assert(
      failed.getMessage.contains("GET https://catalog.test/v1/tokens/***?token=*** failed"),
      failed.getMessage)
    assertNoFormOfTheToken(printed(failed))
  }

  test(
    "a credential an HTTP client writes in a URL's user information, mixing forms, is masked") {
    // '+' and '&' as they are, '@', '/', '[', ']' and the space encoded: neither the URL- nor
    // the URI-encoded form of the token, and a form no other test writes
    val mixed = "tk-5c1d p+ss[@]/w0rd&never-shown"
    val failed = failedBuild("userinfo", "token" -> mixed)
    assert(
      failed.getMessage.contains("GET https://reader:***@catalog.test/v1/config failed"),
      failed.getMessage)
    Seq("tk-5c1d", "p+ss", "w0rd").foreach(part => assert(!printed(failed).contains(part)))
  }

  test("a secret whose forms would make the mask backtrack without end withholds the message") {
    // each backslash of the secret is one backslash or JSON's two: a text of backslashes that
    // never ends the secret gives the pattern ~2^40 ways to try
    val secret = "\\" * 40 + "x"
    val spec = CatalogSpec("slow", Map("token" -> secret))
    val text = "GET failed: " + "\\" * 80 + "y"
    val began = System.nanoTime()
    assert(CatalogSecrets.redact(text, spec) == CatalogSecrets.Withheld)
    assert(System.nanoTime() - began < 30000000000L, "the mask took more than 30 s")
    assert(CatalogSecrets.redact(s"token=$secret", spec) == s"token=${ConfigOption.Mask}")
  }

  test(
    "the secret of a credential given as id:secret is masked where a library prints it alone") {
    val secret = "cs-91b2 s3cr@t/never-shown"
    val failed = failedBuild("credential", "credential" -> s"client-7f3e:$secret")
    assert(
      failed.getMessage.contains("client 'client-7f3e' rejected: secret *** is not valid"),
      failed.getMessage)
    assert(!printed(failed).contains("cs-91b2"), printed(failed))
  }
}

package sluice.connector.table.iceberg

import java.io.ByteArrayOutputStream

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{CatalogUtil, PartitionSpec, Schema, Table}
import org.apache.iceberg.catalog.{Namespace, SupportsNamespaces, TableIdentifier}
import org.apache.iceberg.data.{GenericRecord, IcebergGenerics, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.parquet.Parquet
import org.apache.iceberg.types.Types
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.SecretCapture.{capturingLogs, filesUnder, stackTrace}
import sluice.errors.{SluiceConfigException, SluiceRuntimeException}

/**
 * The Scala builder's `catalog`: a table iceberg-core's own JdbcCatalog created on sqlite (the
 * driver is a test dependency; users add it with --packages), read by its identifier against
 * Iceberg's own generic reader of it; the password is in no string of the source or its config,
 * nor in an error that quotes the JDBC driver's message (which names the URI).
 */
class IcebergCatalogSuite extends AnyFunSuite with SparkSuiteBase {

  private val password = "scala-pw-4d7a-never-shown"
  private lazy val dir = tempDir("iceberg-catalog")

  private def properties(db: String): Map[String, String] = Map(
    "type" -> "jdbc",
    "uri" -> s"jdbc:sqlite:${dir.resolve(db)}",
    "warehouse" -> dir.resolve("warehouse").toUri.toString,
    "jdbc.password" -> password)

  private val schema = new Schema(Types.NestedField.optional(1, "id", Types.LongType.get))

  private lazy val table: Table = tableIn(properties("c.db"))

  /** A Hadoop catalog: tables under a warehouse folder, named by their folders. */
  private lazy val hadoopProperties =
    Map("type" -> "hadoop", "warehouse" -> dir.resolve("hadoop-warehouse").toUri.toString)

  /** Table db.t with ids 0-11 in one data file, created and appended by the catalog itself. */
  private def tableIn(properties: Map[String, String]): Table = {
    val catalog =
      CatalogUtil.buildIcebergCatalog("scala_cat", properties.asJava, new Configuration())
    catalog.asInstanceOf[SupportsNamespaces].createNamespace(Namespace.of("db"))
    val t =
      catalog.createTable(TableIdentifier.of("db", "t"), schema, PartitionSpec.unpartitioned)
    append(t, "a", 0L until 12L)
    t
  }

  /** Appends data file `name` with `ids`, written by Iceberg's own Parquet writer. */
  private def append(t: Table, name: String, ids: Seq[Long]): Unit = {
    val writer = Parquet
      .writeData(t.io.newOutputFile(s"${t.location}/data/$name.parquet"))
      .forTable(t)
      .withSpec(t.spec)
      .createWriterFunc(GenericParquetWriter.create _)
      .overwrite()
      .build[Record]()
    try
      ids.foreach { id =>
        val r = GenericRecord.create(schema)
        r.setField("id", id)
        writer.write(r)
      }
    finally writer.close()
    t.newAppend().appendFile(writer.toDataFile).commit()
  }

  test("a table by its identifier in a JDBC catalog given by properties reads Iceberg's rows") {
    val records = IcebergGenerics.read(table).build()
    val expected =
      try records.asScala.map(r => Row(r.getField("id"))).toSeq
      finally records.close()
    val source =
      IcebergSource.builder().catalog("scala_cat", properties("c.db")).table("db.t").build()
    val got = Sluice.read(spark, source).select("id").collect().toSeq
    assert(got.sortBy(_.getLong(0)) == expected.sortBy(_.getLong(0)))
    assert(got.size == 12)
    assert(source.toString.startsWith("IcebergSource(db.t in scala_cat, snapshot "))
    Seq(source.toString, source.config.toString, source.config.parquet.toString).foreach { s =>
      assert(!s.contains(password), s)
    }
  }

  test(
    "a table by its identifier in a Hadoop catalog given by properties, appends read unbounded") {
    val t = tableIn(hadoopProperties)
    val source = IcebergSource
      .builder()
      .catalog("scala_cat", hadoopProperties)
      .table("db.t")
      .monitorIntervalMs(100)
      .build()
    val query = Sluice
      .fromSource(spark, source)
      .select("id")
      .writeStream
      .format("memory")
      .queryName("iceberg_hadoop_catalog")
      .option("checkpointLocation", tempDir("iceberg-hadoop-ckpt").toString)
      .start()
    try {
      query.processAllAvailable()
      append(t, "b", 12L until 20L) // committed through the catalog while the query runs
      // the append is planned at the next monitor interval: polled, with a bound
      def got = spark.table("iceberg_hadoop_catalog").collect().map(_.getLong(0)).toSeq.sorted
      val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
      while (got.size < 20 && System.nanoTime() < deadline) Thread.sleep(100)
      assert(got == (0L until 20L))
    } finally query.stop()
  }

  test("an error quoting the JDBC driver names no credential") {
    table // the catalog exists; this one names a folder that does not
    val failed = intercept[SluiceConfigException] {
      IcebergSource
        .builder()
        .catalog("scala_cat", properties(s"missing-$password/c.db"))
        .table("db.t")
        .build()
    }
    assert(
      failed.getMessage.contains("cannot build Iceberg catalog 'scala_cat'"),
      failed.getMessage)
    assert(failed.getMessage.contains("***"), failed.getMessage)
    Iterator.iterate[Throwable](failed)(_.getCause).takeWhile(_ != null).foreach { e =>
      assert(!String.valueOf(e.getMessage).contains(password), e.getMessage)
    }
  }

  test("the password appears in no log, stack trace, checkpoint or query progress") {
    val ckpt = tempDir("iceberg-catalog-ckpt")
    val ((progress, failure), logs) = capturingLogs {
      val source = IcebergSource
        .builder()
        .catalog("scala_cat", properties("c.db"))
        .table("db.t")
        .monitorIntervalMs(100)
        .build()
      val query = Sluice
        .fromSource(spark, source)
        .writeStream
        .format("memory")
        .queryName("iceberg_catalog_secrets")
        .option("checkpointLocation", ckpt.toString)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(query)
      val progress = query.recentProgress.map(_.json).mkString("\n")
      val failure =
        try {
          IcebergSource
            .builder()
            .catalog("scala_cat", properties("c.db"))
            .table("db.none")
            .build()
          "no failure"
        } catch { case e: SluiceConfigException => stackTrace(e) }
      (progress, failure)
    }
    assert(spark.table("iceberg_catalog_secrets").count() == 12)
    assert(failure.contains("cannot load table 'db.none'"), failure)
    Seq(
      "logs" -> logs,
      "query progress" -> progress,
      "the refusal's stack trace" -> failure,
      "checkpoint (offset log, commits, progress store)" -> filesUnder(ckpt)).foreach {
      case (where, text) => assert(!text.contains(password), s"the password is in the $where")
    }
  }

  /** What `df.explain(true)` prints. */
  private def explained(explain: => Unit): String = {
    val out = new ByteArrayOutputStream()
    Console.withOut(out)(explain)
    out.toString("UTF-8")
  }

  test(
    "a catalog header Spark's redaction does not match is in no explain(), progress, checkpoint or log") {
    // a REST catalog's header: Spark's redaction patterns match neither its name nor its value
    val header = "Bearer header-7c2e-never-shown"
    table // created
    val withHeader = properties("c.db") + ("header.Authorization" -> header)
    def builder() = IcebergSource.builder().catalog("scala_cat", withHeader).table("db.t")
    val ckpt = tempDir("iceberg-catalog-header-ckpt")
    val (shown, logs) = capturingLogs {
      val stream: DataFrame = Sluice.fromSource(spark, builder().monitorIntervalMs(100).build())
      val batch: DataFrame = Sluice.read(spark, builder().build())
      // as options of format("sluice"), as a user may give them
      val raw = spark.readStream
        .format("sluice")
        .options(builder().build().options)
        .load()
      val plans = Seq(stream, batch, raw).map(df => explained(df.explain(true)))
      assert(batch.count() == 12)
      val query = stream.writeStream
        .format("memory")
        .queryName("iceberg_catalog_header")
        .option("checkpointLocation", ckpt.toString)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(query)
      plans ++ Seq(
        explained(query.explain(true)),
        stream.queryExecution.toString,
        query.recentProgress.map(_.json).mkString("\n"))
    }
    assert(spark.table("iceberg_catalog_header").count() == 12)
    // the option is in the streams' plans (a batch relation's plan shows no options), its value masked
    Seq(shown(0), shown(2)).foreach { plan =>
      assert(plan.contains("catalog.header.Authorization=***"), plan)
    }
    Seq(
      "explain(true) of the stream" -> shown(0),
      "explain(true) of the batch read" -> shown(1),
      "explain(true) of a format(\"sluice\") read" -> shown(2),
      "the started query's explain(true)" -> shown(3),
      "the stream's query execution" -> shown(4),
      "query progress" -> shown(5),
      "logs" -> logs,
      "checkpoint" -> filesUnder(ckpt)).foreach { case (where, text) =>
      assert(
        !text.contains(header) && !text.contains("header-7c2e"),
        s"the header is in the $where")
    }
  }

  test("a catalog that never answers fails the source's build after catalogTimeoutMs") {
    val silent = new SilentServer // accepts, never answers
    try {
      val started = System.nanoTime()
      val failed = intercept[SluiceRuntimeException] {
        IcebergSource
          .builder()
          .catalog(
            "silent_cat",
            Map("type" -> "rest", "uri" -> s"http://127.0.0.1:${silent.port}"))
          .table("db.t")
          .catalogTimeoutMs(1500)
          .build()
      }
      val ms = (System.nanoTime() - started) / 1000000
      assert(ms >= 1500 && ms < 30000, s"failed after $ms ms")
      assert(
        failed.getMessage.contains(
          "IcebergSource: Iceberg catalog 'silent_cat' (properties type, uri) did not answer within " +
            "1500 ms (option 'catalogTimeoutMs') while building it for table 'db.t'"),
        failed.getMessage)
    } finally silent.close()
  }

  /**
   * Table db.t of the catalog `properties` describe, read unbounded (`builder` sets the rest) into
   * a Parquet sink at `out`: a sink a query restarts on (the memory sink does not).
   */
  private def startUnbounded(
      properties: Map[String, String],
      ckpt: java.nio.file.Path,
      out: java.nio.file.Path)(builder: IcebergSource.Builder => IcebergSource.Builder) =
    Sluice
      .fromSource(
        spark,
        builder(IcebergSource.builder().catalog("scala_cat", properties).table("db.t"))
          .monitorIntervalMs(100)
          .build())
      .select("id")
      .writeStream
      .format("parquet")
      .option("path", out.toString)
      .option("checkpointLocation", ckpt.toString)
      .start()

  /** The ids in the Parquet sink at `out`, sorted, once it holds `n` rows or 60 s passed (polled). */
  private def idsIn(out: java.nio.file.Path, n: Int): Seq[Long] = {
    def got = spark.read.parquet(out.toString).collect().map(_.getLong(0)).toSeq.sorted
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (got.size < n && System.nanoTime() < deadline) Thread.sleep(100)
    got
  }

  /** The source fault (`SLUICE_SOURCE_FAULT`) a query failed with: its message. */
  private def sourceFault(query: org.apache.spark.sql.streaming.StreamingQuery): String = {
    val e = intercept[org.apache.spark.sql.streaming.StreamingQueryException](awaitEnd(query))
    val causes = Iterator.iterate(e: Throwable)(_.getCause).takeWhile(_ != null).toSeq
    causes
      .collectFirst {
        case t: org.apache.spark.SparkThrowable if t.getCondition == "SLUICE_SOURCE_FAULT" =>
          t.asInstanceOf[Throwable].getMessage
      }
      .getOrElse(fail(causes.map(c => s"${c.getClass.getName}: ${c.getMessage}").mkString("; ")))
  }

  test("a table its catalog no longer loads at a later plan fails the query as a source fault") {
    val warehouse = dir.resolve("later-warehouse")
    val props = Map("type" -> "hadoop", "warehouse" -> warehouse.toUri.toString)
    val t = tableIn(props)
    val ckpt = tempDir("iceberg-catalog-later-ckpt")
    val out = tempDir("iceberg-catalog-later-out")
    def start() = startUnbounded(props, ckpt, out)(identity)
    val folder = warehouse.resolve("db").resolve("t")
    val away = warehouse.resolve("db").resolve("t-away")
    val query = start()
    try {
      processAllAvailable(query)
      java.nio.file.Files.move(folder, away) // the catalog has no table db.t now
      val message = sourceFault(query)
      assert(
        message.contains(
          "cannot load table 'db.t' from Iceberg catalog 'scala_cat' (properties type, warehouse) " +
            "at this plan, though it loaded when the source was built"),
        message)
      assert(message.contains("restart the query once it answers"), message)
    } finally query.stop()
    // as the message says: the table back, the restarted query goes on from its checkpoint
    java.nio.file.Files.move(away, folder)
    append(t, "b", 12L until 20L)
    val restarted = start()
    // every row once: the first run's, then the append, none of the first run's again
    try assert(idsIn(out, 20) == (0L until 20L))
    finally restarted.stop()
  }

  test(
    "a query whose catalog stopped answering, restarted in the same driver once it answers again, reads every row") {
    val props =
      Map("type" -> "hadoop", "warehouse" -> dir.resolve("recovering-warehouse").toUri.toString)
    val t = tableIn(props)
    // a REST catalog service over the Hadoop catalog's tables, which stalls and recovers
    val server = new StallingRestServer(
      Some(CatalogUtil.buildIcebergCatalog("served", props.asJava, new Configuration())))
    // a pool of one connection, as a small JDBC pool: the load that hangs holds it
    val rest =
      Map("type" -> "rest", "uri" -> server.uri, "rest.client.connections-per-route" -> "1")
    val ckpt = tempDir("iceberg-catalog-recovering-ckpt")
    val out = tempDir("iceberg-catalog-recovering-out")
    def start() = startUnbounded(rest, ckpt, out)(_.catalogTimeoutMs(1500))
    try {
      val query = start()
      try {
        processAllAvailable(query)
        assert(idsIn(out, 12) == (0L until 12L))
        server.stall() // the next plan's load hangs, and the query fails past catalogTimeoutMs
        val message = sourceFault(query)
        assert(message.contains("did not answer within 1500 ms"), message)
      } finally query.stop()
      // the service answers again, but not the request it stalled (as a pooled connection
      // whose reads a database that came back never answers)
      server.recover()
      append(t, "b", 12L until 20L)
      // before the fix the restart's build timed out too: the kept catalog's one connection
      // still waited for the stalled answer
      val restarted = start()
      // every row once: none of the first run's again
      try assert(idsIn(out, 20) == (0L until 20L))
      finally restarted.stop()
    } finally server.close()
  }

  test(
    "a table dropped and created again in its catalog fails an unbounded read's next plan and a restart, naming both identities") {
    val props = properties("recreated.db")
    val old = tableIn(props)
    // the reading catalog must not check for its tables: that check leaves sqlite's read
    // transaction open, and the writer's drop would then find the database locked
    val reading = props + ("jdbc.init-catalog-tables" -> "false")
    def source() =
      IcebergSource
        .builder()
        .catalog("scala_cat", reading)
        .table("db.t")
        .monitorIntervalMs(1)
        .build()
    val enumerator = source().createEnumerator()
    assert(enumerator.discoverSplits().size == 1, "the start snapshot's one data file")
    val oldUuid = old.uuid.toString
    assert(enumerator.snapshotState().tableId.contains(oldUuid))

    val catalog = CatalogUtil.buildIcebergCatalog("scala_cat", props.asJava, new Configuration())
    val id = TableIdentifier.of("db", "t")
    assert(catalog.dropTable(id, true))
    val again = catalog.createTable(id, schema, PartitionSpec.unpartitioned)
    append(again, "b", 100L until 110L)
    val newUuid = again.uuid.toString
    assert(newUuid != oldUuid)
    def named(e: SluiceRuntimeException): Unit = {
      assert(e.errorClass.name == "SLUICE_TABLE_REPLACED")
      assert(
        e.getMessage.contains(
          s"of table-uuid $oldUuid, but the table there now has table-uuid $newUuid"),
        e.getMessage)
    }
    // the next plan (due once the monitor interval passed; polled, bounded)
    val deadline = System.nanoTime + 10000000000L
    var refused: Option[SluiceRuntimeException] = None
    while (refused.isEmpty && System.nanoTime < deadline)
      try assert(enumerator.discoverSplits().isEmpty, "a split of the new table was planned")
      catch { case e: SluiceRuntimeException => refused = Some(e) }
    named(refused.getOrElse(fail("no plan failed within 10 s")))
    // a restart from the state the offset log holds, on the new table
    named(
      intercept[SluiceRuntimeException](source().restoreEnumerator(enumerator.snapshotState())))
  }
}

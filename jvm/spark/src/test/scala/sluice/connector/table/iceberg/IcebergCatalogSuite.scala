package sluice.connector.table.iceberg

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{CatalogUtil, PartitionSpec, Schema, Table}
import org.apache.iceberg.catalog.{Namespace, SupportsNamespaces, TableIdentifier}
import org.apache.iceberg.data.{GenericRecord, IcebergGenerics, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.parquet.Parquet
import org.apache.iceberg.types.Types
import org.apache.spark.sql.Row
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

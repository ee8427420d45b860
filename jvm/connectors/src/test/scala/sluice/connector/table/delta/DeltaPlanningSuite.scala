package sluice.connector.table.delta

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.sources
import org.apache.spark.sql.types.{LongType, Metadata, StringType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.FileStatistics
import sluice.connector.table.TableEventTimes
import sluice.errors.{SluiceConfigException, SluiceRuntimeException}

/**
 * What Sluice asks of Delta Kernel, without Spark: a version's data files planned with the pushed
 * filters (pruning by Kernel), deletion vectors loaded, column mapping read, partition
 * directories that disagree with the log refused. Each table is one commit of the log written
 * here (the actions a Delta writer writes), with no data file: planning never opens one.
 */
class DeltaPlanningSuite extends AnyFunSuite {
  private val schemaString =
    """{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},""" +
      """{\"name\":\"city\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}"""
  private val columns =
    StructType(Seq(StructField("id", LongType), StructField("city", StringType)))

  /** A table whose version 0 is the protocol, the metadata and these add actions. */
  private def table(
      adds: Seq[String],
      reader: String = "1, \"minWriterVersion\": 2",
      conf: String = "",
      schema: String = schemaString,
      partitions: String = "\"city\""): String = {
    val dir = Files.createTempDirectory("sluice-delta")
    val log = Files.createDirectories(dir.resolve("_delta_log"))
    val lines = Seq(
      s"""{"protocol":{"minReaderVersion":$reader}}""",
      s"""{"metaData":{"id":"3f6d1d6c-0c8b-4d0e-9a5e-0d3c2b1a0f00","format":{"provider":"parquet",""" +
        s""""options":{}},"schemaString":"$schema","partitionColumns":[$partitions],""" +
        s""""configuration":{$conf},"createdTime":1}}""") ++ adds
    Files.write(
      log.resolve("00000000000000000000.json"),
      lines.mkString("\n").getBytes(StandardCharsets.UTF_8))
    dir.toUri.toString
  }

  private def add(
      path: String,
      city: String,
      dv: String = "",
      dataChange: Boolean = true): String =
    s"""{"add":{"path":"$path","partitionValues":{"city":"$city"},"size":100,""" +
      s""""modificationTime":1,"dataChange":$dataChange,"stats":"{\\"numRecords\\":1}"$dv}}"""

  private def plan(location: String, filters: Seq[sources.Filter] = Nil): Seq[String] = {
    val engine = DeltaTables.engine(new Configuration())
    val snapshot = DeltaTables.snapshot(engine, location, None, None)
    DeltaTables.refuseUnsupported(snapshot, location)
    val filter = DeltaFilters.toKernel(filters, columns)
    DeltaTables
      .dataFiles(engine, snapshot, location, Seq("city"), filter)
      .map(f => f.path.substring(f.path.indexOf("city=")))
      .sorted
  }

  test(
    "partition filters prune files in Kernel's scan; an unexpressible filter plans every file") {
    val location = table(Seq(add("city=a/1.parquet", "a"), add("city=b/2.parquet", "b")))
    assert(plan(location) == Seq("city=a/1.parquet", "city=b/2.parquet"))
    assert(plan(location, Seq(sources.EqualTo("city", "b"))) == Seq("city=b/2.parquet"))
    // an int literal for a long column is not Kernel's type: left to Spark, every file planned
    assert(plan(location, Seq(sources.EqualTo("id", 3))).size == 2)
    assert(plan(
      location,
      Seq(
        sources.Or(sources.EqualTo("city", "a"), sources.StringEndsWith("city", "x")))).size == 2)
    // under a Not, a partly expressed And would keep fewer rows than the query: not pushed
    // (NOT (city = a AND city ends with x) holds for every row of city=a)
    val notBoth =
      sources.Not(sources.And(sources.EqualTo("city", "a"), sources.StringEndsWith("city", "x")))
    assert(plan(location, Seq(notBoth)).size == 2)
    assert(
      plan(location, Seq(sources.Not(sources.EqualTo("city", "a")))) == Seq("city=b/2.parquet"))
  }

  test("double values are never pushed: Parquet statistics leave NaN out") {
    val doubles = new org.apache.spark.sql.types.StructType().add("d", "double")
    for (v <- Seq(1.0, Double.NaN))
      assert(DeltaFilters.toKernel(Seq(sources.GreaterThan("d", v)), doubles).isEmpty)
  }

  test("a data file under directories that disagree with the log's partition values is refused") {
    val location = table(Seq(add("city=a/1.parquet", "b")))
    val e = intercept[SluiceConfigException](plan(location))
    assert(e.getMessage.contains("partition value 'b' of column 'city'"))
  }

  test("a data file's deletion vector is loaded by Kernel as the rows its splits never give") {
    // written by delta-spark (tests/fixtures/delta_dv/generate.py): version 2 deleted ids
    // 0, 5, .., 25 from the one file of ids 0..29 (row i holds id i); version 4 deleted ids 1
    // and 2 there too (the file's vector replaced) and 33, 34 from the file of ids 30..39
    val location = fixture("unpartitioned")
    val engine = DeltaTables.engine(new Configuration())
    def deleted(version: Long): Seq[Seq[Long]] =
      DeltaTables
        .dataFiles(
          engine,
          DeltaTables.snapshot(engine, location, Some(version), None),
          location,
          Nil,
          None)
        .sortBy(_.path)
        .map(f => f.deleted.toSeq.flatMap(d => (0L until 40L).filter(d.contains)))
        .sortBy(_.headOption)
    assert(deleted(1) == Seq(Nil))
    assert(deleted(2) == Seq(Seq(0L, 5L, 10L, 15L, 20L, 25L)))
    assert(deleted(3).toSet == Set(Seq(0L, 5L, 10L, 15L, 20L, 25L), Nil))
    assert(deleted(4).toSet == Set(Seq(0L, 1L, 2L, 5L, 10L, 15L, 20L, 25L), Seq(3L, 4L)))
  }

  test(
    "a deletion vector that cannot be read fails, naming the data file and the vector's file") {
    val dv =
      ""","deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,""" +
        """"sizeInBytes":36,"cardinality":2}"""
    val location = table(
      Seq(add("city=a/1.parquet", "a", dv)),
      reader =
        """3, "minWriterVersion": 7, "readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]""")
    val e = intercept[SluiceRuntimeException](plan(location))
    assert(e.getMessage.contains("the deletion vector of data file"), e.getMessage)
    assert(
      e.getMessage.contains("city=a/1.parquet") && e.getMessage.contains("2 rows"),
      e.getMessage)
    assert(e.getMessage.contains("deletion_vector_"), e.getMessage)
  }

  /** A table of tests/fixtures/delta_dv, as a URI, found from the test's working folder up. */
  private def fixture(name: String): String = {
    var dir = new java.io.File(".").getAbsoluteFile
    while (dir != null && !new java.io.File(dir, "tests/fixtures/delta_dv").isDirectory)
      dir = dir.getParentFile
    assert(dir != null, "tests/fixtures/delta_dv not found above the working folder")
    new java.io.File(dir, s"tests/fixtures/delta_dv/$name").toURI.toString
  }

  /** A schema of `id`, `city` and `ts` under column mapping: physical names `col-<name>`, ids 1 to 3. */
  private def mappedSchema(names: (String, String)*): String = {
    val fields = names.zipWithIndex.map { case ((name, kind), i) =>
      s"""{\\"name\\":\\"$name\\",\\"type\\":\\"$kind\\",\\"nullable\\":true,""" +
        s"""\\"metadata\\":{\\"delta.columnMapping.id\\":${i + 1},""" +
        s"""\\"delta.columnMapping.physicalName\\":\\"col-${Seq("id", "city", "ts")(i)}\\"}}"""
    }
    s"""{\\"type\\":\\"struct\\",\\"fields\\":[${fields.mkString(",")}]}"""
  }
  private val mapped = mappedSchema("id" -> "long", "city" -> "string", "ts" -> "timestamp")

  /** An add action of a column-mapped table: keys by physical names, in a random directory. */
  private def mappedAdd(path: String, city: String, minId: Int, maxId: Int): String = {
    val stats =
      s"""{"numRecords":2,"minValues":{"col-id":$minId,"col-ts":"2026-11-01T01:00:00Z"},""" +
        s""""maxValues":{"col-id":$maxId,"col-ts":"2026-11-01T02:00:00Z"},"nullCount":{"col-id":0}}"""
    s"""{"add":{"path":"$path","partitionValues":{"col-city":"$city"},"size":100,""" +
      s""""modificationTime":1,"dataChange":true,"stats":"${stats.replace("\"", "\\\"")}"}}"""
  }

  /** A version's files under column mapping: name, partition values, event-time statistics. */
  private def planMapped(location: String, filters: Seq[sources.Filter] = Nil) = {
    val engine = DeltaTables.engine(new Configuration())
    val snapshot = DeltaTables.snapshot(engine, location, None, None)
    DeltaTables.refuseUnsupported(snapshot, location)
    val mapping = DeltaColumnMapping.of(snapshot)
    DeltaTables
      .dataFiles(
        engine,
        snapshot,
        location,
        Seq("city"),
        DeltaFilters.toKernel(filters, columns),
        Some(new DeltaEventTimes(snapshot.getSchema, "ts", mapping.physical("ts"))),
        mapping)
      .map(f => (f.path.split("/").takeRight(2).mkString("/"), f.partitionValues, f.statistics))
      .sortBy(_._1)
  }

  for (mode <- Seq("name", "id"))
    test(
      s"column mapping ($mode): partition values and statistics by physical names, pruned by Kernel") {
      val location = table(
        Seq(mappedAdd("x1/1.parquet", "a", 1, 5), mappedAdd("y2/2.parquet", "b", 6, 9)),
        reader = """2, "minWriterVersion": 5""",
        conf = s""""delta.columnMapping.mode":"$mode","delta.columnMapping.maxColumnId":"3"""",
        schema = mapped)
      val hour = java.time.Instant.parse("2026-11-01T01:00:00Z").toEpochMilli
      val times = Some(FileStatistics(2, Some((hour, hour + 3600000L))))
      // the directories name nothing: the values are the log's, keyed by the logical name
      assert(
        planMapped(location) == Seq(
          ("x1/1.parquet", Some(Map("city" -> Some("a"))), times),
          ("y2/2.parquet", Some(Map("city" -> Some("b"))), times)))
      // Kernel resolves the logical names of a pushed filter to the log's physical keys
      assert(
        planMapped(location, Seq(sources.EqualTo("city", "b"))).map(_._1) == Seq("y2/2.parquet"))
      assert(
        planMapped(location, Seq(sources.GreaterThan("id", 5L))).map(_._1) == Seq("y2/2.parquet"))
      val mapping = DeltaColumnMapping.of(
        DeltaTables.snapshot(DeltaTables.engine(new Configuration()), location, None, None))
      assert(
        mapping == DeltaColumnMapping(
          mode,
          Map("id" -> "col-id", "city" -> "col-city", "ts" -> "col-ts")))
    }

  test("column mapping: the files' schema names columns physically, with field ids in mode id") {
    val location = table(
      Nil,
      reader = """2, "minWriterVersion": 5""",
      conf = """"delta.columnMapping.mode":"id","delta.columnMapping.maxColumnId":"3"""",
      schema = mapped)
    val snapshot =
      DeltaTables.snapshot(DeltaTables.engine(new Configuration()), location, None, None)
    val byId = DeltaSchema.physical(snapshot.getSchema, byId = true)
    assert(byId.fieldNames.toSeq == Seq("col-id", "col-city", "col-ts"))
    assert(byId.map(_.metadata.getLong("parquet.field.id")) == Seq(1L, 2L, 3L))
    assert(
      DeltaSchema.physical(snapshot.getSchema, byId = false).forall(_.metadata == Metadata.empty))
    assert(DeltaSchema.toSpark(snapshot.getSchema).fieldNames.toSeq == Seq("id", "city", "ts"))
  }

  test("with a timestampColumn each file's event-time range comes from the log's statistics") {
    val timed =
      """{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},""" +
        """{\"name\":\"ts\",\"type\":\"timestamp\",\"nullable\":true,\"metadata\":{}}]}"""
    def add(path: String, stats: String): String =
      s"""{"add":{"path":"$path","partitionValues":{},"size":100,""" +
        s""""modificationTime":1,"dataChange":true,"stats":"${stats.replace("\"", "\\\"")}"}}"""
    val location = table(
      Seq(
        // Delta writers truncate timestamps to milliseconds: a row at .123999 is recorded as .123,
        // the row's own event time in milliseconds (rounded down), so the maximum is exact
        add(
          "late.parquet",
          """{"numRecords":10,"minValues":{"id":1,"ts":"2026-11-01T01:00:00.000Z"},""" +
            """"maxValues":{"id":9,"ts":"2026-11-01T02:00:00.123Z"},"nullCount":{"ts":0}}"""),
        add(
          "nulls.parquet",
          """{"numRecords":4,"minValues":{"id":1},"maxValues":{"id":4},"nullCount":{"ts":4}}"""),
        // statistics of other columns only (ts past delta.dataSkippingNumIndexedCols)
        add("nostats.parquet", """{"numRecords":5,"minValues":{"id":1},"maxValues":{"id":5}}""")),
      schema = timed,
      partitions = "")
    val engine = DeltaTables.engine(new Configuration())
    val snapshot = DeltaTables.snapshot(engine, location, None, None)
    val planned = DeltaTables
      .dataFiles(
        engine,
        snapshot,
        location,
        Nil,
        None,
        Some(new DeltaEventTimes(snapshot.getSchema, "ts")))
      .map(f => f.path.split("/").last -> f.statistics)
      .toMap
    val hour = java.time.Instant.parse("2026-11-01T01:00:00Z").toEpochMilli
    assert(
      planned == Map(
        "late.parquet" -> Some(FileStatistics(10, Some((hour, hour + 3600000L + 123L)))),
        "nulls.parquet" -> Some(FileStatistics(4, None)),
        "nostats.parquet" -> None))
    val warning =
      TableEventTimes.warning(location, "version 0", "ts").getOrElse(fail("no warning"))
    assert(warning.contains("for 1 data file(s)") && warning.contains("nostats.parquet"))
    assert(warning.contains("timestampColumn 'ts'") && warning.contains(location))
    assert(warning.contains("'delta.dataSkippingStatsColumns' to include 'ts'"))
    assert(warning.contains("delta.dataSkippingNumIndexedCols"))
  }

  test(
    "timestamps in the log's statistics at an offset, in microseconds or in whole seconds are read") {
    // Kernel's own parser takes only milliseconds in UTC ("...ss.SSSX"): these three it refuses
    assert(
      DeltaEventTimes
        .micros("2026-11-01T02:00:00.123+01:00")
        .contains(java.time.Instant.parse("2026-11-01T01:00:00.123Z").toEpochMilli * 1000L))
    assert(
      DeltaEventTimes
        .micros("2026-11-01T02:00:00.123456Z")
        .contains(java.time.Instant.parse("2026-11-01T02:00:00Z").toEpochMilli * 1000L + 123456L))
    assert(
      DeltaEventTimes
        .micros("2026-11-01T02:00:00Z")
        .contains(java.time.Instant.parse("2026-11-01T02:00:00Z").toEpochMilli * 1000L))
    assert(DeltaEventTimes.micros("2026-11-01 02:00:00").isEmpty)

    val timed =
      """{\"type\":\"struct\",\"fields\":[{\"name\":\"ts\",\"type\":\"timestamp\",\"nullable\":true,\"metadata\":{}}]}"""
    def add(path: String, stats: String): String =
      s"""{"add":{"path":"$path","partitionValues":{},"size":100,""" +
        s""""modificationTime":1,"dataChange":true,"stats":"${stats.replace("\"", "\\\"")}"}}"""
    def stats(rows: Int, min: String, max: String) =
      s"""{"numRecords":$rows,"minValues":{"ts":"$min"},"maxValues":{"ts":"$max"}}"""
    val location = table(
      Seq(
        add(
          "offset.parquet",
          stats(2, "2026-11-01T02:00:00.123+01:00", "2026-11-01T03:00:00+01:00")),
        add(
          "micros.parquet",
          stats(2, "2026-11-01T01:00:00.000001Z", "2026-11-01T01:00:00.123456Z")),
        add("bad.parquet", stats(2, "2026-11-01T01:00:00Z", "yesterday")),
        // no rows counted: not trusted to leave the file unread, its footer tells
        add("empty.parquet", stats(0, "2026-11-01T01:00:00Z", "2026-11-01T01:00:00Z")),
        add(
          "uncounted.parquet",
          """{"minValues":{"ts":"2026-11-01T01:00:00Z"},"maxValues":{"ts":"2026-11-01T01:00:00Z"}}""")),
      schema = timed,
      partitions = "")
    val engine = DeltaTables.engine(new Configuration())
    val snapshot = DeltaTables.snapshot(engine, location, None, None)
    val planned = DeltaTables
      .dataFiles(
        engine,
        snapshot,
        location,
        Nil,
        None,
        Some(new DeltaEventTimes(snapshot.getSchema, "ts")))
      .map(f => f.path.split("/").last -> f.statistics)
      .toMap
    val hour = java.time.Instant.parse("2026-11-01T01:00:00Z").toEpochMilli
    assert(
      planned == Map(
        // both bounds rounded down to milliseconds, as the readers compute a row's event time
        "offset.parquet" -> Some(FileStatistics(2, Some((hour + 123L, hour + 3600000L)))),
        "micros.parquet" -> Some(FileStatistics(2, Some((hour, hour + 123L)))),
        "bad.parquet" -> None,
        "empty.parquet" -> None,
        "uncounted.parquet" -> None))
    val warning =
      TableEventTimes.warning(location, "version 0", "ts").getOrElse(fail("no warning"))
    assert(warning.contains("no timestamp Sluice can read for 1 data file(s)"))
    assert(warning.contains("bad.parquet") && warning.contains("\"yesterday\""))
    // a file counting no rows is opened too, but no property is advised for it
    assert(warning.contains("counts no rows for 2 data file(s) (e.g. '"))
    assert(warning.contains("empty.parquet") || warning.contains("uncounted.parquet"))
    assert(!warning.contains("records no minimum and maximum"))
    assert(!warning.contains("dataSkippingStatsColumns"))
  }

  /** Writes version `version` of the table's log: these actions (as a Delta writer writes them). */
  private def commit(location: String, version: Long, actions: String*): Unit = {
    val log = java.nio.file.Paths.get(new java.net.URI(location)).resolve("_delta_log")
    Files.write(
      log.resolve(f"$version%020d.json"),
      actions.mkString("\n").getBytes(StandardCharsets.UTF_8))
  }

  private def remove(path: String, dataChange: Boolean): String =
    s"""{"remove":{"path":"$path","deletionTimestamp":2,"dataChange":$dataChange,""" +
      """"partitionValues":{"city":"a"},"size":100}}"""

  private def info(operation: String): String =
    s"""{"commitInfo":{"timestamp":2,"operation":"$operation"}}"""

  /** An unbounded read's plan after version `after`: the files appended since, and the version planned up to. */
  private def appended(location: String, after: Long, skip: Boolean = false) =
    DeltaTables
      .appendedSince(
        DeltaTables.engine(new Configuration()),
        location,
        after,
        Seq("city"),
        skipChanges = skip,
        eventTimeColumn = None)
      .map { case (files, version) =>
        files.map(f => f.path.substring(f.path.indexOf("city="))).sorted -> version
      }

  test(
    "unbounded: each plan gives the files the versions after the last planned append; OPTIMIZE is skipped") {
    val location = table(Seq(add("city=a/1.parquet", "a")))
    assert(appended(location, 0).isEmpty, "no version since")
    commit(location, 1, info("WRITE"), add("city=b/2.parquet", "b"), add("city=a/3.parquet", "a"))
    assert(appended(location, 0).contains(Seq("city=a/3.parquet", "city=b/2.parquet") -> 1L))
    // the same rows in another file (dataChange false): nothing read again
    commit(
      location,
      2,
      info("OPTIMIZE"),
      remove("city=a/1.parquet", dataChange = false),
      remove("city=a/3.parquet", dataChange = false),
      add("city=a/4.parquet", "a", dataChange = false))
    assert(appended(location, 1).contains(Nil -> 2L))
  }

  test(
    "unbounded: an appended file's URI-encoded log path is decoded, as a bounded plan decodes it") {
    // Spark writes the folder `city=New York` and logs it `city=New%20York`
    val location = table(Seq(add("city=New%20York/1.parquet", "New York")))
    assert(plan(location) == Seq("city=New York/1.parquet"))
    commit(location, 1, info("WRITE"), add("city=New%20York/2.parquet", "New York"))
    assert(appended(location, 0).contains(Seq("city=New York/2.parquet") -> 1L))
  }

  test(
    "unbounded: a version removing files fails the plan naming version, operation and option; skipChanges skips it whole") {
    val location = table(Seq(add("city=a/1.parquet", "a")))
    commit(location, 1, info("DELETE"), remove("city=a/1.parquet", dataChange = true))
    commit(location, 2, info("WRITE"), add("city=b/5.parquet", "b"))
    val refused = intercept[SluiceRuntimeException](appended(location, 0))
    assert(
      refused.getMessage.contains(s"version 1 of table '$location' (DELETE) is not an append"),
      refused.getMessage)
    assert(refused.getMessage.contains("option 'skipChanges'"))
    assert(appended(location, 0, skip = true).contains(Seq("city=b/5.parquet") -> 2L))
    // an overwrite (MERGE, UPDATE) adds files too: skipped with them
    commit(
      location,
      3,
      info("MERGE"),
      remove("city=a/1.parquet", dataChange = true),
      add("city=a/6.parquet", "a"))
    assert(
      intercept[SluiceRuntimeException](appended(location, 2)).getMessage.contains("(MERGE)"))
    assert(appended(location, 2, skip = true).contains(Nil -> 3L))
  }

  test(
    "unbounded: a table created again at the same place is refused naming both identities, before its versions are compared") {
    val location = table(Seq(add("city=a/1.parquet", "a")))
    val id = "3f6d1d6c-0c8b-4d0e-9a5e-0d3c2b1a0f00" // the metaData.id `table` writes
    def plan(after: Long, tableId: String) =
      DeltaTables.appendedSince(
        DeltaTables.engine(new Configuration()),
        location,
        after,
        Seq("city"),
        skipChanges = false,
        eventTimeColumn = None,
        tableId = Some(tableId))
    assert(plan(0, id).isEmpty, "the same table: nothing new")
    // a query that planned version 3 of another table: this one has no version past 0, which
    // alone would read as nothing new, forever
    val refused = intercept[SluiceRuntimeException](plan(3, "0a4b7c7e-old"))
    assert(refused.errorClass.name == "SLUICE_TABLE_REPLACED")
    assert(
      refused.getMessage == s"DeltaSource: this query's checkpoint was written reading table '$location' " +
        s"of metaData.id 0a4b7c7e-old, but the table there now has metaData.id $id: it was dropped and " +
        "created again, or another table is named. The checkpoint's versions and files are the old " +
        "table's, and reading the new one from them would skip or mix rows. Start the query on a new " +
        "checkpoint to read this table, or name the old table again to go on reading it.")
  }

  test(
    "unbounded under column mapping: appended files' partition values from the log; a rename or a mode change since the start refused") {
    val conf = """"delta.columnMapping.mode":"name","delta.columnMapping.maxColumnId":"3""""
    val location = table(
      Seq(mappedAdd("x1/1.parquet", "a", 1, 5)),
      reader = """2, "minWriterVersion": 5""",
      conf = conf,
      schema = mapped)
    val engine = DeltaTables.engine(new Configuration())
    val start = DeltaColumnMapping.of(DeltaTables.snapshot(engine, location, None, None))
    def appended(after: Long, mapping: DeltaColumnMapping = start) =
      DeltaTables
        .appendedSince(engine, location, after, Seq("city"), false, Some("ts"), None, mapping)
        .map { case (files, v) =>
          files.map(f =>
            (f.path.split("/").last, f.partitionValues, f.statistics.map(_.rows))) -> v
        }
    commit(location, 1, info("WRITE"), mappedAdd("z3/3.parquet", "c", 1, 2))
    assert(
      appended(0).contains(Seq(("3.parquet", Some(Map("city" -> Some("c"))), Some(2L))) -> 1L))
    // a stream that started before column mapping was turned on reads files by other names
    val before = intercept[SluiceRuntimeException](appended(0, DeltaColumnMapping.Off))
    assert(before.getMessage.contains("(delta.columnMapping.mode) is name, where it was none"))
    // version 2 renames id to key: its physical name stays col-id
    val renamed = mappedSchema("key" -> "long", "city" -> "string", "ts" -> "timestamp")
    commit(
      location,
      2,
      info("RENAME COLUMN"),
      s"""{"metaData":{"id":"3f6d1d6c-0c8b-4d0e-9a5e-0d3c2b1a0f00","format":{"provider":"parquet",""" +
        s""""options":{}},"schemaString":"$renamed","partitionColumns":["city"],""" +
        s""""configuration":{$conf},"createdTime":1}}""")
    val e = intercept[SluiceRuntimeException](appended(1))
    assert(
      e.getMessage.contains(
        "version 2 of Delta table '" + location + "': column 'id' (physical name col-id) was renamed to 'key'"),
      e.getMessage)
    assert(e.getMessage.contains("Start the query on a new checkpoint"))
  }
}

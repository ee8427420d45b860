package sluice.connector.table.iceberg

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{DataFile, DataFiles, FileFormat, FileMetadata, PartitionSpec, Schema, Table}
import org.apache.iceberg.expressions.Expressions
import org.apache.iceberg.hadoop.HadoopTables
import org.apache.iceberg.types.Types
import org.apache.parquet.schema.MessageTypeParser
import org.apache.spark.sql.sources
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.types.{ArrayType, BinaryType, BooleanType, DataType, DateType, DecimalType, DoubleType, FloatType, IntegerType, LongType, StringType, StructField, StructType, TimestampNTZType, TimestampType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.FileStatistics
import sluice.connector.file.parquet.{ByFieldIds, PlannedFiles}
import sluice.connector.table.TableEventTimes
import sluice.errors.{SluiceConfigException, SluiceRuntimeException}

/**
 * What Sluice asks of Iceberg's library, without Spark: a snapshot's data files planned with the
 * pushed filters (partition and statistics pruning by Iceberg), delete files it does not apply and
 * other formats refused by name, the schema as Spark types, columns followed by field id across renames
 * and reused names (in the current schema, in a data file's footer). Tables hold metadata only: planning
 * never opens a data file.
 */
class IcebergPlanningSuite extends AnyFunSuite {
  private val schema = new Schema(
    Types.NestedField.optional(1, "id", Types.LongType.get),
    Types.NestedField.optional(2, "city", Types.StringType.get),
    Types.NestedField.optional(3, "ts", Types.TimestampType.withZone))
  private val spec = PartitionSpec.builderFor(schema).identity("city").build()

  private def table(): Table = {
    val dir = Files.createTempDirectory("sluice-iceberg").resolve("t").toString
    new HadoopTables(new Configuration())
      .create(schema, spec, Map("format-version" -> "2").asJava, dir)
  }

  private def dataFile(t: Table, city: String, ids: (Long, Long)): DataFile = {
    val bound = (v: Long) =>
      org.apache.iceberg.types.Conversions.toByteBuffer(Types.LongType.get, Long.box(v))
    DataFiles
      .builder(t.spec)
      .withPath(s"${t.location}/data/city=$city/${ids._1}.parquet")
      .withPartitionPath(s"city=$city")
      .withFileSizeInBytes(100)
      .withMetrics(new org.apache.iceberg.Metrics(
        10L,
        null,
        null,
        null,
        null,
        Map[Integer, java.nio.ByteBuffer](Int.box(1) -> bound(ids._1)).asJava,
        Map[Integer, java.nio.ByteBuffer](Int.box(1) -> bound(ids._2)).asJava))
      .build()
  }

  /** The type of each field of `t`'s current schema by field id: a source defined on it now. */
  private def columnsOf(t: Table): Map[Int, DataType] =
    IcebergSchema.typesById(IcebergSchema.withFieldIds(t.schema))

  private def plan(t: Table, filters: sources.Filter*): Seq[String] =
    IcebergTables
      .dataFiles(
        t,
        t.currentSnapshot,
        IcebergFilters.toIceberg(filters, Set("id", "city", "ts")),
        caseSensitive = true,
        columnsOf(t))
      .map(_.path.split("/").takeRight(2).mkString("/"))
      .sorted

  test("pushed filters prune files by partition value and by the manifests' statistics") {
    val t = table()
    t.newAppend()
      .appendFile(dataFile(t, "a", (0L, 9L)))
      .appendFile(dataFile(t, "a", (10L, 19L)))
      .appendFile(dataFile(t, "b", (20L, 29L)))
      .commit()
    assert(plan(t) == Seq("city=a/0.parquet", "city=a/10.parquet", "city=b/20.parquet"))
    assert(plan(t, sources.EqualTo("city", "b")) == Seq("city=b/20.parquet"))
    assert(
      plan(t, sources.GreaterThan("id", 15L)) == Seq("city=a/10.parquet", "city=b/20.parquet"))
    // an And keeps the side it can express; a filter on an unknown column is left to Spark
    assert(
      plan(t, sources.And(sources.LessThan("id", 5L), sources.EqualTo("nope", 1))) ==
        Seq("city=a/0.parquet"))
    assert(plan(t, sources.Or(sources.LessThan("id", 5L), sources.EqualTo("nope", 1))).size == 3)
    // under a Not, a partly expressed And would keep fewer rows than the query: nothing is pushed
    // (NOT (id > 15 AND city ends with x) holds for every row here)
    val notBoth =
      sources.Not(
        sources.And(sources.GreaterThan("id", 15L), sources.StringEndsWith("city", "x")))
    assert(plan(t, notBoth).size == 3)
    assert(
      plan(
        t,
        sources.Not(sources.And(sources.EqualTo("city", "b"), sources.LessThan("id", 0L)))) ==
        Seq("city=a/0.parquet", "city=a/10.parquet", "city=b/20.parquet"))
    assert(plan(t, sources.Not(sources.EqualTo("city", "b"))).size == 2)
  }

  test("each file carries its identity partition values by field id, kept across a promotion") {
    val t = table()
    t.newAppend()
      .appendFile(dataFile(t, "a", (0L, 9L)))
      .appendFile(dataFile(t, "b", (10L, 19L)))
      .commit()
    def constants(t: Table) =
      IcebergTables
        .dataFiles(
          t,
          t.currentSnapshot,
          Expressions.alwaysTrue,
          caseSensitive = true,
          columnsOf(t))
        .map(f => f.path.split("/").takeRight(2).head -> f.constants)
        .toMap
    assert(constants(t) == Map("city=a" -> Map(2 -> Some("a")), "city=b" -> Map(2 -> Some("b"))))

    // partitioned by an int promoted to long since: the value reads as the same number
    val ints = new Schema(
      Types.NestedField.optional(1, "id", Types.LongType.get),
      Types.NestedField.optional(2, "n", Types.IntegerType.get))
    val dir = Files.createTempDirectory("sluice-iceberg").resolve("ints").toString
    val promoted = new HadoopTables(new Configuration())
      .create(
        ints,
        PartitionSpec.builderFor(ints).identity("n").build(),
        Map("format-version" -> "2").asJava,
        dir)
    promoted
      .newAppend()
      .appendFile(
        DataFiles
          .builder(promoted.spec)
          .withPath(s"$dir/data/n=5/x.parquet")
          .withPartitionPath("n=5")
          .withFileSizeInBytes(100)
          .withRecordCount(1)
          .build())
      .commit()
    val asDefined = columnsOf(promoted) // a source defined before the promotion: n an int
    promoted.updateSchema().updateColumn("n", Types.LongType.get).commit()
    assert(constants(promoted) == Map("n=5" -> Map(2 -> Some("5"))))
    // Iceberg now gives the old file's value as a long: a source (or a restart of one, whose
    // snapshot pins its schema) defined before the promotion reads it as the int it was
    assert(
      IcebergTables
        .dataFiles(promoted, promoted.currentSnapshot, Expressions.alwaysTrue, true, asDefined)
        .map(_.constants) == Seq(Map(2 -> Some("5"))))
  }

  test(
    "partition values of the column's kind are kept, whatever the type Iceberg's library gives them in; any other kind is refused") {
    // Iceberg reads a partition value in the table's current type (an older file's int as a long
    // once the column was promoted): the source reads it as its own type, which may be older;
    // whether that type holds the value exactly is checked when a reader reads it (FileConstants)
    val kept = Seq[(Any, DataType)](
      Int.box(5) -> IntegerType,
      Int.box(5) -> LongType,
      Long.box(5L) -> LongType,
      Long.box(5L) -> IntegerType,
      Float.box(1.1f) -> FloatType,
      Float.box(1.1f) -> DoubleType,
      Double.box(0.1) -> DoubleType,
      Double.box(1.1f.toDouble) -> FloatType,
      new java.math.BigDecimal("1.50") -> DecimalType(9, 2),
      new java.math.BigDecimal("1.50") -> DecimalType(18, 2),
      Int.box(20_000) -> DateType,
      Long.box(1L) -> TimestampNTZType,
      Long.box(1L) -> TimestampType,
      java.lang.Boolean.TRUE -> BooleanType,
      "a" -> StringType,
      java.nio.ByteBuffer.wrap(Array[Byte](1)) -> BinaryType)
    kept.foreach { case (v, now) => assert(IcebergConstants.fits(v, now), s"$v -> $now") }
    // a date's days are no timestamp's microseconds, nor a decimal of another scale the same number
    val refused = Seq[(Any, DataType)](
      Int.box(20_000) -> TimestampNTZType,
      Long.box(5L) -> DateType,
      new java.math.BigDecimal("1.50") -> DecimalType(18, 3),
      Double.box(1.0) -> LongType,
      "a" -> BinaryType,
      java.util.UUID.randomUUID() -> StringType)
    refused.foreach { case (v, now) => assert(!IcebergConstants.fits(v, now), s"$v -> $now") }
  }

  test(
    "only the source's columns get partition values: a column added since, of any type, is not read; one promoted since is planned as it is") {
    val schema = new Schema(
      Types.NestedField.optional(1, "id", Types.LongType.get),
      Types.NestedField.optional(2, "x", Types.FloatType.get))
    val dir = Files.createTempDirectory("sluice-iceberg").resolve("added").toString
    val t = new HadoopTables(new Configuration())
      .create(schema, PartitionSpec.unpartitioned(), Map("format-version" -> "2").asJava, dir)
    val asDefined = columnsOf(t) // the source's columns, as of its start
    // since: a uuid column partitioned by identity, and x promoted to double and partitioned
    t.updateSchema().addColumn("u", Types.UUIDType.get).commit()
    t.updateSchema().updateColumn("x", Types.DoubleType.get).commit()
    t.updateSpec().addField("u").commit()
    val u = java.util.UUID.fromString("00000000-0000-0000-0000-000000000001")
    t.newAppend()
      .appendFile(
        DataFiles
          .builder(t.spec)
          .withPath(s"$dir/data/u/f.parquet")
          .withPartitionPath(s"u=$u")
          .withFileSizeInBytes(100)
          .withRecordCount(1)
          .build())
      .commit()
    def constants(columns: Map[Int, DataType]) =
      IcebergTables
        .dataFiles(t, t.currentSnapshot, Expressions.alwaysTrue, caseSensitive = true, columns)
        .map(f => f.path.split("/").takeRight(2).head -> f.constants)
        .toMap
    assert(constants(asDefined) == Map("u" -> Map.empty))
    t.updateSpec().addField("x").commit()
    t.newAppend()
      .appendFile(
        DataFiles
          .builder(t.spec)
          .withPath(s"$dir/data/x/f.parquet")
          .withPartitionPath(s"u=$u/x=0.1")
          .withFileSizeInBytes(100)
          .withRecordCount(1)
          .build())
      .commit()
    // a double the float column cannot hold: planned as it is, refused by a reader of x
    // (FileConstantsSuite), never rounded
    assert(constants(asDefined)("x") == Map(2 -> Some("0.1")))
  }

  test(
    "a partition column dropped from the table since the source was defined still gets its values") {
    val t = table() // partitioned by identity on city (field id 2)
    t.newAppend().appendFile(dataFile(t, "a", (0L, 9L))).commit()
    val asDefined = columnsOf(t)
    val snapshot = t.currentSnapshot
    t.updateSpec().removeField("city").commit()
    t.updateSchema().deleteColumn("city").commit()
    assert(t.schema.findField("city") == null)
    val planned =
      IcebergTables.dataFiles(
        t,
        snapshot,
        Expressions.alwaysTrue,
        caseSensitive = true,
        asDefined)
    assert(planned.map(_.constants) == Seq(Map(2 -> Some("a"))))
  }

  test("float and double values are never pushed: Iceberg's bounds leave NaN out") {
    val columns = Set("d")
    for (v <- Seq(1.0, Double.NaN, 1.0f))
      assert(
        IcebergFilters
          .toIceberg(Seq(sources.GreaterThan("d", v), sources.EqualTo("d", v)), columns)
          == Expressions.alwaysTrue())
  }

  test(
    "equality deletes and position deletes not in Parquet are refused by name; an unreadable delete file fails") {
    def withPositionDeletes(format: FileFormat): Table = {
      val t = table()
      t.newAppend().appendFile(dataFile(t, "a", (0L, 9L))).commit()
      val positions = FileMetadata
        .deleteFileBuilder(t.spec)
        .ofPositionDeletes()
        .withPath(s"${t.location}/data/city=a/deletes.${format.name.toLowerCase}")
        .withPartitionPath("city=a")
        .withFileSizeInBytes(50)
        .withRecordCount(1)
        .withFormat(format)
        .build()
      t.newRowDelta().addDeletes(positions).commit()
      t
    }
    val e = intercept[SluiceConfigException](plan(withPositionDeletes(FileFormat.AVRO)))
    assert(e.getMessage.contains("position deletes in AVRO"))
    assert(e.getMessage.contains("deletes.avro") && e.getMessage.contains("option 'snapshotId'"))
    // a Parquet position delete file is read when the snapshot is planned (IcebergDeletesSuite)
    val missing = intercept[SluiceRuntimeException](plan(withPositionDeletes(FileFormat.PARQUET)))
    assert(
      missing.getMessage.contains("(position deletes) cannot be read") &&
        missing.getMessage.contains("deletes.parquet"))

    val u = table()
    u.newAppend().appendFile(dataFile(u, "a", (0L, 9L))).commit()
    val equality = FileMetadata
      .deleteFileBuilder(u.spec)
      .ofEqualityDeletes(1)
      .withPath(s"${u.location}/data/city=a/eq.parquet")
      .withPartitionPath("city=a")
      .withFileSizeInBytes(50)
      .withRecordCount(1)
      .withFormat(FileFormat.PARQUET)
      .build()
    u.newRowDelta().addDeletes(equality).commit()
    assert(intercept[SluiceConfigException](plan(u)).getMessage.contains("equality deletes"))
  }

  test("data files in another format than Parquet are refused by name") {
    val t = table()
    val orc = DataFiles
      .builder(t.spec)
      .copy(dataFile(t, "a", (0L, 9L)))
      .withPath(s"${t.location}/data/city=a/0.orc")
      .withFormat(FileFormat.ORC)
      .build()
    t.newAppend().appendFile(orc).commit()
    assert(intercept[SluiceConfigException](plan(t)).getMessage.contains("is ORC"))
  }

  test("a table with imported files (a name mapping) is refused: they may lack field ids") {
    val t = table()
    t.newAppend().appendFile(dataFile(t, "a", (0L, 9L))).commit()
    t.updateProperties()
      .set(
        org.apache.iceberg.TableProperties.DEFAULT_NAME_MAPPING,
        org.apache.iceberg.mapping.NameMappingParser
          .toJson(org.apache.iceberg.mapping.MappingUtil.create(schema)))
      .commit()
    val e = intercept[SluiceConfigException](plan(t))
    assert(e.getMessage.contains("has a name mapping") && e.getMessage.contains("add_files"))
  }

  test("the schema as Spark types, and with each field's id at every level for the reader") {
    assert(
      IcebergSchema.toSpark(schema) == StructType(
        Seq(
          StructField("id", LongType),
          StructField("city", StringType),
          StructField("ts", TimestampType))))
    val nested = new Schema(
      Types.NestedField.optional(1, "id", Types.LongType.get),
      Types.NestedField
        .optional(
          2,
          "point",
          Types.StructType.of(Types.NestedField.optional(3, "x", Types.DoubleType.get))),
      Types.NestedField.optional(
        4,
        "tags",
        Types.ListType.ofOptional(
          5,
          Types.StructType.of(Types.NestedField.optional(6, "k", Types.StringType.get)))))
    val withIds = IcebergSchema.withFieldIds(nested)
    def id(f: StructField): Long = f.metadata.getLong(ParquetUtils.FIELD_ID_METADATA_KEY)
    assert(withIds.fields.map(id).toSeq == Seq(1L, 2L, 4L))
    assert(id(withIds("point").dataType.asInstanceOf[StructType]("x")) == 3L)
    val tag =
      withIds("tags").dataType.asInstanceOf[ArrayType].elementType.asInstanceOf[StructType]
    assert(id(tag("k")) == 6L)
    // the same columns and types as the rows', only the ids added
    val plain = IcebergSchema.toSpark(nested)
    assert(withIds.fieldNames.toSeq == plain.fieldNames.toSeq)
    assert(
      withIds.fields.map(_.dataType.catalogString).toSeq == plain.fields
        .map(_.dataType.catalogString)
        .toSeq)
  }

  /** Parquet's settings of an Iceberg source whose columns (as of its start) are `columns`. */
  private def readByFieldIds(columns: Schema, ts: Option[String] = None) =
    ByFieldIds.config(
      IcebergSchema.toSpark(columns),
      IcebergSchema.withFieldIds(columns),
      ts,
      caseSensitive = true)

  test(
    "a data file's footer is read by field id: row-group filters and the event-time column follow renames, never a reused name") {
    // a file Iceberg's writer wrote before the changes: each column's field id in its Parquet schema
    val before = MessageTypeParser.parseMessageType(
      "message table { optional int64 id = 1; optional binary city (UTF8) = 2; " +
        "optional int64 ts (TIMESTAMP_MICROS) = 3; }")
    // since: city renamed town, ts renamed at, and a new column given the name city
    val current = new Schema(
      Types.NestedField.optional(1, "id", Types.LongType.get),
      Types.NestedField.optional(2, "town", Types.StringType.get),
      Types.NestedField.optional(3, "at", Types.TimestampType.withZone),
      Types.NestedField.optional(4, "city", Types.StringType.get))
    val config =
      readByFieldIds(current, ts = Some("at")).copy(filters = Seq(
        sources.IsNull("city"),
        sources.EqualTo("town", "a"),
        sources.And(sources.EqualTo("city", "x"), sources.GreaterThan("id", 5L)),
        sources.Or(sources.IsNull("city"), sources.LessThan("at", 0L))))
    // the old file's `city` is the renamed column (id 2): the new city (id 4) is none of its columns
    assert(config.fileColumnNames(before) == Map("id" -> "id", "town" -> "city", "at" -> "ts"))
    // a conjunct on a column the file does not hold is dropped, never pruned on by another's statistics
    assert(
      config
        .fileFilters(before) == Seq(sources.EqualTo("city", "a"), sources.GreaterThan("id", 5L)))
    // a file written since names every column as the table does
    val after = MessageTypeParser.parseMessageType(
      "message table { optional int64 id = 1; optional binary town (UTF8) = 2; " +
        "optional int64 at (TIMESTAMP_MICROS) = 3; optional binary city (UTF8) = 4; }")
    assert(config.fileFilters(after) == config.filters)
    // an id held twice names no column (none is sure to be the one read)
    val twice = MessageTypeParser.parseMessageType(
      "message table { optional int64 id = 1; optional binary a (UTF8) = 2; " +
        "optional binary b (UTF8) = 2; }")
    assert(config.fileColumnNames(twice) == Map("id" -> "id"))
    // read by name (a Parquet source's files), the old file's city would be taken for the new one
    val byName = config.copy(fileSchema = None, matchFieldIds = false)
    assert(byName.fileFilters(before).contains(sources.IsNull("city")))
  }

  test(
    "later plans bind the pushed filters and the event-time column by field id in the current schema") {
    val dir = Files.createTempDirectory("sluice-iceberg").resolve("t").toString
    val t = new HadoopTables(new Configuration())
      .create(schema, PartitionSpec.unpartitioned, Map("format-version" -> "2").asJava, dir)
    val string =
      (v: String) => org.apache.iceberg.types.Conversions.toByteBuffer(Types.StringType.get, v)
    val micros = (v: Long) =>
      org.apache.iceberg.types.Conversions.toByteBuffer(Types.TimestampType.withZone, Long.box(v))
    def file(name: String, bounds: (Int, java.nio.ByteBuffer)*) =
      DataFiles
        .builder(t.spec)
        .withPath(s"${t.location}/data/$name.parquet")
        .withFileSizeInBytes(100)
        .withMetrics(
          new org.apache.iceberg.Metrics(
            10L,
            null,
            null,
            null,
            null,
            bounds.map { case (id, b) => Int.box(id) -> b }.toMap.asJava,
            bounds.map { case (id, b) => Int.box(id) -> b }.toMap.asJava))
        .build()
    t.newAppend().appendFile(file("first", 2 -> string("b"), 3 -> micros(1000L))).commit()
    val start = t.currentSnapshot.snapshotId
    // the source's columns by field id, as it was built
    val ids = IcebergSchema.fieldIdsOf(IcebergSchema.withFieldIds(t.schema))
    assert(ids == Map("id" -> 1, "city" -> 2, "ts" -> 3))
    t.updateSchema().renameColumn("city", "town").renameColumn("ts", "at").commit()
    t.updateSchema()
      .addColumn("city", Types.StringType.get)
      .addColumn("ts", Types.TimestampType.withZone)
      .commit()
    val names = IcebergSchema.namesIn(t.schema, ids)
    assert(names == Map("id" -> "id", "city" -> "town", "ts" -> "at"))
    // appended since: the source's city (now town) 'b' with event times at 2 s; the new city 'x'
    // and the new ts (ids 4 and 5) other values
    t.newAppend()
      .appendFile(
        file(
          "second",
          2 -> string("b"),
          3 -> micros(2000000L),
          t.schema.findField("city").fieldId -> string("x"),
          t.schema.findField("ts").fieldId -> micros(9000000L)))
      .commit()
    def planned(filter: org.apache.iceberg.expressions.Expression, e: Option[IcebergEventTimes]) =
      IcebergTables
        .appendedSince(
          t,
          t.location,
          start,
          filter,
          caseSensitive = true,
          skipChanges = false,
          columnsOf(t),
          e)
        .toSeq
        .flatMap(_._1.map(f => f.path.split("/").last -> f.statistics))
    val byId = IcebergEventTimes.byId(t.schema, ids("ts"))
    assert(byId.map(_.column).contains("at"))
    val pushed = Seq(sources.EqualTo("city", "b"))
    assert(
      planned(IcebergFilters.toIceberg(pushed, names), byId) ==
        Seq("second.parquet" -> Some(FileStatistics(10, Some((2000L, 2000L))))))
    // by name the filter would be the new city's, whose bounds leave 'b' out: the file unread
    assert(planned(IcebergFilters.toIceberg(pushed, Set("id", "city", "ts")), None).isEmpty)
    // and the event-time bounds the new ts column's
    assert(
      planned(Expressions.alwaysTrue(), Some(new IcebergEventTimes(t.schema, "ts"))) ==
        Seq("second.parquet" -> Some(FileStatistics(10, Some((9000L, 9000L))))))
    // the start snapshot's plan binds by the current schema's names too (Iceberg binds there)
    assert(
      IcebergTables
        .dataFiles(
          t,
          t.snapshot(start),
          IcebergFilters.toIceberg(pushed, names),
          caseSensitive = true,
          columnsOf(t))
        .map(_.path.split("/").last) == Seq("first.parquet"))
    // dropped since: neither a filter nor the event-time bounds are asked of Iceberg by its name
    t.updateSchema().deleteColumn("town").deleteColumn("at").commit()
    assert(IcebergSchema.namesIn(t.schema, ids) == Map("id" -> "id"))
    assert(IcebergEventTimes.byId(t.schema, ids("ts")).isEmpty)
  }

  test("filter values become Iceberg literals: timestamps in microseconds") {
    val ts = java.time.Instant.parse("2026-11-01T00:00:00Z")
    val e = IcebergFilters.toIceberg(Seq(sources.GreaterThan("ts", ts)), Set("ts"))
    assert(e.toString == Expressions.greaterThan("ts", ts.toEpochMilli * 1000L).toString)
  }

  test("with a timestampColumn each file's event-time range comes from the manifests' bounds") {
    val t = table()
    val micros = (v: Long) =>
      org.apache.iceberg.types.Conversions.toByteBuffer(Types.TimestampType.withZone, Long.box(v))
    def file(name: String, rows: Long, bounds: Option[(Long, Long)], nulls: Long = 0L) =
      DataFiles
        .builder(t.spec)
        .withPath(s"${t.location}/data/city=a/$name.parquet")
        .withPartitionPath("city=a")
        .withFileSizeInBytes(100)
        .withMetrics(new org.apache.iceberg.Metrics(
          rows,
          null,
          null,
          Map[Integer, java.lang.Long](Int.box(3) -> Long.box(nulls)).asJava,
          null,
          bounds
            .map(b => Map[Integer, java.nio.ByteBuffer](Int.box(3) -> micros(b._1)).asJava)
            .orNull,
          bounds
            .map(b => Map[Integer, java.nio.ByteBuffer](Int.box(3) -> micros(b._2)).asJava)
            .orNull))
        .build()
    t.newAppend()
      // microseconds become milliseconds as the readers compute a row's (rounded down)
      .appendFile(file("late", 10, Some((3600000999L, 7200001999L))))
      .appendFile(file("nulls", 4, None, nulls = 4))
      .appendFile(file("nostats", 5, None))
      .commit()
    val planned = IcebergTables
      .dataFiles(
        t,
        t.currentSnapshot,
        Expressions.alwaysTrue(),
        caseSensitive = true,
        columnsOf(t),
        Some(new IcebergEventTimes(t.schema, "ts")))
      .map(f => f.path.split("/").last -> f.statistics)
      .toMap
    assert(
      planned == Map(
        "late.parquet" -> Some(FileStatistics(10, Some((3600000L, 7200001L)))),
        "nulls.parquet" -> Some(FileStatistics(4, None)),
        "nostats.parquet" -> None))
    // the file without bounds is named in a warning that says what to set; it falls back to its footer
    val warning = TableEventTimes
      .warning(t.name, s"snapshot ${t.currentSnapshot.snapshotId}", "ts")
      .getOrElse(fail("no warning"))
    assert(warning.contains("for 1 data file(s)") && warning.contains("nostats.parquet"))
    assert(warning.contains("timestampColumn 'ts'") && warning.contains(t.name))
    assert(warning.contains("'write.metadata.metrics.column.ts' to 'full'"))
    // without a timestampColumn the scan keeps no statistics and gives none
    assert(plan(t).size == 3)
    assert(
      IcebergTables
        .dataFiles(
          t,
          t.currentSnapshot,
          Expressions.alwaysTrue(),
          caseSensitive = true,
          columnsOf(t))
        .forall(_.statistics.isEmpty))
  }

  test("a snapshot's statistics are found after its timestampColumn was dropped from the table") {
    val t = table()
    val micros = (v: Long) =>
      org.apache.iceberg.types.Conversions.toByteBuffer(Types.TimestampType.withZone, Long.box(v))
    t.newAppend()
      .appendFile(
        DataFiles
          .builder(t.spec)
          .withPath(s"${t.location}/data/city=a/old.parquet")
          .withPartitionPath("city=a")
          .withFileSizeInBytes(100)
          .withMetrics(new org.apache.iceberg.Metrics(
            3L,
            null,
            null,
            null,
            null,
            Map[Integer, java.nio.ByteBuffer](Int.box(3) -> micros(1000000L)).asJava,
            Map[Integer, java.nio.ByteBuffer](Int.box(3) -> micros(2000000L)).asJava))
          .build())
      .commit()
    // a restarted query reads the snapshot it started with, whose schema still has the column
    val pinned = t.currentSnapshot
    t.updateSchema().deleteColumn("ts").commit()
    assert(t.schema.findField("ts") == null)
    val snapshotSchema = t.schemas.get(pinned.schemaId)
    val planned = IcebergTables.dataFiles(
      t,
      pinned,
      Expressions.alwaysTrue(),
      caseSensitive = true,
      IcebergSchema.typesById(IcebergSchema.withFieldIds(snapshotSchema)),
      Some(new IcebergEventTimes(snapshotSchema, "ts")))
    assert(planned.map(_.statistics) == Seq(Some(FileStatistics(3, Some((1000L, 2000L))))))
  }

  /** An unbounded read's plan after snapshot `after`: the files appended since, and the snapshot planned up to. */
  private def appended(t: Table, after: Long, skip: Boolean = false) =
    IcebergTables
      .appendedSince(
        t,
        t.location,
        after,
        Expressions.alwaysTrue(),
        caseSensitive = true,
        skipChanges = skip,
        columns = columnsOf(t),
        eventTimes = None)
      .map { case (files, id) =>
        files.map(_.path.split("/").takeRight(2).mkString("/")).sorted -> id
      }

  test(
    "unbounded: a start on an empty table whose first snapshots expired before its first plan is refused") {
    val t = table()
    t.newAppend().appendFile(dataFile(t, "a", (0L, 9L))).commit()
    val first = t.currentSnapshot.snapshotId
    t.newAppend().appendFile(dataFile(t, "b", (10L, 19L))).commit()
    t.expireSnapshots().expireSnapshotId(first).commit()
    val refused = intercept[SluiceRuntimeException](appended(t, PlannedFiles.EmptyTable))
    assert(refused.getMessage.contains("follows snapshots expired since"), refused.getMessage)
  }

  test(
    "unbounded: each plan gives the files appended since the last snapshot planned, compactions skipped") {
    val t = table()
    assert(
      appended(t, PlannedFiles.EmptyTable).isEmpty,
      "a table without snapshots has nothing new")
    val a0 = dataFile(t, "a", (0L, 9L))
    t.newAppend().appendFile(a0).commit()
    val first = t.currentSnapshot.snapshotId
    assert(appended(t, PlannedFiles.EmptyTable).contains(Seq("city=a/0.parquet") -> first))
    assert(appended(t, first).isEmpty, "nothing committed since")
    t.newAppend().appendFile(dataFile(t, "b", (10L, 19L))).commit()
    val a20 = dataFile(t, "a", (20L, 29L))
    t.newFastAppend().appendFile(a20).commit()
    val third = t.currentSnapshot.snapshotId
    assert(appended(t, first).contains(Seq("city=a/20.parquet", "city=b/10.parquet") -> third))
    // a compaction (replace) holds the same rows in other files: skipped, nothing read again
    t.newRewrite()
      .deleteFile(a0)
      .deleteFile(a20)
      .addFile(dataFile(t, "a", (100L, 129L)))
      .commit()
    val compacted = t.currentSnapshot.snapshotId
    assert(t.currentSnapshot.operation == "replace")
    assert(appended(t, third).contains(Nil -> compacted))
    // the newest metadata file beside the one given is the table as last committed
    val v1 = s"${t.location}/metadata/v1.metadata.json"
    assert(
      IcebergTables
        .loadLatest(v1, new Configuration(), IcebergTables.metadataWaits(() => 0L))
        .map(_.currentSnapshot.snapshotId)
        .contains(compacted))
    assert(IcebergTables.load(v1, new Configuration()).currentSnapshot == null)
  }

  test(
    "unbounded, a table given by a metadata file: its newest version is taken once one file holds it whole; until then nothing new, waited for as a folder's files are, then a failure naming the files") {
    val t = table()
    t.newAppend().appendFile(dataFile(t, "a", (0L, 9L))).commit()
    t.newAppend().appendFile(dataFile(t, "b", (10L, 19L))).commit()
    val current = t.currentSnapshot.snapshotId
    val metadata = java.nio.file.Paths.get(t.location, "metadata")
    val v1 = metadata.resolve("v1.metadata.json").toString
    val whole = Files.readAllBytes(metadata.resolve("v3.metadata.json"))
    val v1Bytes = Files.readAllBytes(metadata.resolve("v1.metadata.json"))
    val conf = new Configuration()
    // the driver's clock, which the waits time by (not the files' modification times)
    var now = 0L
    val waits = IcebergTables.metadataWaits(() => now)
    def latest(at: Long) = {
      now = at
      IcebergTables.loadLatest(v1, conf, waits)
    }
    def failure(at: Long, expected: String*) = {
      val refused = intercept[SluiceRuntimeException](latest(at))
      (expected :+ "(version 4) does not settle" :+ "unchanged for 60 s" :+ "Remove the files" :+
        "catalog.<property>").foreach(m =>
        assert(refused.getMessage.contains(m), refused.getMessage))
      assert(!refused.getMessage.contains("notReadyTimeoutMs"), "no option sets this wait")
    }
    val grace = IcebergTables.MetadataWriteGraceMs
    assert(latest(0).map(_.currentSnapshot.snapshotId).contains(current))

    // the next commit's file as a writer leaves it half written: nothing new, counted as a file
    // not ready, waited for again while it grows, then (unchanged for the grace) a failure
    val partial = Files.write(metadata.resolve("v4.metadata.json"), whole.take(whole.length / 3))
    assert(latest(1000).isEmpty, "not settled: nothing new planned")
    assert(waits.size == 1)
    Files.write(partial, whole.take(2 * whole.length / 3))
    assert(latest(1000 + grace).isEmpty, "changed since: waited for from now")
    failure(1000 + 2 * grace, "v4.metadata.json' cannot be read", "a file of it cannot be read")
    Files.write(partial, whole) // written whole: the table as last committed
    assert(latest(2000 + 2 * grace).map(_.currentSnapshot.snapshotId).contains(current))
    assert(waits.size == 0, "no longer waited for")

    // two writers' files of one version (one lost it to the other): which one a catalog took
    // cannot be told, whether or not each reads whole
    val rival = Files.write(
      metadata.resolve("00004-12345678-1234-4abc-8def-123456789abc.metadata.json"),
      v1Bytes)
    val tie = 3000 + 2 * grace
    assert(latest(tie).isEmpty, "two files of version 4: nothing new planned")
    assert(waits.size == 1, "the version is waited for, not each file")
    // a file of the version still written: the version is waited for from then on
    Files.write(rival, v1Bytes ++ Array[Byte](' '))
    assert(latest(tie + grace).isEmpty, "one of its files changed: waited for from now")
    failure(
      tie + 2 * grace,
      "v4.metadata.json' reads whole",
      "abc.metadata.json' reads whole",
      "2 files hold it")
    // each restart, and each Trigger.AvailableNow run, waits afresh (a new enumerator): the files'
    // modification times, beyond an allowance for the clocks' difference, still end the wait
    def afresh(at: Long) =
      IcebergTables.loadLatest(v1, conf, IcebergTables.metadataWaits(() => at))
    val written = Seq(partial, rival).map(f => Files.getLastModifiedTime(f).toMillis).max
    assert(afresh(written + 2 * grace - 1).isEmpty, "written lately: waited for")
    val stale = intercept[SluiceRuntimeException](afresh(written + 2 * grace))
    assert(stale.getMessage.contains("2 files hold it"), stale.getMessage)
    // the losing writer's file removed: the version is settled by the one left
    Files.delete(rival)
    assert(latest(tie + 2 * grace + 1).map(_.currentSnapshot.snapshotId).contains(current))
    assert(waits.size == 0)
    Files.delete(partial)

    // a Hadoop table's commit in progress (`<uuid>.metadata.json`, here v1's content) is no
    // version, even where its uuid begins with eight digits
    val temporary =
      Files.write(metadata.resolve("12345678-1234-4abc-8def-123456789abc.metadata.json"), v1Bytes)
    assert(latest(tie + 2 * grace + 2).map(_.currentSnapshot.snapshotId).contains(current))
    // compressed metadata (`write.metadata.compression-codec=gzip`) is a version like any other,
    // under both names Iceberg gave it (here v1's content: no snapshot)
    val gz = new java.io.ByteArrayOutputStream()
    val out = new java.util.zip.GZIPOutputStream(gz)
    out.write(v1Bytes)
    out.close()
    for (name <- Seq("v9.gz.metadata.json", "v9.metadata.json.gz")) {
      val compressed = Files.write(metadata.resolve(name), gz.toByteArray)
      assert(
        latest(tie + 2 * grace + 3).exists(_.currentSnapshot == null),
        s"$name is the newest")
      Files.delete(compressed)
    }
  }

  test(
    "unbounded: a delete or an overwrite fails the plan naming snapshot, operation and option; skipChanges skips it whole") {
    val t = table()
    val a0 = dataFile(t, "a", (0L, 9L))
    t.newAppend().appendFile(a0).commit()
    val start = t.currentSnapshot.snapshotId
    t.newDelete().deleteFile(a0).commit()
    val deleted = t.currentSnapshot.snapshotId
    val b10 = dataFile(t, "b", (10L, 19L))
    t.newAppend().appendFile(b10).commit()
    val refused = intercept[SluiceRuntimeException](appended(t, start))
    assert(
      refused.getMessage.contains(
        s"snapshot $deleted of table '${t.location}' (delete) is not an append"))
    assert(refused.getMessage.contains("option 'skipChanges'"))
    // skipped: the append after it is read
    val afterDelete = t.currentSnapshot.snapshotId
    assert(appended(t, start, skip = true).contains(Seq("city=b/10.parquet") -> afterDelete))
    // an overwrite is skipped with the rows it adds (as Iceberg's Spark source skips it)
    t.newOverwrite().deleteFile(b10).addFile(dataFile(t, "a", (20L, 29L))).commit()
    val overwrite = t.currentSnapshot.snapshotId
    assert(t.currentSnapshot.operation == "overwrite")
    assert(
      intercept[SluiceRuntimeException](appended(t, afterDelete)).getMessage
        .contains(s"snapshot $overwrite of table '${t.location}' (overwrite) is not an append"))
    assert(appended(t, afterDelete, skip = true).contains(Nil -> overwrite))
    // a rollback leaves the last snapshot planned off the table's history: nothing can be told
    t.manageSnapshots().rollbackTo(start).commit()
    val rolledBack = intercept[SluiceRuntimeException](appended(t, overwrite))
    assert(
      rolledBack.getMessage.contains(s"snapshot $overwrite") && rolledBack.getMessage
        .contains("is not an ancestor"))
  }
}

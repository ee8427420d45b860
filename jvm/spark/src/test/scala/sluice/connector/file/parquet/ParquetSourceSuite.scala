package sluice.connector.file.parquet

import java.io.{ByteArrayInputStream, ByteArrayOutputStream}
import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}
import java.time.Duration

import scala.jdk.CollectionConverters._

import org.apache.parquet.format.{FileMetaData, Util}
import org.apache.parquet.format.converter.ParquetMetadataConverter
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, window}
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.alignment.AlignedStreamSuite.splitStates
import sluice.connector.format.Provenance
import sluice.eventtime.WatermarkStrategy

/** Parquet files end to end against `spark.read.parquet` on the same directories. */
class ParquetSourceSuite extends AnyFunSuite with SparkSuiteBase {
  import ParquetSourceSuite._

  private var tables = 0

  private def run(
      source: ParquetSource,
      readOptions: Map[String, String] = Map.empty): (DataFrame, StreamingQuery) = {
    tables += 1
    val name = s"parquet_$tables"
    val q = Sluice
      .fromSource(spark, source, null, "files", readOptions)
      .writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    (spark.table(name), q)
  }

  private def data(df: DataFrame): DataFrame =
    df.drop(Provenance.SplitColumn, Provenance.PositionColumn, Provenance.TimestampColumn)

  /**
   * 3000 rows in 6 partition directories (`date=.../region=...`), each file of several row groups
   * (4 KB row groups), with nulls, decimals, dates, timestamps, a struct holding an array, and a map.
   */
  private lazy val table: Path = {
    val dir = tempDir("parquet").resolve("table")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS") {
      spark
        .range(0, Rows, 1, 2)
        .selectExpr(
          "id",
          "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('name-', id) END AS name",
          "CAST(id * 1.25 AS DECIMAL(12, 2)) AS amount",
          "date_add(DATE'2026-01-01', CAST(id % 30 AS INT)) AS day",
          s"timestamp_millis($BaseMs + id * 1000) AS ts",
          "named_struct('a', id % 3, 'b', CASE WHEN id % 5 = 0 THEN NULL ELSE array(id, id + 1) END) AS nested",
          "map('k', id) AS m",
          "CAST(id % 3 AS INT) AS region",
          "CASE WHEN id % 2 = 0 THEN DATE'2026-11-01' ELSE DATE'2026-11-02' END AS date")
        .write
        .option("parquet.block.size", "4096")
        .partitionBy("date", "region")
        .parquet(dir.toString)
    }
    dir
  }

  test(
    "the same rows as spark.read.parquet: inferred schema and partition columns, vectorized and not") {
    Seq("true", "false").foreach { vectorized =>
      withConf("spark.sql.parquet.enableVectorizedReader", vectorized) {
        val (df, _) = run(ParquetSource.builder().path(table.toString).build())
        val expected = spark.read.parquet(table.toString)
        assert(data(df).schema == expected.schema)
        assert(expected.schema.fieldNames.takeRight(2).toSeq == Seq("date", "region"))
        assert(expected.schema("date").dataType == org.apache.spark.sql.types.DateType)
        assert(
          multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq),
          s"vectorized=$vectorized")
        // one split per row group: several per file
        val files = expected.inputFiles.length
        assert(df.select(Provenance.SplitColumn).distinct().count() > 2 * files)
        // _position is the row index in the file, as Spark's _metadata.row_index
        val ours = df
          .selectExpr(
            "id",
            s"regexp_extract(${Provenance.SplitColumn}, '([^/#]+)(#.*)?$$', 1)",
            Provenance.PositionColumn)
          .collect()
          .toSeq
        val spark_ = spark.read
          .parquet(table.toString)
          .selectExpr("id", "_metadata.file_name", "_metadata.row_index")
          .collect()
          .toSeq
        assert(multiset(ours) == multiset(spark_))
      }
    }
  }

  test(
    "a given schema (columns reordered and left out, a partition column typed) and compact rows") {
    val schema =
      "ts TIMESTAMP, id BIGINT, region STRING, nested STRUCT<a: BIGINT, b: ARRAY<BIGINT>>, amount DECIMAL(12,2)"
    val source = ParquetSource.builder().path(table.toString).schema(schema).build()
    val expected = spark.read.schema(schema).parquet(table.toString)
    val (df, _) = run(source)
    assert(data(df).schema == expected.schema)
    assert(multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq))

    val (compact, _) = run(source, Map("forceTimestampSupport" -> "false"))
    assert(compact.schema == expected.schema)
    assert(multiset(compact.collect().toSeq) == multiset(expected.collect().toSeq))
  }

  test(
    "a batch read (spark.read) of Parquet files gives spark.read.parquet's rows; a monitored one is refused") {
    val df =
      Sluice.read(spark, ParquetSource.builder().path(table.toString).build(), null, "batch")
    val expected = spark.read.parquet(table.toString)
    assert(multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq))
    val e = intercept[Exception](
      Sluice
        .read(
          spark,
          ParquetSource.builder().path(table.toString).monitorIntervalMs(100).build(),
          null,
          "monitored")
        .collect())
    assert(
      e.getMessage.contains("it lists its paths again every 100 ms for new files"),
      e.getMessage)
  }

  test(
    "mergeSchema merges the files' schemas as spark.read.parquet does; without it one file's schema is used") {
    val dir = tempDir("merge")
    spark
      .range(0, 50)
      .selectExpr("id", "CAST(id AS STRING) AS s")
      .write
      .parquet(dir.resolve("k=1").toString)
    spark
      .range(50, 90)
      .selectExpr("id", "id * 2 AS doubled")
      .write
      .parquet(dir.resolve("k=2").toString)
    val merged = ParquetSource.builder().path(dir.toString).mergeSchema(true).build()
    val expected = spark.read.option("mergeSchema", "true").parquet(dir.toString)
    assert(expected.schema.fieldNames.toSeq.sorted == Seq("doubled", "id", "k", "s"))
    val (df, _) = run(merged)
    assert(data(df).schema == expected.schema)
    assert(multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq))
  }

  /**
   * A copy of a file of several small row groups whose footer `edit` changed, alone in a new
   * directory, and the edited footer (as stored: Thrift).
   */
  private def editedFooter(name: String)(
      edit: Seq[org.apache.parquet.format.RowGroup] => Unit): (Path, FileMetaData) = {
    val dir = tempDir(name)
    val written = dir.resolve("written")
    spark
      .range(0, 3000, 1, 1)
      .selectExpr("id", "concat('v-', id, repeat('x', CAST(id % 13 AS INT))) AS s")
      .write
      .option("parquet.block.size", "4096")
      .option("parquet.enable.dictionary", "false")
      .parquet(written.toString)
    val src = Files.list(written).iterator().asScala.find(_.toString.endsWith(".parquet")).get
    val bytes = Files.readAllBytes(src)
    val footerLength =
      ByteBuffer.wrap(bytes, bytes.length - 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt
    val footerStart = bytes.length - 8 - footerLength
    val meta = Util.readFileMetaData(new ByteArrayInputStream(bytes, footerStart, footerLength))
    val groups = meta.getRow_groups.asScala.toSeq
    assert(groups.size >= 3)
    edit(groups)
    val out = new ByteArrayOutputStream()
    out.write(bytes, 0, footerStart)
    val footer = new ByteArrayOutputStream()
    Util.writeFileMetaData(meta, footer)
    footer.writeTo(out)
    out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(footer.size).array())
    out.write("PAR1".getBytes(StandardCharsets.US_ASCII))
    val table = Files.createDirectories(dir.resolve("table"))
    Files.write(table.resolve("part-0.parquet"), out.toByteArray)
    (table, meta)
  }

  private def readColumnBatches(q: StreamingQuery): Boolean =
    q.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper]
      .streamingQuery
      .lastExecution
      .executedPlan
      .exists(_.isInstanceOf[org.apache.spark.sql.execution.ColumnarToRowExec])

  /** Reads `table` and checks its rows and row indexes against spark.read.parquet; whether batches were read. */
  private def readsAsSpark(table: Path, rowGroups: Int): Boolean = {
    val expected = spark.read
      .parquet(table.toString)
      .selectExpr("id", "s", "_metadata.row_index")
      .collect()
      .toSeq
    assert(expected.size == 3000)
    val (df, q) = run(ParquetSource.builder().path(table.toString).build())
    assert(multiset(
      df.select(col("id"), col("s"), col(Provenance.PositionColumn)).collect().toSeq) == multiset(
      expected))
    assert(df.select(Provenance.SplitColumn).distinct().count() == rowGroups)
    readColumnBatches(q)
  }

  /** Whether some row group's midpoint lies outside its own bytes (so it may select another's). */
  private def midpointOutside(meta: FileMetaData): Boolean = {
    val blocks = new ParquetMetadataConverter().fromParquetMetadata(meta).getBlocks.asScala.toSeq
    blocks.zip(RowGroups.midpoints(meta)).exists { case (b, m) =>
      m < b.getStartingPos || m >= b.getStartingPos + b.getCompressedSize
    }
  }

  test(
    "a footer with dictionary_page_offset 0 (PARQUET-1402): each split reads its own row group, as Spark does") {
    // as old parquet-mr wrote files without dictionaries: dictionary_page_offset set, to 0
    val (table, meta) = editedFooter("dict0")(
      _.foreach(_.getColumns.get(0).getMeta_data.setDictionary_page_offset(0L)))
    assert(
      midpointOutside(meta),
      "every midpoint lies in its row group's own bytes: the test would not show the difference")
    val mids = RowGroups.midpoints(meta)
    assert(
      mids.distinct.size < mids.size,
      s"midpoints $mids: the test means some row groups to share one")
    // a planned batch with a row group that shares its midpoint is read as rows
    assert(!readsAsSpark(table, mids.size))
  }

  test(
    "row groups alone at midpoints outside their own bytes are read as column batches, rows numbered by count") {
    val (table, meta) = editedFooter("distinctmid")(_.zipWithIndex.foreach { case (g, i) =>
      g.getColumns.get(0).getMeta_data.setDictionary_page_offset(0L)
      g.setTotal_compressed_size(
        2000L * (i + 1)
      ) // midpoints 1000, 2000, ...: distinct, mostly in other row groups
    })
    val mids = RowGroups.midpoints(meta)
    assert(midpointOutside(meta) && mids.distinct.size == mids.size, s"midpoints $mids")
    assert(
      readsAsSpark(table, mids.size),
      "row groups alone at their midpoints were read as rows")
  }

  test(
    "row groups that share a midpoint (an old footer) are read as rows, each split its own row group") {
    // every row group the same size in the footer, over dictionary_page_offset 0: one midpoint for all
    val (table, meta) = editedFooter("sharedmid")(groups =>
      groups.foreach { g =>
        g.getColumns.get(0).getMeta_data.setDictionary_page_offset(0L)
        g.setTotal_compressed_size(groups.head.getTotal_compressed_size)
      })
    val mids = RowGroups.midpoints(meta)
    assert(mids.size >= 3 && mids.distinct.size == 1, s"midpoints $mids")
    assert(
      !readsAsSpark(table, mids.size),
      "row groups sharing a midpoint were read as column batches")
  }

  private def failure(source: ParquetSource): String = {
    val q = Sluice
      .fromSource(spark, source, null, "failing", Map.empty[String, String])
      .writeStream
      .format("noop")
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    try awaitEnd(q)
    catch { case _: Exception => }
    val e = q.exception.getOrElse(fail("the query did not fail"))
    Iterator
      .iterate[Throwable](e)(_.getCause)
      .takeWhile(_ != null)
      .map(_.getMessage)
      .mkString(" / ")
  }

  test(
    "a parquet-mr row filter in the session's Hadoop configuration is refused: it would drop rows unseen") {
    val dir = table.toString // written before the setting
    Seq("parquet.private.read.filter.predicate", "parquet.read.filter").foreach { key =>
      val e = withConf(key, "anything")(
        intercept[IllegalArgumentException](
          ParquetSource
            .builder()
            .path(dir)
            .schema("id BIGINT")
            .build()))
      assert(
        e.getMessage.contains(s"the Hadoop configuration sets '$key', a Parquet row filter"),
        e.getMessage)
    }
  }

  test(
    "a BIGINT timestampColumn over a Parquet TIMESTAMP column is refused: its units would be wrong") {
    val dir = tempDir("units").resolve("t")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS") {
      spark
        .range(0, 10, 1, 1)
        .selectExpr("id", s"timestamp_millis($BaseMs + id) AS ts")
        .write
        .parquet(dir.toString)
    }
    val message = failure(
      ParquetSource
        .builder()
        .path(dir.toString)
        .schema("id BIGINT, ts BIGINT")
        .timestampColumn("ts")
        .build())
    assert(message.contains("TIMESTAMP(MICROS)") && message.contains("'ts'"), message)
  }

  test(
    "a partition value that does not fit the partition column's type fails naming the file and column") {
    val dir = tempDir("partvalues")
    spark.range(0, 10, 1, 1).selectExpr("id").write.parquet(dir.resolve("p=1").toString)
    val source = ParquetSource
      .builder()
      .path(dir.toString)
      .schema("id BIGINT, p INT")
      .monitorIntervalMs(100)
      .build()
    val q = Sluice
      .fromSource(spark, source, null, "late", Map.empty[String, String])
      .writeStream
      .format("noop")
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.ProcessingTime(100))
      .start()
    eventually("a first batch", q)(q.recentProgress.exists(_.numInputRows > 0))
    // a directory appearing while the query runs
    spark.range(0, 10, 1, 1).selectExpr("id").write.parquet(dir.resolve("p=abc").toString)
    try q.awaitTermination(60000)
    catch { case _: Exception => }
    val message = q.exception
      .map(e =>
        Iterator
          .iterate[Throwable](e)(_.getCause)
          .takeWhile(_ != null)
          .map(_.getMessage)
          .mkString(" / "))
      .getOrElse { q.stop(); fail("the query did not fail") }
    assert(message.contains("p=abc") && message.contains("partition column 'p'"), message)
  }

  test(
    "a file without a readable footer: monitored, read once complete; bounded (or old), fails naming it") {
    val dir = tempDir("notready").resolve("t")
    spark.range(0, 10, 1, 1).selectExpr("id").write.parquet(dir.toString)
    val staged = tempDir("staged").resolve("t")
    spark.range(10, 20, 1, 1).selectExpr("id").write.parquet(staged.toString)
    val complete = Files.list(staged).iterator().asScala.find(_.toString.endsWith(".parquet")).get
    val stagedMore = tempDir("staged-more").resolve("t")
    spark.range(100, 105, 1, 1).selectExpr("id").write.parquet(stagedMore.toString)
    val another =
      Files.list(stagedMore).iterator().asScala.find(_.toString.endsWith(".parquet")).get
    val inPlace = dir.resolve("late.parquet")
    Files.write(inPlace, "PAR1 still being written".getBytes(StandardCharsets.US_ASCII))

    val source = ParquetSource
      .builder()
      .path(dir.toString)
      .schema("id BIGINT")
      .monitorIntervalMs(100)
      .build()
    tables += 1
    val name = s"parquet_$tables"
    val q = Sluice
      .fromSource(spark, source, null, "notready", Map.empty[String, String])
      .writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.ProcessingTime(100))
      .start()
    try {
      eventually("the complete file's rows", q)(spark.table(name).count() == 10)
      // listed, and held back rather than failed or read
      eventually("the incomplete file counted as not ready", q)(
        Option(q.lastProgress).exists(
          _.sources.head.metrics.asScala
            .get(sluice.connector.file.FileMetrics.FilesNotReady)
            .contains("1")))
      // listings go on with it there: another complete file is read meanwhile, the cut one not
      Files.copy(another, dir.resolve("another.parquet"))
      eventually("another file's rows", q)(spark.table(name).count() == 15)
      assert(q.isActive && q.exception.isEmpty)
      Files.copy(complete, inPlace, java.nio.file.StandardCopyOption.REPLACE_EXISTING)
      eventually("the file's rows once complete", q)(spark.table(name).count() == 25)
    } finally q.stop()

    Files.write(inPlace, "PAR1 still being written".getBytes(StandardCharsets.US_ASCII))
    val bounded = failure(ParquetSource.builder().path(dir.toString).schema("id BIGINT").build())
    assert(
      bounded.contains("late.parquet") && bounded.contains("cannot read the Parquet footer"),
      bounded)
  }

  test(
    "a query stopped mid-row-group and restarted from its checkpoint reads every row exactly once") {
    val columns = Seq("id", "name", "amount", "day", "ts", "date", "region")
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    val source = ParquetSource.builder().path(table.toString).build()
    def start(trigger: Trigger, recordsPerBatch: String) =
      Sluice
        .fromSource(
          spark,
          source,
          null,
          "restart",
          Map("maxRecordsPerTrigger" -> recordsPerBatch))
        .select((columns :+ Provenance.SplitColumn :+ Provenance.PositionColumn).map(col): _*)
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0), "170")
    try
      eventually("three batches of the first run", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 3)
    finally first.stop()
    // the sink holds exactly the rows the offset log planned up to the last batch it committed
    val committed =
      sluice.Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val ends = sluice.Checkpoints.offset(ckpt, committed).splits.map { e =>
      RowGroupSplitSerializer.deserialize(e.splitVersion, e.split) -> e.position
    }
    assert(
      ends.exists { case (s, p) => p > s.firstRow && p < s.firstRow + s.rowCount },
      "no row group was stopped inside: the test would not show a restart mid-row-group")
    // the rows of the table at the row indexes planned: [firstRow, position) of each row group
    def key(path: String) = path.split('/').takeRight(3).mkString("/")
    val planned = spark.read
      .parquet(table.toString)
      .selectExpr("id", "_metadata.file_path", "_metadata.row_index")
      .collect()
      .filter { r =>
        ends.exists { case (s, p) =>
          key(s.path) == key(r.getString(1)) && r.getLong(2) >= s.firstRow && r.getLong(2) < p
        }
      }
      .map(_.getLong(0))
      .toSeq
    val partial = spark.read.parquet(out).select("id").collect().map(_.getLong(0)).toSeq
    assert(partial.nonEmpty)
    assert(partial.sorted == planned.sorted, s"the first run's batches 0 to $committed")

    val second = start(Trigger.AvailableNow(), "1000")
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val got = spark.read.parquet(out)
    assert(
      got.select(Provenance.SplitColumn, Provenance.PositionColumn).distinct().count() == Rows)
    assert(
      multiset(got.select(columns.map(col): _*).collect().toSeq) ==
        multiset(spark.read.parquet(table.toString).select(columns.map(col): _*).collect().toSeq))
  }

  test(
    "the event-time index: row-group statistics, answers at row-group granularity, off without statistics") {
    val dir = tempDir("index")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS") {
      spark
        .range(0, 1000, 1, 1)
        .selectExpr("id", s"timestamp_millis($BaseMs + id * 1000) AS ts")
        .write
        .option("parquet.block.size", "2048")
        .parquet(dir.resolve("micros").toString)
    }
    val source =
      ParquetSource.builder().path(dir.resolve("micros").toString).timestampColumn("ts").build()
    val enumerator = source.createEnumerator()
    val splits = enumerator.discoverSplits()
    assert(splits.size > 3 && enumerator.hasEventTimeIndex)
    // the statistics are the row groups' true min and max event times
    val actual = spark.read
      .parquet(dir.resolve("micros").toString)
      .selectExpr("_metadata.row_index AS r", "unix_millis(ts) AS ms")
      .collect()
      .map(r => r.getLong(0) -> r.getLong(1))
      .toMap
    splits.foreach { s =>
      val times = (s.firstRow until s.firstRow + s.rowCount).map(actual)
      assert(s.minEventTime.contains(times.min) && s.maxEventTime.contains(times.max), s)
    }
    val ranges = splits.map(s => sluice.api.SplitRange(s, s.firstRow, s.firstRow + s.rowCount))
    val second = splits(1)
    // a limit inside the second row group: the first is read whole, the second (straddling) and later not at all
    val cut = enumerator.positionsBefore(ranges, second.minEventTime.get + 1)
    assert(cut(splits.head.splitId) == splits.head.firstRow + splits.head.rowCount)
    assert(splits.tail.forall(s => cut(s.splitId) == s.firstRow))
    assert(
      enumerator.positionsBefore(ranges, second.maxEventTime.get + 1)(
        second.splitId) == second.firstRow + second.rowCount)
    // the index is inexact: cut through a time, a row group straddling it is taken whole
    assert(!enumerator.exactEventTimeIndex)
    val through = enumerator.positionsThrough(ranges, second.minEventTime.get + 1)
    assert(splits.take(2).forall(s => through(s.splitId) == s.firstRow + s.rowCount))
    assert(splits.drop(2).forall(s => through(s.splitId) == s.firstRow))
    assert(
      enumerator
        .latestEventTimes(ranges) == splits.map(s => s.splitId -> s.maxEventTime.get).toMap)
    assert(
      enumerator
        .firstEventTimes(ranges) == splits.map(s => s.splitId -> s.minEventTime.get).toMap)
    // splits and enumerator state survive the offset log
    val version = RowGroupSplitSerializer.version
    splits.foreach(s =>
      assert(
        RowGroupSplitSerializer.deserialize(version, RowGroupSplitSerializer.serialize(s)) == s))
    assert(splits.forall(_.aloneAtMidpoint), "row groups of a file each have their own midpoint")
    // a split of an offset log written before `aloneAtMidpoint` (version 1) reads as not alone: its rows are read as rows
    // (the fields before the path end in noEventTimes, alone, deleted, entry, partition values
    // and constants: false:true:::::)
    val v1 =
      RowGroupSplitSerializer.serialize(splits.head).replaceFirst(":false:true:::::", ":false:")
    assert(
      RowGroupSplitSerializer.deserialize(1, v1) == splits.head.copy(aloneAtMidpoint = false))
    // one written before `deleted` (version 2) has no deleted rows
    val v2 =
      RowGroupSplitSerializer
        .serialize(splits.head)
        .replaceFirst(":false:true:::::", ":false:true:")
    assert(RowGroupSplitSerializer.deserialize(2, v2) == splits.head)
    // one written before `entry` (version 3) has no table entry
    val v3 =
      RowGroupSplitSerializer
        .serialize(splits.head)
        .replaceFirst(":false:true:::::", ":false:true::")
    assert(RowGroupSplitSerializer.deserialize(3, v3) == splits.head)
    // one written before `partitionValues` (version 4) reads them from directories
    val v4 =
      RowGroupSplitSerializer
        .serialize(splits.head)
        .replaceFirst(":false:true:::::", ":false:true:::")
    assert(RowGroupSplitSerializer.deserialize(4, v4) == splits.head)
    // one written before `constants` (version 5) has none
    val v5 =
      RowGroupSplitSerializer
        .serialize(splits.head)
        .replaceFirst(":false:true:::::", ":false:true::::")
    assert(RowGroupSplitSerializer.deserialize(5, v5) == splits.head)
    val state = enumerator.snapshotState()
    assert(
      ParquetEnumeratorStateSerializer.deserialize(
        ParquetEnumeratorStateSerializer.version,
        ParquetEnumeratorStateSerializer.serialize(state)) == state)

    // INT96 timestamps (Spark's default) have no statistics: the source has no index
    withConf("spark.sql.parquet.outputTimestampType", "INT96") {
      spark
        .range(0, 10)
        .selectExpr("id", s"timestamp_millis($BaseMs + id) AS ts")
        .write
        .parquet(dir.resolve("int96").toString)
    }
    val int96 = ParquetSource
      .builder()
      .path(dir.resolve("int96").toString)
      .timestampColumn("ts")
      .build()
      .createEnumerator()
    assert(int96.discoverSplits().forall(!_.indexed))
    assert(!int96.hasEventTimeIndex)
    // and FileSource's builder points Parquet to its source
    val e = intercept[IllegalArgumentException](
      sluice.connector.file.FileSource.builder().path(dir.toString).format("parquet").build())
    assert(e.getMessage.contains("Parquet files are read by ParquetSource"))
  }

  private val Minute = 60000L

  /** Event-time window counts under a 10-minute watermark, and the rows the watermark dropped. */
  private def windowCounts(df: DataFrame, table: String): (StreamingQuery, Map[Long, Long]) = {
    val q = df
      .withWatermark("event_time", "10 minutes")
      .groupBy(window(col("event_time"), "1 minute"))
      .count()
      .writeStream
      .format("memory")
      .queryName(table)
      .outputMode(OutputMode.Update())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 180000)
    assert(q.exception.isEmpty, q.exception)
    val counts = spark
      .table(table)
      .collect()
      .map(r => r.getStruct(0).getTimestamp(0).getTime -> r.getLong(1))
      .groupBy(_._1)
      .map { case (w, cs) => w -> cs.map(_._2).max }
    (q, counts)
  }

  private def dropped(q: StreamingQuery): Long =
    q.recentProgress.flatMap(_.stateOperators).map(_.numRowsDroppedByWatermark).sum

  test(
    "alignment by the row-group index: files hours apart are read in event-time order, nothing dropped") {
    val dir = tempDir("aligned")
    // file f: 600 rows a second apart, starting f hours after file 0, in row groups of about 100 rows
    (0 until 3).foreach { f =>
      spark
        .range(0, 600, 1, 1)
        .selectExpr(
          "id + " + f * 1000 + " AS id",
          s"${BaseMs + f * 60 * Minute} + id * 1000 AS ts")
        .write
        .option("parquet.block.size", "2048")
        .parquet(dir.resolve(s"f=$f").toString)
    }
    val expected = spark.read
      .parquet(dir.toString)
      .collect()
      .map(r => Math.floorDiv(r.getAs[Long]("ts"), Minute) * Minute)
      .groupBy(identity)
      .map { case (w, s) => w -> s.length.toLong }
    val source = ParquetSource.builder().path(dir.toString).timestampColumn("ts").build()
    val splits = source.createEnumerator().discoverSplits()
    assert(splits.size >= 9 && splits.forall(_.indexed))
    val strategy = WatermarkStrategy.forMonotonousTimestamps()
    val limit = Map("maxRecordsPerTrigger" -> "250")

    val (plain, plainCounts) =
      windowCounts(Sluice.fromSource(spark, source, strategy, "plain", limit), "plain_pq")
    assert(
      dropped(plain) > 0 && plainCounts != expected,
      "without alignment the watermark should drop the late files' rows")

    val (aligned, counts) = windowCounts(
      Sluice.fromSource(
        spark,
        source,
        strategy.withWatermarkAlignment("g", Duration.ofMinutes(5)),
        "aligned",
        limit),
      "aligned_pq")
    assert(dropped(aligned) == 0)
    assert(counts == expected)
    val batches = aligned.recentProgress.filter(_.numInputRows > 0)
    assert(batches.forall(_.sources.head.metrics.asScala("alignment.mode") == "SplitsByIndex"))
    // the first batch reads the first hour only: the later files' row groups wait, placed by their statistics
    val later = splits.filter(s => !s.path.contains("/f=0/")).map(_.splitId).toSet
    assert(
      splitStates(batches.head)
        .filter(s => later.contains(s.split))
        .forall(s => s.paused || s.watermark.isEmpty))
  }

  test(
    "a row group straddling the horizon is read whole: another member ahead of it drops none of its rows") {
    // One row group of 1000 rows a second apart (0..999 s of event time, far more than the 60 s
    // delay minus the 10 s drift), and in the same group a generator ahead of the row group's
    // start, at 950..1000 s, read 5 records a batch: for several batches its frontier holds the
    // horizon inside the row group. Were the row group cut there, the Parquet split would read a
    // row a batch while counting as standing at the horizon, the generator would read on, and the
    // union's watermark (the generator's time - 60 s) would drop the Parquet rows read after it.
    val dir = tempDir("straddle")
    spark
      .range(0, 1000, 1, 1)
      .selectExpr("id", s"$BaseMs + id * 1000 AS ts")
      .write
      .parquet(dir.resolve("t").toString)
    val parquet =
      ParquetSource.builder().path(dir.resolve("t").toString).timestampColumn("ts").build()
    val splits = parquet.createEnumerator().discoverSplits()
    assert(
      splits.size == 1 && splits.head.rowCount == 1000 && splits.head.maxEventTime.contains(
        BaseMs + 999000L))
    val generator = sluice.connector.generator.GeneratorSource
      .builder()
      .splits(1)
      .recordsPerSplit(51)
      .eventTimeStartMs(BaseMs + 950000L)
      .eventTimeStepMs(1000L)
      .build()
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignment("straddle", Duration.ofSeconds(10))
    val rows = Sluice
      .fromSource(spark, parquet, strategy, "pq")
      .selectExpr("'pq' AS src", "id", "event_time")
      .union(
        Sluice
          .fromSource(spark, generator, strategy, "gen", Map("maxRecordsPerTrigger" -> "5"))
          .selectExpr("'gen' AS src", "id", "event_time"))
    // a stateful operator under a 60 s watermark (well above drift + out-of-orderness): late rows are dropped
    val q = rows
      .withWatermark("event_time", "60 seconds")
      .dropDuplicates("src", "id", "event_time")
      .writeStream
      .format("memory")
      .queryName("straddle_rows")
      .outputMode(OutputMode.Append())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 180000)
    assert(q.exception.isEmpty, q.exception)
    assert(dropped(q) == 0, s"${dropped(q)} rows dropped by the watermark")
    val expected = (0L until 1000L).map(i =>
      Row("pq", i, new java.sql.Timestamp(BaseMs + i * 1000))) ++
      (0L until 51L).map(i => Row("gen", i, new java.sql.Timestamp(BaseMs + 950000L + i * 1000)))
    assert(multiset(spark.table("straddle_rows").collect().toSeq) == multiset(expected))
    // the straddling row group went in one piece, in the first batch
    val first = q.recentProgress.filter(_.numInputRows > 0).head
    assert(
      first.sources.find(_.metrics.get("source") == "pq").map(_.numInputRows).contains(1000L),
      first.sources.map(s => s.metrics.get("source") -> s.numInputRows).toSeq)
  }
}

object ParquetSourceSuite {
  val Rows = 3000L
  val BaseMs = 1767225600000L // 2026-01-01T00:00:00Z
}

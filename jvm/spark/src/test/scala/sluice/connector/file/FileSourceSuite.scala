package sluice.connector.file

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.format.Provenance

/** FileSource end to end against Spark's own file sources on the same files. */
class FileSourceSuite extends AnyFunSuite with SparkSuiteBase {
  import FileTestData._

  private var tables = 0

  private def run(
      source: FileSource,
      readOptions: Map[String, String] = Map.empty): (DataFrame, StreamingQuery) = {
    tables += 1
    val name = s"file_$tables"
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

  private def sparkRead(
      format: String,
      schema: String,
      options: Map[String, String],
      dir: Path): DataFrame = {
    val reader = spark.read.format(format).options(options).option("recursiveFileLookup", "true")
    (if (schema == null) reader else reader.schema(schema)).load(dir.toString)
  }

  private def assertSame(
      format: String,
      schema: String,
      options: Map[String, String],
      dir: Path): DataFrame = {
    val builder = FileSource.builder().path(dir.toString).format(format)
    val withSchema = if (format == "text") builder else builder.schema(schema)
    val source = options.foldLeft(withSchema) { case (b, (k, v)) => b.option(k, v) }.build()
    val (df, _) = run(source)
    val expected = sparkRead(format, schema, options, dir)
    assert(data(df).schema == expected.schema)
    assert(multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq))
    df
  }

  private lazy val jsonDir = write(tempDir("json"), jsonFiles)
  private lazy val csvDir = write(tempDir("csv"), csvFiles)

  test(
    "json: the same rows as spark.read.json under PERMISSIVE, with and without the corrupt-record column") {
    val df = assertSame("json", JsonSchema, Map.empty, jsonDir)
    assert(df.count() > 10)
    val corrupt = assertSame("json", JsonSchemaWithCorrupt, Map.empty, jsonDir)
    assert(corrupt.where("_corrupt_record IS NOT NULL").count() >= 4)
    assert(corrupt.where("b = 'héllo wörld 🌍 日本語'").count() == 1)
    assert(df.schema.fieldNames.takeRight(3).toSeq == Seq("_split", "_position", "_timestamp"))
  }

  test("json: DROPMALFORMED gives the same rows and counts the drops in query progress") {
    val permissive = sparkRead("json", JsonSchemaWithCorrupt, Map.empty, jsonDir)
    // Spark refuses to query only the corrupt column of raw files: filter the collected rows
    val malformed =
      permissive.collect().count(r => !r.isNullAt(r.fieldIndex("_corrupt_record"))).toLong
    assert(malformed >= 4)
    assertSame("json", JsonSchema, Map("mode" -> "DROPMALFORMED"), jsonDir)
    val source = FileSource
      .builder()
      .path(jsonDir.toString)
      .schema(JsonSchema)
      .option("mode", "DROPMALFORMED")
      .build()
    val (_, q) = run(source)
    val metrics = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(metrics("malformedRecordsDropped").toLong == malformed)
    assert(metrics("missingFilesSkipped") == "0")
  }

  test(
    "json: the scan's SQL metrics count records, malformed records dropped and the bytes of the lines") {
    val content =
      "{\"id\": 1}\nnot json\n{\"id\": 2, \"s\": \"wörld\"}\r\nnor this\n{\"id\": 3}\n"
    val dir = write(tempDir("scan-metrics"), Seq("a.json" -> content))
    val source = FileSource
      .builder()
      .path(dir.toString)
      .schema("id BIGINT, s STRING")
      .option("mode", "DROPMALFORMED")
      .build()
    val (df, q) = run(source)
    assert(df.count() == 3)
    val scan = sluice.spark.ScanMetrics.ofLastBatch(q)
    assert(scan("recordsRead") == 3 && scan("malformedRecordsDropped") == 2)
    assert(scan("bytesRead") == content.getBytes(UTF_8).length)
    assert(scan("missingFilesSkipped") == 0 && scan("alignmentPausedMs") == 0)
  }

  test("json and csv: FAILFAST fails the query naming the file and the position") {
    Seq("json" -> (JsonSchema, jsonDir), "csv" -> (CsvSchema, csvDir)).foreach {
      case (format, (schema, dir)) =>
        val source = FileSource
          .builder()
          .path(dir.toString)
          .format(format)
          .schema(schema)
          .option("mode", "FAILFAST")
          .option(
            if (format == "csv") "header" else "primitivesAsString",
            if (format == "csv") "true" else "false")
          .build()
        val e = intercept[Exception](run(source))
        val text = Iterator
          .iterate[Throwable](e)(_.getCause)
          .takeWhile(_ != null)
          .map(_.getMessage)
          .mkString(" | ")
        assert(text.contains("Malformed record in split") && text.contains("FAILFAST"), text)
        assert(text.contains(s"a.$format"), text)
    }
  }

  test("csv with header: the same rows as spark.read.csv under each mode") {
    assertSame("csv", CsvSchema, Map("header" -> "true"), csvDir)
    assertSame("csv", CsvSchemaWithCorrupt, Map("header" -> "true"), csvDir)
    assertSame("csv", CsvSchema, Map("header" -> "true", "mode" -> "DROPMALFORMED"), csvDir)
    assertSame("csv", CsvSchemaWithCorrupt, Map("sep" -> ",", "nullValue" -> "x"), csvDir)
  }

  test("text: the same rows as spark.read.text, empty lines and line endings included") {
    assertSame("text", null, Map.empty, jsonDir)
    assertSame("text", null, Map.empty, csvDir)
  }

  test("a large file read as many byte-range splits gives the same multiset") {
    val dir = tempDir("big")
    val text = (0 until 3000).map { i =>
      val ending = if (i % 7 == 0) "\r\n" else if (i % 11 == 0) "\r" else "\n"
      s"""{"a": $i, "b": "${"x" * (i % 37)}ü"}""" + (if (i % 13 == 0) "\n{broken"
                                                     else "") + ending
    }.mkString
    Files.write(dir.resolve("big.json"), text.getBytes(UTF_8))
    val source = FileSource
      .builder()
      .path(dir.toString)
      .schema("a INT, b STRING, _corrupt_record STRING")
      .maxSplitBytes(4001)
      .build()
    val (df, _) = run(source)
    assert(df.select("_split").distinct().count() > 20)
    val expected = sparkRead("json", "a INT, b STRING, _corrupt_record STRING", Map.empty, dir)
    assert(multiset(data(df).collect().toSeq) == multiset(expected.collect().toSeq))
  }

  test(
    "a query stopped mid-file and restarted from its checkpoint reads every line exactly once") {
    val dir = tempDir("restart")
    val files = (0 until 3).map { f =>
      val lines =
        (0 until 1500).map(i => s"""{"a": ${f * 10000 + i}, "b": "${"y" * (i % 29)}"}""")
      Files.write(dir.resolve(s"part-$f.json"), lines.mkString("\n").getBytes(UTF_8))
      s"part-$f.json" -> lines
    }.toMap
    val source = FileSource.builder().path(dir.toString).schema("a INT, b STRING").build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger, recordsPerBatch: String) =
      Sluice
        .fromSource(
          spark,
          source,
          null,
          "restart",
          Map("maxRecordsPerTrigger" -> recordsPerBatch))
        .select("a", "b")
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0), "300")
    try
      eventually("two batches of the first run", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 2)
    finally first.stop()
    // The sink holds exactly the lines the offset log planned up to the last batch the sink
    // committed, however far the first run got before stop() landed: a split at byte position p
    // has read the lines of its range that start before p.
    val committed =
      sluice.Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val planned = sluice.Checkpoints.offset(ckpt, committed).splits.flatMap { e =>
      val split = FileSplitSerializer.deserialize(e.splitVersion, e.split)
      val lines = files(split.path.split('/').last)
      val starts = lines.scanLeft(0L)((at, line) => at + line.getBytes(UTF_8).length + 1)
      lines.indices.filter(i => starts(i) >= split.start && starts(i) < e.position).map(lines)
    }
    val plannedRows = spark.read
      .schema("a INT, b STRING")
      .json(spark.createDataset(planned)(org.apache.spark.sql.Encoders.STRING))
      .collect()
      .toSeq
    val partial = spark.read.parquet(out).collect().toSeq
    assert(partial.nonEmpty, "two batches committed, yet the first run wrote nothing")
    assert(multiset(partial) == multiset(plannedRows), s"the first run's batches 0 to $committed")

    val second = start(Trigger.AvailableNow(), "1000")
    awaitEnd(second)
    assert(second.exception.isEmpty)
    val got = spark.read.parquet(out).collect().toSeq
    assert(
      multiset(got) == multiset(
        sparkRead("json", "a INT, b STRING", Map.empty, dir).collect().toSeq))
  }

  test("maxRecordsPerTrigger counts records, estimated from the bytes per record read so far") {
    val dir = tempDir("limit")
    val lines = (0 until 6000).map(i => s"""{"a": $i, "b": "${"z" * (i % 40)}"}""")
    Files.write(dir.resolve("part.json"), lines.mkString("\n").getBytes(UTF_8))
    val source = FileSource.builder().path(dir.toString).schema("a INT, b STRING").build()
    val q = Sluice
      .fromSource(spark, source, null, "limit", Map("maxRecordsPerTrigger" -> "1000"))
      .writeStream
      .format("noop")
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    val sizes = q.recentProgress.map(_.numInputRows).filter(_ > 0).toSeq
    assert(sizes.sum == 6000)
    // the first batch guesses 100 bytes per record; from then on batches hold ~1000 records
    assert(sizes.tail.init.forall(n => n >= 800 && n <= 1200), sizes)
  }

  test("with monitorIntervalMs new files are picked up; hidden files in progress are not") {
    val dir = tempDir("monitor")
    def put(name: String, lines: Seq[String]): Unit = {
      val tmp = dir.resolve(s".$name.tmp")
      Files.write(tmp, lines.mkString("", "\n", "\n").getBytes(UTF_8))
      Files.move(tmp, dir.resolve(name))
    }
    put("1.json", Seq("""{"a": 1}""", """{"a": 2}"""))
    val source =
      FileSource.builder().path(dir.toString).schema("a INT").monitorIntervalMs(1).build()
    assert(source.boundedness == sluice.api.Boundedness.ContinuousUnbounded)
    val q = Sluice
      .fromSource(spark, source)
      .writeStream
      .format("memory")
      .queryName("file_monitor")
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.ProcessingTime(0))
      .start()
    try {
      processAllAvailable(q)
      assert(spark.table("file_monitor").count() == 2)
      Files.write(dir.resolve(".hidden.json"), """{"a": 99}""".getBytes(UTF_8))
      put("2.json", Seq("""{"a": 3}"""))
      eventually("the rows of 2.json", q) {
        processAllAvailable(q)
        spark.table("file_monitor").count() >= 3
      }
      assert(
        spark.table("file_monitor").select("a").collect().map(_.getInt(0)).sorted.toSeq == Seq(
          1,
          2,
          3))
    } finally q.stop()
  }

  test("the event time of timestampColumn reaches progress and the end state lists the files") {
    val source =
      FileSource.builder().path(jsonDir.toString).schema(JsonSchema).timestampColumn("ts").build()
    val (_, q) = run(source)
    val expectedMax = java.time.Instant.parse("2024-01-02T00:00:00Z").toEpochMilli
    val metrics = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(metrics("maxEventTimeMs").toLong == expectedMax)

    val enumerator = source.createEnumerator()
    val splits = enumerator.discoverSplits()
    assert(splits.map(_.path) == splits.map(_.path).sorted)
    assert(enumerator.noMoreSplits)
    val end = enumerator.endState(
      splits.map(s =>
        sluice.api.SplitProgress(
          s.splitId,
          s.end,
          if (s.path.endsWith("a.json")) Some(expectedMax) else None,
          1L)))
    assert(end.maxEventTime.contains(expectedMax))
    assert(end.details("fileCount") == "3")
    Seq("a.json", "empty.json", "sub/b.json").foreach(f =>
      assert(end.details("files").contains(f)))

    val restored = source.restoreEnumerator(
      FileEnumeratorStateSerializer
        .deserialize(1, FileEnumeratorStateSerializer.serialize(enumerator.snapshotState())))
    assert(restored.discoverSplits().isEmpty)
    assert(
      FileSplitSerializer
        .deserialize(FileSplitSerializer.version, FileSplitSerializer.serialize(splits.head)) ==
        splits.head)
    // checkpoints of version 1 (before compressed files) still restore, as uncompressed splits
    val s = splits.head
    assert(
      FileSplitSerializer.deserialize(
        1,
        s"${s.start}:${s.end}:${s.fileLength}:${s.modificationTime}:${s.path}") == s)
  }

  test(
    "a file that vanished after listing: a clear error, or a counted skip with ignoreMissingFiles") {
    val dir =
      write(tempDir("vanish"), Seq("keep.json" -> "{\"a\": 1}\n", "gone.json" -> "{\"a\": 2}\n"))
    def splitsOf(source: FileSource) = source.createEnumerator().discoverSplits()
    val strict = FileSource.builder().path(dir.toString).schema("a INT").build()
    val splits = splitsOf(strict)
    Files.delete(dir.resolve("gone.json"))
    val gone = splits.find(_.path.endsWith("gone.json")).get
    val e = intercept[java.io.FileNotFoundException](
      FileReaderSuite.readAll(strict, Seq(gone -> (0L, gone.end))))
    assert(
      e.getMessage.contains("gone.json") && e.getMessage.contains("ignoreMissingFiles"),
      e.getMessage)

    val lenient =
      FileSource.builder().path(dir.toString).schema("a INT").ignoreMissingFiles(true).build()
    val context = sluice.api.ReaderContext()
    val reader = lenient.createReader(context)
    val (rows, _) =
      FileReaderSuite.drain(reader, splits.map(s => sluice.api.SplitRange(s, 0L, s.end)))
    assert(rows.map(_._1) == Seq("{\"a\": 1}".length.toLong + 1))
    assert(context.countersOf(gone.splitId)("missingFilesSkipped") == 1L)
  }

  test(
    "a file changed after listing: a clear error, or its unread part skipped and counted with ignoreChangedFiles") {
    val dir = write(
      tempDir("changed"),
      Seq("grown.json" -> "{\"a\": 1}\n{\"a\": 2}\n", "same.json" -> "{\"a\": 3}\n"))
    val strict = FileSource.builder().path(dir.toString).schema("a INT").build()
    val splits = strict.createEnumerator().discoverSplits()
    // listed while its writer was still at it: a half line, completed after the listing
    Files.write(
      dir.resolve("grown.json"),
      "{\"a\": 4}\n".getBytes(UTF_8),
      java.nio.file.StandardOpenOption.APPEND)
    val grown = splits.find(_.path.endsWith("grown.json")).get
    val e = intercept[IllegalStateException](
      FileReaderSuite.readAll(strict, Seq(grown -> (0L, grown.end))))
    assert(
      e.getMessage.contains("grown.json") && e.getMessage.contains(
        "changed after it was listed") &&
        e.getMessage.contains("ignoreChangedFiles"),
      e.getMessage)

    val lenient =
      FileSource.builder().path(dir.toString).schema("a INT").ignoreChangedFiles(true).build()
    val context = sluice.api.ReaderContext()
    val reader = lenient.createReader(context)
    val (rows, finished) =
      try FileReaderSuite.drain(reader, splits.map(s => sluice.api.SplitRange(s, 0L, s.end)))
      finally reader.close()
    assert(finished == splits.map(_.splitId).toSet)
    assert(rows.map(_._3) == Seq("3"), rows)
    assert(context.countersOf(grown.splitId)("changedFilesSkipped") == 1L)
  }

  test("bad options fail at build, naming the option, the value and what is allowed") {
    def error(b: FileSource.Builder): String =
      intercept[IllegalArgumentException](b.build()).getMessage
    val base = FileSource.builder().path("/nowhere")
    assert(error(FileSource.builder().schema("a INT")).contains("missing required option 'path'"))
    assert(error(base).contains("missing required option 'schema' for format 'json'"))
    assert(
      error(base.schema("a INT").option("mode", "LENIENT")) ==
        "FileSource: invalid value 'LENIENT' for option 'mode'; allowed: PERMISSIVE, DROPMALFORMED or FAILFAST.")
    assert(error(base.format("parquet")).contains(
      "Parquet files are read by ParquetSource (row-group splits): build it with " +
        "ParquetSource.builder(), or give the options to Sluice (source=file, format=parquet)."))
    assert(
      error(base.format("xml"))
        .contains("invalid value 'xml' for option 'format'; allowed: json, csv or text"))
    assert(
      error(base.schema("a INT").option("sep", ";"))
        .contains("option 'sep' does not apply to format 'json'; it applies to csv"))
    assert(error(base.schema("a INT").option("multiLine", "true")).contains("option 'multiLine'"))
    assert(
      error(base.schema("a INT").option("mdoe", "FAILFAST")).contains("unknown option 'mdoe'"))
    assert(
      error(base.schema("a INT, b STRING").timestampColumn("b")) ==
        "FileSource: invalid value 'b' for option 'timestampColumn'; allowed: a TIMESTAMP or BIGINT column of the schema: the schema has none.")
    assert(
      error(base.schema("not a schema (("))
        .contains("invalid value 'not a schema ((' for option 'schema'"))
    assert(error(base.format("text").schema("a INT")).contains("fixed schema 'value STRING'"))
    assert(
      error(base.schema("a INT, _corrupt_record INT"))
        .contains("corrupt-record column '_corrupt_record'"))
    assert(error(base.schema("a INT").maxSplitBytes(0)).contains("option 'maxSplitBytes'"))
  }
}

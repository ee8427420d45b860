package sluice.connector.file

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.format.Provenance

/**
 * Compressed line files (gzip, bzip2, zstd) against Spark's own file sources on the same files:
 * the same rows, malformed records counted, one split per file with positions in the
 * decompressed stream, exact restarts mid-file, and corrupt files named in the error.
 */
class CompressedFilesSuite extends AnyFunSuite with SparkSuiteBase {
  import CompressedTestData._
  import FileTestData._

  private var tables = 0

  private def causes(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")

  /** Sluice's rows (data columns only) and the largest `malformedRecordsDropped` its progress reported. */
  private def sluiceRows(source: FileSource): (DataFrame, Long) = {
    tables += 1
    val name = s"compressed_$tables"
    val q = Sluice
      .fromSource(spark, source, null, "files")
      .writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    val dropped = q.recentProgress.flatMap(
      _.sources.map(_.metrics.asScala.getOrElse("malformedRecordsDropped", "0").toLong))
    (
      spark
        .table(name)
        .drop(Provenance.SplitColumn, Provenance.PositionColumn, Provenance.TimestampColumn),
      (0L +: dropped.toSeq).max)
  }

  private def sluiceSource(
      format: String,
      schema: String,
      options: Map[String, String],
      dir: Path): FileSource = {
    val builder = FileSource.builder().path(dir.toString).format(format)
    val withSchema = if (format == "text") builder else builder.schema(schema)
    options.foldLeft(withSchema) { case (b, (k, v)) => b.option(k, v) }.build()
  }

  private def sparkRead(
      format: String,
      schema: String,
      options: Map[String, String],
      dir: Path): DataFrame = {
    val reader = spark.read.format(format).options(options).option("recursiveFileLookup", "true")
    (if (schema == null) reader else reader.schema(schema)).load(dir.toString)
  }

  /** Asserts Sluice's rows are Spark's; returns how many rows and how many drops Sluice counted. */
  private def assertSame(
      format: String,
      schema: String,
      options: Map[String, String],
      dir: Path): (Long, Long) = {
    val (df, dropped) = sluiceRows(sluiceSource(format, schema, options, dir))
    val expected = sparkRead(format, schema, options, dir)
    assert(df.schema == expected.schema)
    val rows = df.collect().toSeq
    assert(multiset(rows) == multiset(expected.collect().toSeq), s"$format $options in $dir")
    (rows.size.toLong, dropped)
  }

  private lazy val jsonDirs =
    Codecs.map(ext => ext -> writeCompressed(tempDir(s"json-$ext"), utf8(jsonFiles), ext)).toMap
  private lazy val csvDirs =
    Codecs.map(ext => ext -> writeCompressed(tempDir(s"csv-$ext"), utf8(csvFiles), ext)).toMap

  Codecs.foreach { ext =>
    test(s".$ext: json, csv with a header and text give spark.read's rows, one split per file") {
      val (rows, _) = assertSame("json", JsonSchemaWithCorrupt, Map.empty, jsonDirs(ext))
      assert(rows > 10)
      assertSame("csv", CsvSchema, Map("header" -> "true"), csvDirs(ext))
      assertSame("text", null, Map.empty, jsonDirs(ext))
      // whatever maxSplitBytes says: a compressed file is never cut into byte ranges
      val splits = FileSource
        .builder()
        .path(jsonDirs(ext).toString)
        .schema(JsonSchema)
        .maxSplitBytes(8)
        .build()
        .createEnumerator()
        .discoverSplits()
      assert(
        splits
          .map(_.path.replaceAll(".*/json-[^/]*/", ""))
          .sorted == Seq(s"a.json.$ext", s"empty.json.$ext", s"sub/b.json.$ext"))
      splits.foreach { s =>
        assert(s.compressed && s.start == 0 && s.splitId == s.path)
        val name =
          s.path.stripPrefix("file:").replaceAll(".*/json-[^/]*/", "").stripSuffix(s".$ext")
        // positions end at the decompressed length, not at the compressed one
        assert(s.end == jsonFiles.toMap.apply(name).getBytes(UTF_8).length, name)
        assert(s.fileLength == Files.size(java.nio.file.Paths.get(s.path.stripPrefix("file:"))))
      }
    }

    test(s".$ext: DROPMALFORMED gives Spark's rows and counts every record it drops") {
      Seq(
        ("json", JsonSchema, Map.empty[String, String], jsonDirs(ext)),
        ("csv", CsvSchema, Map("header" -> "true"), csvDirs(ext))).foreach {
        case (format, schema, options, dir) =>
          val (permissive, _) = assertSame(format, schema, options, dir)
          val (dropping, dropped) =
            assertSame(format, schema, options + ("mode" -> "DROPMALFORMED"), dir)
          assert(
            dropped > 0 && dropped == permissive - dropping,
            s"$format: Spark dropped ${permissive - dropping}")
      }
    }
  }

  test(
    "deflate, concatenated gzip members and several zstd frames are read as Spark reads them") {
    val dir = tempDir("members")
    Files.write(
      dir.resolve("d.json.deflate"),
      compress(jsonLines(0, 50).getBytes(UTF_8), "deflate"))
    // `cat a.gz b.gz`: one file, two gzip members (and the same for zstd frames)
    Files.write(
      dir.resolve("two.json.gz"),
      compress(jsonLines(100, 30).getBytes(UTF_8), "gz") ++ compress(
        jsonLines(130, 30).getBytes(UTF_8),
        "gz"))
    Files.write(
      dir.resolve("two.json.zst"),
      compress(jsonLines(200, 30).getBytes(UTF_8), "zst") ++ compress(
        jsonLines(230, 30).getBytes(UTF_8),
        "zst"))
    val (rows, _) = assertSame("json", "id INT, pad STRING", Map.empty, dir)
    assert(rows == 50 + 60 + 60)
  }

  test(
    "positions are offsets in the decompressed stream: any cut of a compressed file reads each line once") {
    // a byte-order mark, CR, CRLF, blank lines and no final newline, as FileReaderSuite has them uncompressed
    val text =
      "\uFEFFfirst\nsecond\r\nthird\rfourth\n\n\r\nlong " + ("é" * 3000) + "\r\nx\r\r\n\n" +
        (0 until 2000).map(i => s"line $i").mkString("\n") + "\nlast, no newline"
    val plain = FileTestData.write(tempDir("plain"), Seq("f.txt" -> text))
    val plainSource = FileSource.builder().path(plain.toString).format("text").build()
    val plainSplit = plainSource.createEnumerator().discoverSplits().head
    val expected =
      FileReaderSuite.readAll(plainSource, Seq(plainSplit -> (0L, plainSplit.end)))._1
    Codecs.foreach { ext =>
      val dir = writeCompressed(tempDir(s"cut-$ext"), Seq("f.txt" -> text.getBytes(UTF_8)), ext)
      val source = FileSource.builder().path(dir.toString).format("text").build()
      val split = source.createEnumerator().discoverSplits().head
      assert(split.end == plainSplit.end)
      // the same positions (after each line, and line starts) as the uncompressed file's
      assert(FileReaderSuite.readAll(source, Seq(split -> (0L, split.end)))._1 == expected)
      val rnd = new scala.util.Random(11)
      (0 until 8).foreach { _ =>
        val cuts =
          (0L +: Seq.fill(3)(rnd.nextInt(split.end.toInt).toLong) :+ split.end).distinct.sorted
        val lines = cuts.sliding(2).flatMap { case Seq(a, b) =>
          FileReaderSuite.readAll(source, Seq(split -> (a, b)))._1
        }
        assert(lines.toSeq == expected, s".$ext cuts $cuts")
      }
    }
    // a csv header is skipped only at the start, even when a range resumes after it in the decompressed stream
    val csv = writeCompressed(
      tempDir("cut-csv"),
      Seq("h.csv" -> "\n\nid,name\n1,a\n2,b\n".getBytes(UTF_8)),
      "gz")
    val csvSource = FileSource
      .builder()
      .path(csv.toString)
      .format("csv")
      .schema("id INT, name STRING")
      .option("header", "true")
      .build()
    val csvSplit = csvSource.createEnumerator().discoverSplits().head
    assert(
      FileReaderSuite.readAll(csvSource, Seq(csvSplit -> (0L, csvSplit.end)))._1.map(_._3) == Seq(
        "1",
        "2"))
    val resumedAfterHeader = FileReaderSuite.readAll(csvSource, Seq(csvSplit -> (3L, 12L)))._1 ++
      FileReaderSuite.readAll(csvSource, Seq(csvSplit -> (12L, csvSplit.end)))._1
    assert(resumedAfterHeader.map(_._3) == Seq("1", "2"))
  }

  test(
    "a range that reads on where the last one ended takes up the file left open, with the same lines") {
    val dir =
      writeCompressed(tempDir("open"), Seq("f.json" -> jsonLines(0, 3000).getBytes(UTF_8)), "zst")
    val source = FileSource.builder().path(dir.toString).format("text").build()
    val split = source.createEnumerator().discoverSplits().head
    val expected = FileReaderSuite.readAll(source, Seq(split -> (0L, split.end)))._1
    val cuts = Seq(
      0L,
      1000L,
      1001L,
      50000L,
      split.end - 1,
      split.end
    ) // mid-line, at a line start and near the end
    val before = OpenDecompressedFiles.resumed.get()
    val lines = cuts.sliding(2).flatMap { case Seq(a, b) =>
      FileReaderSuite.readAll(source, Seq(split -> (a, b)))._1
    }
    assert(lines.toSeq == expected)
    assert(
      OpenDecompressedFiles.resumed.get() - before == cuts.size - 2
    ) // every range but the first
  }

  test(
    "a compressed file left open is closed once idle for openCompressedFileIdleMs, whether or not anything reads on") {
    val dir =
      writeCompressed(tempDir("idle"), Seq("f.json" -> jsonLines(0, 10).getBytes(UTF_8)), "gz")
    val split = FileSource
      .builder()
      .path(dir.toString)
      .format("text")
      .build()
      .createEnumerator()
      .discoverSplits()
      .head
    val closed = new java.util.concurrent.CountDownLatch(1)
    val stream = new java.io.ByteArrayInputStream(Array.emptyByteArray) {
      override def close(): Unit = closed.countDown()
    }
    OpenDecompressedFiles.park(
      split,
      5L,
      new OpenDecompressedFiles.Parked(stream, new LineReader(stream, 5L), -1L),
      maxOpen = 16,
      maxIdleMs = 200)
    // no range of any query touches the cache again (a stopped query): the file is closed anyway
    assert(
      closed.await(30, java.util.concurrent.TimeUnit.SECONDS),
      "the idle file was never closed")
    assert(OpenDecompressedFiles.take(split, 5L).isEmpty)
  }

  test(
    "the way to a position past 2 GiB of a gzip stream reads through it, never Hadoop's int-narrowed skip") {
    // Hadoop's DecompressorStream.skip narrows its count to an int: at 2^31 + 5 it throws at once
    // (and at 2^32 + k it never ends). Reading through ends at the stream's real end instead.
    val dir =
      writeCompressed(tempDir("far"), Seq("f.json" -> jsonLines(0, 100).getBytes(UTF_8)), "gz")
    val path = new org.apache.hadoop.fs.Path(dir.resolve("f.json.gz").toString)
    val conf = new org.apache.hadoop.conf.Configuration()
    val in = Compression.open(path, conf, Compression.codecOf(path, conf).get, 4096)
    try {
      val e = intercept[java.io.EOFException](Compression.discard(in, (1L << 31) + 5))
      assert(e.getMessage.endsWith(s"bytes before position ${(1L << 31) + 5}"))
    } finally in.close()
  }

  test("a truncated or corrupt compressed file fails the query with a message that names it") {
    val dir = tempDir("truncated")
    val whole = compress(jsonLines(0, 500).getBytes(UTF_8), "gz")
    Files.write(dir.resolve("ok.json.gz"), whole)
    Files.write(dir.resolve("cut.json.gz"), whole.take(whole.length / 2))
    val e = intercept[Exception](
      sluiceRows(FileSource.builder().path(dir.toString).schema("id INT").build()))
    assert(
      causes(e).contains("could not decompress") && causes(e).contains("cut.json.gz") &&
        causes(e).contains("corrupt or truncated"),
      causes(e))

    // corrupted after it was listed, with the length and modification time it was listed with: the reader names it
    val later = tempDir("corrupted")
    val file = later.resolve("x.json.gz")
    Files.write(file, whole)
    val source = FileSource.builder().path(later.toString).schema("id INT").build()
    val split = source.createEnumerator().discoverSplits().head
    val mtime = Files.getLastModifiedTime(file)
    val broken = whole.clone()
    (whole.length / 3 until whole.length / 3 + 64).foreach(i =>
      broken(i) = (broken(i) ^ 0x5a).toByte)
    Files.write(file, broken)
    Files.setLastModifiedTime(file, mtime)
    val read =
      intercept[Exception](FileReaderSuite.readAll(source, Seq(split -> (0L, split.end))))
    assert(causes(read).contains(s"could not decompress '${split.path}'"), causes(read))
  }

  test(
    "a .json.gz written in place into a monitored folder is read once complete: never partly, never twice") {
    val dir = tempDir("in-place")
    Files.write(dir.resolve("first.json.gz"), compress(jsonLines(0, 20).getBytes(UTF_8), "gz"))
    val late = dir.resolve("late.json.gz")
    val whole = compress(jsonLines(1000, 3000).getBytes(UTF_8), "gz")
    Files.write(late, Array.emptyByteArray) // its writer has just created it
    val source = FileSource
      .builder()
      .path(dir.toString)
      .schema("id INT, pad STRING")
      .monitorIntervalMs(50)
      .build()
    tables += 1
    val name = s"compressed_$tables"
    val q = Sluice
      .fromSource(spark, source, null, "inplace")
      .writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.ProcessingTime(50))
      .start()
    def ids(file: String) = spark
      .table(name)
      .where(s"${Provenance.SplitColumn} LIKE '%/$file'")
      .select("id")
      .collect()
      .map(_.getInt(0))
      .toSeq
    def notReady = Option(q.lastProgress)
      .map(_.sources.head.metrics.asScala.getOrElse(FileMetrics.FilesNotReady, ""))
      .orNull
    try {
      eventually("the complete file's rows", q)(ids("first.json.gz").size == 20)
      // halfway written; meanwhile other files come and are read in batches of their own
      Files.write(late, whole.take(whole.length / 2))
      // each other file read is a listing that saw the cut one
      (0 until 2).foreach { i =>
        Files.write(
          dir.resolve(s"other-$i.json.gz"),
          compress(jsonLines(100 * (i + 1), 10).getBytes(UTF_8), "gz"))
        eventually(s"other-$i's rows", q)(ids(s"other-$i.json.gz").size == 10)
      }
      assert(q.isActive && q.exception.isEmpty)
      assert(ids("late.json.gz").isEmpty) // no row of the cut stream
      eventually("the cut file counted as not ready", q)(notReady == "1")

      Files.write(late, whole) // the writer is done, in place
      eventually("the late file's rows", q)(ids("late.json.gz").size >= 3000)
      // a listing after it was read: the file is known now, and not read again
      Files.write(
        dir.resolve("other-2.json.gz"),
        compress(jsonLines(300, 10).getBytes(UTF_8), "gz"))
      eventually("other-2's rows", q)(ids("other-2.json.gz").size == 10)
      val expected = spark.read.schema("id INT, pad STRING").json(late.toString).collect().toSeq
      val read = spark
        .table(name)
        .where(s"${Provenance.SplitColumn} LIKE '%/late.json.gz'")
        .select("id", "pad")
        .collect()
        .toSeq
      assert(expected.size == 3000 && multiset(read) == multiset(expected))
      assert(spark.table(name).count() == 20 + 10 + 10 + 3000 + 10)
      eventually("no file waited for", q)(notReady == "0")
    } finally q.stop()
  }

  test(
    "a .json.gz read over many batches is decompressed from its start once (compressedFileOpens)") {
    val dir = tempDir("opens")
    Files.write(dir.resolve("a.json.gz"), compress(jsonLines(0, 2000).getBytes(UTF_8), "gz"))

    /** The batches that read rows, and the source's `compressedFileOpens` once the query ended. */
    def run(configure: FileSource.Builder => FileSource.Builder): (Int, Long) = {
      tables += 1
      val name = s"compressed_$tables"
      val source =
        configure(FileSource.builder().path(dir.toString).schema("id INT, pad STRING")).build()
      val q = Sluice
        .fromSource(spark, source, null, "opens", Map("maxRecordsPerTrigger" -> "250"))
        .writeStream
        .format("memory")
        .queryName(name)
        .option("checkpointLocation", tempDir("ckpt").toString)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(q)
      q.exception.foreach(e => throw e)
      assert(
        spark.table(name).select("id").collect().map(_.getInt(0)).toSeq.sorted == (0 until 2000))
      (
        q.recentProgress.count(_.numInputRows > 0),
        q.lastProgress.sources.head.metrics
          .asScala(sluice.api.ReaderCounters.CompressedFileOpens)
          .toLong)
    }
    val (batches, opens) = run(identity)
    assert(batches >= 4 && opens == 1, s"$batches batches")
    // the counter counts real opens: with no file kept open, every batch decompresses from the start
    val (uncachedBatches, uncachedOpens) = run(_.maxOpenCompressedFiles(0))
    assert(uncachedBatches >= 4 && uncachedOpens == uncachedBatches, s"$uncachedBatches batches")
  }

  test("a compression format Spark cannot decompress is refused with a clear message") {
    val dir = tempDir("xz")
    Files.write(dir.resolve("a.json.xz"), Array[Byte](0xfd.toByte, '7', 'z', 'X', 'Z', 0))
    val e = intercept[IllegalArgumentException](
      FileSource
        .builder()
        .path(dir.toString)
        .schema("id INT")
        .build()
        .createEnumerator()
        .discoverSplits())
    assert(
      e.getMessage.contains(
        "a.json.xz' is compressed (.xz), a format neither Spark nor Hadoop can decompress"),
      e.getMessage)
  }

  test(
    ".json.gz read a few records per batch, stopped mid-file and restarted from its checkpoint: every record once") {
    val dir = tempDir("restart")
    Files.write(dir.resolve("a.json.gz"), compress(jsonLines(0, 700).getBytes(UTF_8), "gz"))
    Files.write(dir.resolve("b.json.gz"), compress(jsonLines(700, 500).getBytes(UTF_8), "gz"))
    val out = tempDir("restart-sink").toString
    val ckpt = tempDir("restart-ckpt").toString
    def start(trigger: Trigger): StreamingQuery =
      Sluice
        .fromSource(
          spark,
          FileSource.builder().path(dir.toString).schema("id INT, pad STRING").build(),
          null,
          "gz",
          Map("maxRecordsPerTrigger" -> "40"))
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0))
    try eventually("three batches", first)(first.recentProgress.count(_.numInputRows > 0) >= 3)
    finally first.stop()
    // the first run stopped inside a compressed file: some of a file's records are in the sink, not all
    val perFile = spark.read
      .parquet(out)
      .groupBy(Provenance.SplitColumn)
      .count()
      .collect()
      .map(r => r.getString(0) -> r.getLong(1))
      .toMap
    assert(perFile.nonEmpty && perFile.values.sum < 1200, perFile)
    assert(
      perFile.exists { case (f, n) => n < (if (f.endsWith("a.json.gz")) 700 else 500) },
      perFile)

    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val ids = spark.read.parquet(out).select("id").collect().map(_.getInt(0)).toSeq
    assert(ids.sorted == (0 until 1200))
    // the positions are the lines' offsets in the decompressed stream
    val positions = spark.read
      .parquet(out)
      .where("id IN (0, 1, 700)")
      .select("id", Provenance.PositionColumn)
      .collect()
      .map(r => r.getInt(0) -> r.getLong(1))
      .toMap
    assert(positions == Map(0 -> 0L, 1 -> (jsonLines(0, 1).length.toLong), 700 -> 0L))
  }
}

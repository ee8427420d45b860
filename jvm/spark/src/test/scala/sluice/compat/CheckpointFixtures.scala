package sluice.compat

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.time.Duration

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{DataFrame, SparkSession}

import sluice.{CheckoutFiles, Sluice}
import sluice.connector.file.FileSource
import sluice.connector.file.parquet.ParquetSource
import sluice.connector.generator.GeneratorSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.connector.table.delta.DeltaSource
import sluice.connector.table.iceberg.IcebergSource
import sluice.hybrid.HybridSource

/**
 * A Kafka record of a fixture: produced in order, so its offset is its place in its partition. A
 * `late` record is produced by the writer only once the query committed what comes before it
 * (`lateDue`: by default a batch; a real-time batch reads what is there, and the late records
 * make the batch the writer stops in); a restore produces every record.
 */
final case class FixtureRecord(
    partition: Int,
    value: String,
    timestamp: Long,
    late: Boolean = false)

/** A topic a fixture reads: created with `partitions` in a fresh broker, then given `records`. */
final case class FixtureTopic(name: String, partitions: Int, records: Seq[FixtureRecord])

/** Where an offset holds its source's checkpoint, which depends on its size and its build. */
sealed trait Held

object Held {

  /** In the offset itself: up to 16 KiB of JSON (versions 1 and 2). */
  case object InOffset extends Held

  /** In a file of the source's folder the offset names, kept whole (version 2, before ceb19f5). */
  case object WholeFile extends Held

  /** In chunks, listed by a file the offset names (version 3, since ceb19f5). */
  case object Chunks extends Held
}

/**
 * A query whose checkpoint this build wrote and keeps as a test fixture: a later build restarts
 * it and must read on exactly where it stopped. The query is defined here once, for the writer
 * ([[WriteCheckpointFixtures]]) and the reader ([[CheckpointFixturesSuite]]); what it read is kept
 * with the checkpoint (input files, Kafka records), so the restart sees the same data at the same
 * offsets. Every query gives one string column, `row`, so that rows compare as strings.
 */
trait CheckpointFixture {
  def name: String

  /** Writes the input files into `input`, once, when the fixture is written. */
  def writeInput(spark: SparkSession, input: Path): Unit = ()

  /**
   * Writes input files into `late`, once, before the written run starts; the writer moves them
   * into the input folder when [[lateDue]] (with the topics' `late` records): files a monitored
   * source finds in a later batch. Written up front because a real-time batch holds every task
   * slot while it runs.
   */
  def writeLateInput(spark: SparkSession, late: Path): Unit = ()

  /**
   * Whether the written run has committed what comes before the late records and files: then
   * the writer produces and moves them.
   */
  def lateDue(run: FixtureRun): Boolean = run.committed.nonEmpty

  /**
   * Moves what the input files name by absolute path from `from` to `to` (the input placeholder
   * when kept, the restored folder when restarted): a table's metadata names its files so.
   */
  def relocateInput(input: Path, from: String, to: String): Unit = ()

  /**
   * Adds to the input once the written run stopped, before it is kept: what the restart finds
   * and the kept run did not (an append to a table read unbounded).
   */
  def afterStop(input: Path): Unit = ()

  /** The topics, named as the checkpoint names them. */
  def topics: Seq[FixtureTopic] = Nil

  /** The query, reading `input` and the broker at `bootstrap`; one string column `row`. */
  def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame

  /** Every row the inputs hold: what the written and the restarted runs read together. */
  def all: Seq[String]

  /** Read options of the query: small batches, so that the writer stops part of the way. */
  def readOptions: Map[String, String] = Map("maxRecordsPerTrigger" -> "10")

  /** Whether the rows committed so far are where the writer stops. */
  def writtenEnough(committed: Seq[String]): Boolean =
    committed.nonEmpty && committed.size < all.size

  /**
   * Written and restarted in real-time mode (`Trigger.RealTime` of [[RealTimeBatch]]) instead of
   * micro-batches: its batches end only at their duration, so the writer stops once the batch
   * after the first committed one has read the rest, before that batch commits.
   */
  def realTime: Boolean = false

  /**
   * The commit whose build wrote the kept fixture, when not a build that writes its format: such
   * a fixture was written by this writer ported to that commit (see the fixtures' README.md), and
   * [[WriteCheckpointFixtures]] refuses to write it again with today's format.
   */
  def keptFrom: Option[String] = None

  /**
   * The version of every Sluice offset in the kept offset log: what the fixture proves is read.
   * Offsets that hold their checkpoint have been version 2 since 52979d5.
   */
  def offsetVersion: Int = 2

  /** Where the kept offsets hold their source's checkpoint. */
  def held: Held = Held.InOffset

  /**
   * Where the kept checkpoint's last committed batch left some of its splits, by source (its place
   * in the offset log) and split id, as the committed rows say: the positions the restart must
   * continue from (empty: not derived). `input` is where the restart reads the kept input files
   * (a files source's split ids hold their path).
   */
  def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] = Map.empty

  /**
   * The event time of record `index` (from 0) of a split, by source and split id, where the
   * fixture knows it (None: not derived). A split's largest event time read, which the kept
   * offsets and progress hold and its watermark starts from after the restart, is that of the
   * last record it read.
   */
  def eventTimeOf(source: Int, split: String, index: Long): Option[Long] = None

  /**
   * The splits read to their end before the last batch logged, which its offset counts apart
   * from the others: how many, their records and their largest event time (None: not derived).
   */
  def finishedBeforeLast: Option[(Long, Long, Option[Long])] = None

  /**
   * Stopped with the batch after the first committed one logged and not committed: the writer
   * fails it before its tasks run, as a driver killed then leaves it, so that the restart replays
   * a batch whose start and end offsets the kept build wrote.
   */
  def inFlight: Boolean = false

  /** Whether `run` is where the writer stops it. */
  def writtenEnough(run: FixtureRun): Boolean =
    if (realTime) writtenEnough(run.committed) && run.all.size >= all.size
    else if (inFlight)
      writtenEnough(run.committed) && run.query.exception.exists(FixtureRun.stoppedInFlight)
    else writtenEnough(run.committed)
}

object CheckpointFixtures {

  /** Where the fixtures are kept in the checkout (also read from there by the suite). */
  def root: Path = CheckoutFiles("jvm", "spark", "src", "test", "resources", "checkpoints")

  /** Stands for the input folder's absolute path in a kept checkpoint. */
  val InputPlaceholder = "@SLUICE_FIXTURE_INPUT@"

  /**
   * Stands for a topic's id in a kept checkpoint: a Kafka source checkpoints the id to notice a
   * re-created topic, and a fresh broker gives the same topic another id.
   */
  def topicIdPlaceholder(topic: String): String = s"@SLUICE_FIXTURE_TOPIC_ID:$topic@"

  /** The id the broker at `bootstrap` gave `topic`. */
  def topicId(bootstrap: String, topic: String): String = {
    val props = new java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    val admin = org.apache.kafka.clients.admin.Admin.create(props)
    try
      admin
        .describeTopics(java.util.List.of(topic))
        .allTopicNames()
        .get(60, java.util.concurrent.TimeUnit.SECONDS)
        .get(topic)
        .topicId()
        .toString
    finally admin.close()
  }

  private val Mapper = new ObjectMapper()

  /**
   * The modification time of every input file, when written and when restored: a files source's
   * checkpoint holds each file's length and time and takes a file whose time changed for a
   * rewritten one, and git keeps no file times.
   */
  val InputModifiedMs = 1700000000000L

  def setInputTimes(input: Path): Unit =
    regularFiles(input).foreach(f =>
      Files.setLastModifiedTime(f, java.nio.file.attribute.FileTime.fromMillis(InputModifiedMs)))

  private def kafka(bootstrap: String, topic: String): KafkaSource =
    KafkaSource
      .builder()
      .bootstrapServers(bootstrap)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
      .build()

  /** Kafka's rows as `partition:offset:value`: a restart at the wrong offset shows in them. */
  private def kafkaRows(df: DataFrame): DataFrame =
    df.selectExpr("CONCAT(partition, ':', offset, ':', CAST(value AS STRING)) AS row")

  private def kafkaRowsOf(topic: FixtureTopic): Seq[String] =
    topic.records.groupBy(_.partition).toSeq.flatMap { case (p, records) =>
      records.zipWithIndex.map { case (r, offset) => s"$p:$offset:${r.value}" }
    }

  /** `count` records over two partitions, one a second from a fixed time. */
  private def topic(name: String, count: Int): FixtureTopic =
    FixtureTopic(
      name,
      2,
      (0 until count).map(i => FixtureRecord(i % 2, s"$name-$i", 1700000000000L + i * 1000L)))

  /**
   * Lines of about 100 bytes: a files source turns `maxRecordsPerTrigger` into bytes at 100 a
   * record before its first batch, so shorter lines would all be read in one.
   */
  private val Padding = "x" * 90

  private def writeJsonLines(
      dir: Path,
      files: Int,
      perFile: Int,
      first: Int = 0,
      firstFile: Int = 0): Unit =
    (0 until files).foreach { f =>
      val ids = (0 until perFile).map(i => first + f * perFile + i)
      Files.write(
        dir.resolve(f"part-${firstFile + f}%02d.json"),
        ids
          .map(id => s"""{"id":$id,"pad":"$Padding"}""")
          .mkString("", "\n", "\n")
          .getBytes(UTF_8))
    }

  /** Input files read whole, as a file source's splits name them (by path) and place them. */
  private def wholeFiles(
      input: Path,
      names: Seq[String],
      prefix: String = ""): Map[String, Long] =
    names.map { n =>
      val file = input.resolve(n)
      s"${prefix}file:$file" -> Files.size(file)
    }.toMap

  private def jsonFiles(dir: Path): FileSource =
    FileSource.builder().path(dir.toString).format("json").schema("id BIGINT").build()

  /** A split's position is the number of its records read; record `i` of split `s` has id `i * splits + s`. */
  private def generatorPositions(splits: Int, committed: Seq[String]): Map[String, Long] =
    (0 until splits)
      .map(s => s.toString -> committed.count(_.toLong % splits == s).toLong)
      .toMap

  /**
   * The generator, 2 splits of 40 records. In real-time mode 30 records a split at a record a
   * second since the query started: the first open batch reads about 20 of each, the next the
   * rest in about 10 s and is stopped before it ends; the restart finds them all made (the rate
   * counts from the start its enumerator state keeps).
   */
  final class GeneratorFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    private val perSplit = if (realTime) 30L else 40L
    private val source = {
      val b = GeneratorSource.builder().splits(2).recordsPerSplit(perSplit).eventTimeStartMs(0L)
      (if (realTime) b.rowsPerSecond(1) else b).build()
    }
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else super.readOptions
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      Map(0 -> generatorPositions(2, committed))
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] =
      Some(this.source.config.eventTimeMs(split.toInt, index))
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame =
      Sluice
        .fromSource(spark, source, null, name, readOptions)
        .selectExpr("CAST(id AS STRING) AS row")
    def all: Seq[String] =
      for (s <- 0 until 2; i <- 0L until perSplit) yield source.config.recordId(s, i).toString
  }

  /**
   * Kafka, 40 records over two partitions. In real-time mode the first half is read and committed
   * in one open batch, the second half, produced late, by the next, which the stop cuts short.
   */
  final class KafkaFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      override val inFlight: Boolean = false,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    override val topics = {
      val t = topic(s"sluice-compat-$name", 40)
      Seq(t.copy(records = t.records.zipWithIndex.map { case (r, i) =>
        r.copy(late = realTime && i >= 20)
      }))
    }
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else super.readOptions
    // a partition's position is the number of its records read (rows are partition:offset:value)
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      Map(
        0 -> (0 until topics.head.partitions)
          .map(p => s"${topics.head.name}-$p" -> committed.count(_.startsWith(s"$p:")).toLong)
          .toMap)
    // a record's event time is its timestamp
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] = {
      val partition = split.stripPrefix(s"${topics.head.name}-").toInt
      topics.head.records.filter(_.partition == partition).lift(index.toInt).map(_.timestamp)
    }
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame =
      kafkaRows(
        Sluice.fromSource(spark, kafka(bootstrap, topics.head.name), null, name, readOptions))
    def all: Seq[String] = kafkaRowsOf(topics.head)
  }

  /**
   * Four JSON files of 10 lines, ids 0 to 39 (file f holds 10 f to 10 f + 9). In real-time mode
   * the source is monitored and the last two files come late: the first open batch reads the
   * first two, a later one finds and reads the others and is stopped before it ends.
   */
  final class FilesFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    override def writeInput(spark: SparkSession, input: Path): Unit =
      writeJsonLines(input, if (realTime) 2 else 4, 10)
    override def writeLateInput(spark: SparkSession, late: Path): Unit =
      if (realTime) writeJsonLines(late, 2, 10, first = 20, firstFile = 2)
    override def lateDue(run: FixtureRun): Boolean = lateFilesDue(run)
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else super.readOptions
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame = {
      val source =
        if (!realTime) jsonFiles(input)
        else
          FileSource
            .builder()
            .path(input.toString)
            .format("json")
            .schema("id BIGINT")
            .monitorIntervalMs(MonitorMs)
            .build()
      Sluice
        .fromSource(spark, source, null, name, readOptions)
        .selectExpr("CAST(id AS STRING) AS row")
    }
    def all: Seq[String] = (0 until 40).map(_.toString)
    // in real-time mode the first open batch read the first two files whole: a file is a split
    // named by its path, its position the bytes read
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      if (!realTime) Map.empty
      else Map(0 -> wholeFiles(input, Seq("part-00.json", "part-01.json")))
  }

  /**
   * Four Parquet files of a row group of 10 rows, ids 0 to 39 (file f holds 10 f to 10 f + 9).
   * In real-time mode the source is monitored and the last two files come late, as in
   * [[FilesFixture]].
   */
  final class ParquetFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    private def writeFiles(spark: SparkSession, dir: Path, files: Range): Unit =
      files.foreach { f =>
        val staged = dir.resolve(s"staged-$f")
        spark
          .range(f * 10L, f * 10L + 10L)
          .selectExpr("id", "CONCAT('p', id) AS v")
          .coalesce(1)
          .write
          .parquet(staged.toString)
        val part = Files
          .list(staged)
          .iterator()
          .asScala
          .find(_.getFileName.toString.endsWith(".parquet"))
          .get
        Files.move(part, dir.resolve(f"part-$f%02d.parquet"))
        deleteTree(staged)
      }
    override def writeInput(spark: SparkSession, input: Path): Unit =
      writeFiles(spark, input, if (realTime) 0 until 2 else 0 until 4)
    override def writeLateInput(spark: SparkSession, late: Path): Unit =
      if (realTime) writeFiles(spark, late, 2 until 4)
    override def lateDue(run: FixtureRun): Boolean = lateFilesDue(run)
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else super.readOptions
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame = {
      val b = ParquetSource.builder().path(input.toString)
      Sluice
        .fromSource(
          spark,
          (if (realTime) b.monitorIntervalMs(MonitorMs) else b).build(),
          null,
          name,
          readOptions)
        .selectExpr("CONCAT(id, ':', v) AS row")
    }
    def all: Seq[String] = (0 until 40).map(i => s"$i:p$i")
    // a file of one row group is one split, named by its path; its position is the index of the
    // next row to read, and file f holds ids 10 f to 10 f + 9 (in real-time mode only the first
    // two, read whole, are in the last committed offset, among its finished splits)
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      Map(
        0 -> (0 until (if (realTime) 2 else 4))
          .map(f =>
            s"file:${input.resolve(f"part-$f%02d.parquet")}" ->
              committed.count(_.takeWhile(_ != ':').toInt / 10 == f).toLong)
          .toMap)
  }

  /** 2026-01-01T00:00Z, the first event time of `tests/fixture_tables.py`'s tables. */
  private val TableStartMs = 1767225600000L

  /**
   * An Iceberg or a Delta table (`format`) written by the format's own Python writer
   * (`tests/fixture_tables.py`, run by the `.venv`'s Python or `SLUICE_FIXTURE_PYTHON`): three
   * appends of 4, 4 and 34 rows, a data file each, an hour apart in event time (`ts`), read under
   * watermark alignment (a minute's drift) by the files' statistics, so one file after the other.
   * Stopped in flight: the first batch read the first file to its end, and the restart replays
   * the second batch, whose offset the kept build wrote once that file was read (the file counted
   * among the finished splits). Read `unbounded` (`monitorIntervalMs`), the table gains a fourth
   * append of 10 rows once the run stopped, which the restart plans from the version the kept
   * state planned last. The table is kept in the input folder (the writer's run read it there),
   * its paths moved with it.
   */
  final class TableFixture(
      val name: String,
      format: String,
      unbounded: Boolean = false,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2)
      extends CheckpointFixture {
    require(format == "iceberg" || format == "delta", format)
    override def inFlight: Boolean = true
    private def writeTable(input: Path, more: Boolean): Unit = {
      val python =
        sys.env.getOrElse(
          "SLUICE_FIXTURE_PYTHON",
          CheckoutFiles(".venv", "bin", "python").toString)
      val script = CheckoutFiles("tests", "fixture_tables.py").toString
      val command =
        Seq(python, script, format, input.toString) ++ (if (more) Seq("more") else Nil)
      val done = new ProcessBuilder(command: _*).inheritIO().start().waitFor()
      require(done == 0, s"${command.mkString(" ")} exited with $done")
    }
    override def writeInput(spark: SparkSession, input: Path): Unit =
      writeTable(input, more = false)
    override def afterStop(input: Path): Unit = if (unbounded) writeTable(input, more = true)
    override def relocateInput(input: Path, from: String, to: String): Unit =
      FixtureTables.rewritePaths(input, from, to)
    private def table(input: Path): Path = input.resolve(format)
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame = {
      val source = format match {
        // by its last metadata file (pyiceberg's catalog writes no version hint)
        case "iceberg" =>
          val metadata = Files
            .list(table(input).resolve("metadata"))
            .iterator()
            .asScala
            .filter(_.getFileName.toString.endsWith(".metadata.json"))
            .maxBy(_.getFileName.toString)
          val b = IcebergSource.builder().table(metadata.toString).timestampColumn("ts")
          (if (unbounded) b.monitorIntervalMs(200L) else b).build()
        case _ =>
          val b = DeltaSource.builder().table(table(input).toString).timestampColumn("ts")
          (if (unbounded) b.monitorIntervalMs(200L) else b).build()
      }
      val strategy = WatermarkStrategy
        .forMonotonousTimestamps()
        .withWatermarkAlignment(name, Duration.ofMinutes(1), Duration.ofMillis(100))
      Sluice
        .fromSource(spark, source, strategy, name, readOptions)
        .selectExpr("CONCAT(id, ':', v) AS row")
    }
    def all: Seq[String] = (0 until (if (unbounded) 52 else 42)).map(i => s"$i:p$i")
    // the data files the kept run planned (not the one appended after it stopped), as each
    // library names them (Iceberg's metadata by URI, Delta Kernel by Hadoop's path), with their
    // rows and smallest id
    private def files(input: Path): Seq[(String, Long, Long)] =
      FixtureTables.dataFiles(table(input), "id").collect {
        case (file, rows, min) if min < 42 =>
          (if (format == "iceberg") file.toUri.toString else s"file:$file", rows, min)
      }
    // a data file of one row group is one split, named by its path; its position is the index of
    // the next row to read
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] = {
      val ids = committed.map(_.takeWhile(_ != ':').toLong)
      Map(0 -> files(input).map { case (id, rows, min) =>
        id -> ids.count(i => i >= min && i < min + rows).toLong
      }.toMap)
    }
    // the first file, ids 0-3, read whole by the first batch, never read again
    override def finishedBeforeLast: Option[(Long, Long, Option[Long])] =
      Some((1L, 4L, Some(TableStartMs + 3 * 60000L)))
    // ids 0-3 from minute 0, 4-7 from minute 60, 8-41 from minute 120, 42-51 from minute 200 of
    // 2026-01-01 (UTC)
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] = {
      val file =
        java.nio.file.Paths.get(new java.net.URI(split.replaceFirst("^file:/+", "file:///")))
      val id = FixtureTables.dataFiles(file, "id").head._3 + index
      val minute =
        if (id < 4) id
        else if (id < 8) 60 + id - 4
        else if (id < 42) 120 + id - 8
        else 200 + id - 42
      Some(TableStartMs + minute * 60000L)
    }
  }

  /**
   * Files, then Kafka: stopped while still in the files, or once Kafka was read. In real-time
   * mode the first open batch reads the files and the switch comes at its end: stopped before
   * the switch, the first batch is the committed one and the next, the switch's, read Kafka;
   * after it, the switch's batch read the first 10 records and is committed, and the next read
   * the other 10, produced late.
   */
  final class HybridFixture(
      val name: String,
      afterSwitch: Boolean,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    override val topics = Seq(
      FixtureTopic(
        s"sluice-compat-$name",
        2,
        (0 until 20).map(i =>
          FixtureRecord(
            i % 2,
            s"""{"id":${2000 + i}}""",
            1700000000000L + i * 1000L,
            late = realTime && afterSwitch && i >= 10))))
    override def writeInput(spark: SparkSession, input: Path): Unit =
      writeJsonLines(input, 2, 10, first = 1000)
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else Map("maxRecordsPerTrigger" -> "5")
    // after the switch in real-time mode: once a committed batch read Kafka
    override def lateDue(run: FixtureRun): Boolean =
      run.committed.exists(_.toInt >= 2000)
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame = {
      val files = FileSource
        .builder()
        .path(input.toString)
        .format("json")
        .schema("id BIGINT")
        .build()
      val hybrid = HybridSource
        .builder(files)
        .addSource(
          KafkaSource
            .builder()
            .bootstrapServers(bootstrap)
            .topics(topics.head.name)
            .startingOffsets(OffsetsInitializer.earliest())
            .option("format", "json")
            .option("schema", "id BIGINT")
            .build())
        .build()
      Sluice
        .fromSource(spark, hybrid, null, name, readOptions)
        .selectExpr("CAST(id AS STRING) AS row")
    }
    def all: Seq[String] =
      ((1000 until 1020) ++ (2000 until 2020)).map(_.toString)
    // before the switch in real-time mode, the hybrid's files (its first source: ids `0:`), read
    // whole by the first open batch; after the switch, the Kafka partitions (the hybrid's second
    // source: ids `1:`): record i of the topic, id 2000 + i, went to partition i % 2
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      if (!afterSwitch)
        if (!realTime) Map.empty
        else Map(0 -> wholeFiles(input, Seq("part-00.json", "part-01.json"), prefix = "0:"))
      else
        Map(
          0 -> (0 until 2)
            .map(p =>
              s"1:${topics.head.name}-$p" ->
                committed.map(_.toInt).count(id => id >= 2000 && (id - 2000) % 2 == p).toLong)
            .toMap)
    // after the switch, the Kafka partition p's record i is the topic's record 2 i + p
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] =
      if (!afterSwitch) None
      else {
        val partition = split.stripPrefix(s"1:${topics.head.name}-").toInt
        topics.head.records.filter(_.partition == partition).lift(index.toInt).map(_.timestamp)
      }
    override def writtenEnough(committed: Seq[String]): Boolean = {
      val fromKafka = committed.count(_.toInt >= 2000)
      committed.nonEmpty && committed.size < all.size &&
      (if (afterSwitch) fromKafka > 0
       // a real-time batch reads the files whole
       else fromKafka == 0 && (realTime || committed.size < 20))
    }
  }

  /**
   * The generator with so many splits that its checkpoint is over `SluiceOffset.InlineLimitChars`
   * of JSON: each offset names a file kept in the source's folder, which since ceb19f5 lists the
   * checkpoint's chunks (offset version 3) and before it held the checkpoint whole (version 2).
   * The generator because its checkpoint names no input path and no topic id: such a file and a
   * chunk are named by the hash of their content, which reading checks, so they cannot carry the
   * placeholders the other fixtures' checkpoints hold (thousands of files or a topic of hundreds
   * of partitions make such checkpoints too, but ones a restore could not relocate).
   */
  final class ManySplitsGeneratorFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 3,
      override val held: Held = Held.Chunks,
      override val inFlight: Boolean = false)
      extends CheckpointFixture {
    private val splits = 400
    private val perSplit = 3L
    private val source =
      GeneratorSource
        .builder()
        .splits(splits)
        .recordsPerSplit(perSplit)
        .eventTimeStartMs(0L)
        .build()
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      Map(0 -> generatorPositions(splits, committed))
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] =
      Some(this.source.config.eventTimeMs(split.toInt, index))
    // a record of every split a batch
    override def readOptions: Map[String, String] = Map("maxRecordsPerTrigger" -> s"$splits")
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame =
      Sluice
        .fromSource(spark, source, null, name, readOptions)
        .selectExpr("CAST(id AS STRING) AS row")
    def all: Seq[String] =
      for (s <- 0 until splits; i <- 0L until perSplit)
        yield source.config.recordId(s, i).toString
  }

  /**
   * The duration of a real-time fixture's batches: long enough that the writer sees a batch's
   * rows and stops before that batch ends and commits.
   */
  val RealTimeBatch = "20 seconds"

  /** How often a monitored real-time fixture lists its input folder. */
  val MonitorMs = 500L

  /**
   * When a monitored real-time fixture's late files are moved in: once a second open batch
   * committed. The first read the first files whole; planning the second took them out of the
   * offset's splits (counted as finished), so that only the files the enumerator state knows
   * keep the restart from reading them again. (Moved in once the first batch committed, they
   * could come before the second is planned: it would read them, and the first files would stay
   * among the splits of the last committed offset, which would then keep them from being read
   * again whatever the state says.)
   */
  def lateFilesDue(run: FixtureRun): Boolean = run.committedBatches.size >= 2

  /**
   * Two generators in one alignment group, read by one query. In real-time mode (alignment
   * live) each has one split, so that the query's two tasks have a slot each (`local[2]`): `a`
   * of 30 records at a record a second, `b` of 60 at two a second (half a second apart in event
   * time), so that the first open batch reads about 20 of `a` and 40 of `b` (a restart that gave
   * one member the other's offset would show in the rows) and the next the rest, stopped before
   * it ends; a drift of 30 s, which the two never come near.
   */
  final class AlignmentGroupFixture(
      val name: String,
      override val keptFrom: Option[String] = None,
      override val offsetVersion: Int = 2,
      batches: Int = 1,
      override val realTime: Boolean = false)
      extends CheckpointFixture {
    private val splits = if (realTime) 1 else 2
    // each batch reads 5 records of every split (10 a source); after two, the last committed
    // offset holds what the first read: each split's reported position and largest event time
    override def writtenEnough(committed: Seq[String]): Boolean =
      if (realTime) committed.nonEmpty && committed.size < all.size
      else committed.size >= 20 * batches && committed.size < all.size
    override def readOptions: Map[String, String] =
      if (realTime) Map.empty else super.readOptions
    private def gen(start: Long, rate: Int) = {
      val b = GeneratorSource
        .builder()
        .splits(splits)
        .recordsPerSplit(30L * rate)
        .eventTimeStartMs(start)
        .eventTimeStepMs(1000L / rate)
      (if (realTime) b.rowsPerSecond(rate) else b).build()
    }
    private val sources =
      Seq("a" -> gen(1700000000000L, 1), "b" -> gen(1700000010000L, if (realTime) 2 else 1))
    def stream(spark: SparkSession, input: Path, bootstrap: String): DataFrame = {
      val strategy = WatermarkStrategy
        .forMonotonousTimestamps()
        .withWatermarkAlignment("compat", Duration.ofSeconds(if (realTime) 30 else 20))
      sources
        .map { case (n, s) =>
          Sluice
            .fromSource(spark, s, strategy, s"$name-$n", readOptions)
            .selectExpr(s"CONCAT('$n:', id) AS row")
        }
        .reduce(_ union _)
    }
    def all: Seq[String] =
      for ((n, s) <- sources; split <- 0 until splits; i <- 0L until s.config.recordsPerSplit.get)
        yield s"$n:${s.config.recordId(split, i)}"
    // each source's committed records of split s, rows `n:id`, record i having id
    // `splits` i + s
    private def readOf(committed: Seq[String], n: String, split: Int): Seq[Long] =
      committed
        .filter(_.startsWith(s"$n:"))
        .map(_.drop(n.length + 1).toLong)
        .filter(_ % splits == split)
        .map(_ / splits)
    override def continuesAt(committed: Seq[String], input: Path): Map[Int, Map[String, Long]] =
      sources.zipWithIndex.map { case ((n, _), i) =>
        i -> (0 until splits).map(s => s.toString -> readOf(committed, n, s).size.toLong).toMap
      }.toMap
    override def eventTimeOf(source: Int, split: String, index: Long): Option[Long] =
      Some(sources(source)._2.config.eventTimeMs(split.toInt, index))
  }

  /**
   * The last commit writing offsets of version 1 (the parent of 52979d5, which made them 2); its
   * offsets over 16 KiB were version 2 and named the checkpoint kept whole.
   */
  val V1Commit = "9bda799"

  /**
   * The last of the three commits (ceb19f5 to it) writing offsets that hold their checkpoint as
   * version 3; b630da1 wrote them as version 2 again.
   */
  val V3InlineCommit = "8fd15d3"

  /**
   * The oldest commit with both table sources (the merge of the Delta source; the Iceberg source
   * came shortly before): bounded reads only, Parquet enumerator state version 1.
   */
  val TablesV1Commit = "55c12a4"

  /**
   * The oldest commit reading both table sources unbounded (the merge of the unbounded reads):
   * Parquet enumerator state version 2, which added the version planned last.
   */
  val TablesV2Commit = "c12a8a3"

  val All: Seq[CheckpointFixture] = Seq(
    new GeneratorFixture("generator"),
    new KafkaFixture("kafka"),
    new FilesFixture("files"),
    new ParquetFixture("parquet"),
    new HybridFixture("hybrid-before-switch", afterSwitch = false),
    new HybridFixture("hybrid-after-switch", afterSwitch = true),
    new AlignmentGroupFixture("alignment-group"),
    new KafkaFixture("kafka-realtime", realTime = true),
    // in real-time mode, each stopped in the open batch after a committed one
    new GeneratorFixture("generator-realtime", realTime = true),
    new FilesFixture("files-realtime", realTime = true),
    new ParquetFixture("parquet-realtime", realTime = true),
    new HybridFixture("hybrid-before-switch-realtime", afterSwitch = false, realTime = true),
    new HybridFixture("hybrid-after-switch-realtime", afterSwitch = true, realTime = true),
    new AlignmentGroupFixture("alignment-group-realtime", realTime = true),
    // in flight: its restart reads the committed offset and replays the next, both version 3 (a
    // fixture that stopped after a commit would read one of them only, and add ~1.5 s)
    new ManySplitsGeneratorFixture("v3-generator-in-flight", inFlight = true),
    // written by the last commit writing offsets of version 1 (the fixtures' README says how)
    new FilesFixture("v1-files", keptFrom = Some(V1Commit), offsetVersion = 1),
    new KafkaFixture(
      "v1-kafka-in-flight",
      keptFrom = Some(V1Commit),
      offsetVersion = 1,
      inFlight = true),
    new HybridFixture(
      "v1-hybrid-after-switch",
      afterSwitch = true,
      keptFrom = Some(V1Commit),
      offsetVersion = 1),
    new ParquetFixture("v1-parquet", keptFrom = Some(V1Commit), offsetVersion = 1),
    new GeneratorFixture("v1-generator", keptFrom = Some(V1Commit), offsetVersion = 1),
    new AlignmentGroupFixture(
      "v1-alignment-group",
      keptFrom = Some(V1Commit),
      offsetVersion = 1,
      batches = 2),
    // and by that commit a checkpoint over 16 KiB, kept whole (offset version 2)
    new ManySplitsGeneratorFixture(
      "v2-whole-generator",
      keptFrom = Some(V1Commit),
      offsetVersion = 2,
      held = Held.WholeFile),
    // by the oldest commit with table sources: its Parquet enumerator state (version 1) knew a
    // table's files by path alone, its row-group splits (version 2) had no table entry
    new TableFixture("iceberg-state-v1", "iceberg", keptFrom = Some(TablesV1Commit)),
    new TableFixture("delta-state-v1", "delta", keptFrom = Some(TablesV1Commit)),
    // and by the oldest commit reading them unbounded: its state (version 2) knew the version
    // planned last, but still each file by path alone
    new TableFixture(
      "iceberg-state-v2",
      "iceberg",
      unbounded = true,
      keptFrom = Some(TablesV2Commit)),
    new TableFixture(
      "delta-state-v2",
      "delta",
      unbounded = true,
      keptFrom = Some(TablesV2Commit)),
    // by the last commit writing offsets that hold their checkpoint as version 3
    new KafkaFixture("v3-inline-kafka", keptFrom = Some(V3InlineCommit), offsetVersion = 3),
    new FilesFixture("v3-inline-files", keptFrom = Some(V3InlineCommit), offsetVersion = 3))

  /** The offset versions of the Sluice offsets (one line per source) of a kept offset log. */
  def offsetVersions(checkpoint: Path): Set[Int] =
    offsetLines(checkpoint).map(line => Mapper.readTree(line).get("version").asInt).toSet

  /** The Sluice offsets of a kept offset log: each batch's file has `v1`, Spark's metadata, then one per source. */
  def offsetLines(checkpoint: Path): Seq[String] =
    regularFiles(checkpoint.resolve("offsets"))
      .filter(_.getFileName.toString.forall(_.isDigit))
      .flatMap(f => Files.readAllLines(f, UTF_8).asScala.drop(2))

  // --- the files of a kept fixture: checkpoint/, input/, topics.json, committed.txt

  def checkpointOf(fixture: Path): Path = fixture.resolve("checkpoint")
  def inputOf(fixture: Path): Path = fixture.resolve("input")

  /** The rows the written run's committed batches gave: the restart must give the others. */
  def writeCommitted(fixture: Path, rows: Seq[String]): Unit =
    Files.write(
      fixture.resolve("committed.txt"),
      rows.sorted.mkString("", "\n", "\n").getBytes(UTF_8))
  def readCommitted(fixture: Path): Seq[String] =
    Files.readAllLines(fixture.resolve("committed.txt"), UTF_8).asScala.toSeq.filter(_.nonEmpty)

  /** The topics and their records, so that a fresh broker can be given the same offsets. */
  def writeTopics(fixture: Path, topics: Seq[FixtureTopic]): Unit = if (topics.nonEmpty) {
    val array = Mapper.createArrayNode()
    topics.foreach { t =>
      val node = array.addObject()
      node.put("topic", t.name)
      node.put("partitions", t.partitions)
      val records = node.putArray("records")
      t.records.foreach { r =>
        val rec = records.addObject()
        rec.put("partition", r.partition)
        rec.put("value", r.value)
        rec.put("timestamp", r.timestamp)
      }
    }
    Files.write(
      fixture.resolve("topics.json"),
      Mapper.writerWithDefaultPrettyPrinter().writeValueAsBytes(array))
  }
  def readTopics(fixture: Path): Seq[FixtureTopic] = {
    val file = fixture.resolve("topics.json")
    if (!Files.exists(file)) Nil
    else
      Mapper.readTree(file.toFile).elements().asScala.toSeq.map { t =>
        FixtureTopic(
          t.get("topic").asText,
          t.get("partitions").asInt,
          t.get("records")
            .elements()
            .asScala
            .toSeq
            .map(r =>
              FixtureRecord(
                r.get("partition").asInt,
                r.get("value").asText,
                r.get("timestamp").asLong)))
      }
  }

  private def regularFiles(dir: Path): Seq[Path] =
    if (!Files.exists(dir)) Nil
    else Files.walk(dir).iterator().asScala.filter(Files.isRegularFile(_)).toSeq

  def deleteTree(dir: Path): Unit =
    if (Files.exists(dir))
      Files.walk(dir).iterator().asScala.toSeq.reverse.foreach(Files.delete)

  /**
   * Replaces `from` with `to` in every file of `checkpoint`: a files source's checkpoint names
   * its files by absolute path, which is kept as [[InputPlaceholder]] and put back as the folder
   * the restart reads. Hadoop's `.crc` files go: they would no longer match, and Hadoop reads a
   * file without one.
   */
  def rewritePaths(checkpoint: Path, from: String, to: String): Unit =
    regularFiles(checkpoint).foreach { f =>
      if (f.getFileName.toString.endsWith(".crc")) Files.delete(f)
      else {
        val text = new String(Files.readAllBytes(f), UTF_8)
        if (text.contains(from)) Files.write(f, text.replace(from, to).getBytes(UTF_8))
      }
    }

  /** Copies a tree (a fixture into a temporary folder, or a written one into the checkout). */
  def copyTree(from: Path, to: Path): Unit = regularFiles(from).foreach { f =>
    val target = to.resolve(from.relativize(f).toString)
    Files.createDirectories(target.getParent)
    Files.copy(f, target)
  }
}

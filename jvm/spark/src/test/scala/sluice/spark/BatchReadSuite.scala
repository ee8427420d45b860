package sluice.spark

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.sql.Timestamp
import java.time.Duration

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Slow, Sluice, SparkSuiteBase}
import sluice.api.{Boundedness, Source}
import sluice.connector.file.{FileSource, FileTestData}
import sluice.connector.format.Provenance
import sluice.connector.generator.GeneratorSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.hybrid.{HybridSource, SourceFactory}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * `spark.read.format("sluice")` / `Sluice.read`: a bounded source read whole as a DataFrame,
 * against Spark's own batch readers on the same data and against the streaming read's schema;
 * and what is refused at `load()`, with the fix in the message.
 */
class BatchReadSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private def multiset(df: DataFrame): Map[Row, Int] =
    df.collect().toSeq.groupBy(identity).map { case (r, s) => r -> s.size }

  private def dataColumns(df: DataFrame): DataFrame =
    df.drop(Provenance.SplitColumn, Provenance.PositionColumn, Provenance.TimestampColumn)

  /** The streaming read's schema: what Spark knows without starting a query. */
  private def streamSchema(
      source: Source[_, _],
      strategy: WatermarkStrategy = null,
      options: Map[String, String] = Map.empty) =
    Sluice.fromSource(spark, source, strategy, null, options).schema

  private def messages(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" | ")

  // ---- generator --------------------------------------------------------------------------------

  test(
    "generator: exactly the records it defines, in the streaming read's schema, event_time included") {
    val source = GeneratorSource
      .builder()
      .splits(3)
      .recordsPerSplit(40)
      .eventTimeStepMs(10)
      .splitSkewMs(2, 5000)
      .payloadBytes(8)
      .build()
    val df = Sluice.read(spark, source)
    assert(df.schema == streamSchema(source))
    val cfg = source.config
    val expected =
      for (s <- 0 until 3; i <- 0L until 40L)
        yield Row(cfg.recordId(s, i), s, new Timestamp(cfg.eventTimeMs(s, i)), cfg.payload(s, i))
    assert(multiset(df) == expected.groupBy(identity).map { case (r, rs) => r -> rs.size })
    assert(df.rdd.getNumPartitions == 3, "one task per split")

    val strategy = WatermarkStrategy
      .forBoundedOutOfOrderness(Duration.ofSeconds(5))
      .withWatermarkAlignment(
        "g",
        Duration.ofSeconds(1)
      ) // no effect in a batch: nothing is read in rounds
    val timed = Sluice.read(spark, source, strategy, "timed")
    assert(timed.schema == streamSchema(source, strategy))
    assert(timed.schema.fieldNames.last == "event_time")
    assert(timed.where("event_time = timestamp").count() == 120)

    val none = GeneratorSource.builder().splits(2).recordsPerSplit(0).build()
    assert(Sluice.read(spark, none).count() == 0)
  }

  test(
    "compact rows (forceTimestampSupport=false): the stream's compact rows; left-out columns named as such") {
    val source = GeneratorSource.builder().splits(2).recordsPerSplit(25).build()
    val compact = Map("forceTimestampSupport" -> "false")
    val df = Sluice.read(spark, source, null, "compact", compact)
    assert(df.schema == streamSchema(source, options = compact))
    assert(df.schema.fieldNames.toSeq == Seq("id", "payload"))
    assert(multiset(df) == multiset(Sluice.read(spark, source).select("id", "payload")))
    val e = intercept[AnalysisException](df.select("event_time").collect())
    assert(e.getMessage.contains("compact mode (forceTimestampSupport=false)"), e.getMessage)
  }

  // ---- files ------------------------------------------------------------------------------------

  private lazy val jsonDir = FileTestData.write(tempDir("json"), FileTestData.jsonFiles)
  private lazy val csvDir = FileTestData.write(tempDir("csv"), FileTestData.csvFiles)

  test(
    "files: the data columns of spark.read.json and spark.read.csv, byte-range splits included") {
    val json = FileSource
      .builder()
      .path(jsonDir.toString)
      .format("json")
      .schema(FileTestData.JsonSchemaWithCorrupt)
      .maxSplitBytes(64)
      .build()
    val ours = Sluice.read(spark, json)
    assert(ours.schema == streamSchema(json))
    assert(ours.select(Provenance.SplitColumn).distinct().count() > 5, "files cut in byte ranges")
    val theirs = spark.read
      .option("recursiveFileLookup", "true")
      .schema(FileTestData.JsonSchemaWithCorrupt)
      .json(jsonDir.toString)
    assert(dataColumns(ours).schema == theirs.schema)
    assert(multiset(dataColumns(ours)) == multiset(theirs))

    val csv = FileSource
      .builder()
      .path(csvDir.toString)
      .format("csv")
      .schema(FileTestData.CsvSchemaWithCorrupt)
      .option("header", "true")
      .build()
    val expected = spark.read
      .option("header", "true")
      .option("recursiveFileLookup", "true")
      .schema(FileTestData.CsvSchemaWithCorrupt)
      .csv(csvDir.toString)
    // the same source given as options only, as Spark Connect or SQL users give it
    val byOptions = spark.read.format("sluice").options(csv.options).load()
    assert(multiset(dataColumns(byOptions)) == multiset(expected))
    assert(expected.count() >= 7)
  }

  test(
    "files: records dropped as malformed are counted in the scan's SQL metrics, not silently lost") {
    val dir = Files.createTempDirectory("malformed")
    Files.write(
      dir.resolve("a.json"),
      "{\"id\": 1}\nnot json\n{\"id\": 2}\nnor this\n".getBytes(UTF_8))
    val source = FileSource
      .builder()
      .path(dir.toString)
      .format("json")
      .schema("id BIGINT")
      .option("mode", "DROPMALFORMED")
      .build()
    val ids = Sluice.read(spark, source).select("id")
    assert(ids.collect().map(_.getLong(0)).sorted.toSeq == Seq(1L, 2L))
    val scans = ids.queryExecution.executedPlan.collect {
      case scan: org.apache.spark.sql.execution.datasources.v2.BatchScanExec => scan
    }
    assert(scans.map(_.metrics("malformedRecordsDropped").value).sum == 2)
  }

  test("files: a watermark strategy over a timestamp column adds that column as event_time") {
    val source = FileSource
      .builder()
      .path(jsonDir.toString)
      .format("json")
      .schema(FileTestData.JsonSchema)
      .build()
    val strategy = WatermarkStrategy.forMonotonousTimestamps().withTimestampColumn("ts")
    val df = Sluice.read(spark, source, strategy, null)
    assert(df.schema == streamSchema(source, strategy))
    val rows = df.where("ts IS NOT NULL").collect()
    assert(rows.length == 3)
    assert(rows.forall(r => r.getAs[Timestamp]("event_time") == r.getAs[Timestamp]("ts")))
  }

  // ---- Kafka ------------------------------------------------------------------------------------

  private val topic = "batch-differential"
  private val records = 40000
  private val baseTs = 1700000000000L
  private var produced = false
  private def produce(): Unit = if (!produced) {
    produced = true
    kafka.createTopic(topic, 4)
    kafka.produce(
      topic,
      (0 until records).map { i =>
        ProducedRecord.text(
          key = if (i % 7 == 0) None else Some(s"k${i % 1000}"),
          value = if (i % 11 == 0) None else Some(s"""{"i":$i,"s":"välue-$i"}"""),
          partition = Some(i % 4),
          timestamp = Some(baseTs + i * 10L),
          headers = if (i % 3 == 0) Seq("h" -> s"$i", "n" -> null) else Nil)
      })
  }

  private def sparkKafka(start: String, end: String): DataFrame =
    spark.read
      .format("kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("includeHeaders", "true")
      .option("startingOffsets", start)
      .option("endingOffsets", end)
      .load()

  private def assertSameRows(expected: DataFrame, actual: DataFrame, rows: Long): Unit = {
    assert(expected.schema == actual.schema)
    assert(expected.count() == rows)
    assert(actual.count() == rows)
    assert(
      expected.exceptAll(actual).isEmpty,
      "rows Spark's Kafka source read that Sluice did not")
    assert(
      actual.exceptAll(expected).isEmpty,
      "rows Sluice read that Spark's Kafka source did not")
  }

  test(
    "Kafka: the same rows as Spark's Kafka batch read, every column, for offsets and 'latest' ends",
    Slow) {
    produce()
    val start = s"""{"$topic":{"0":100,"1":-2,"2":2000,"3":0}}"""
    val end = s"""{"$topic":{"0":5000,"1":-1,"2":9000,"3":0}}"""
    val ours = spark.read
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("includeHeaders", "true")
      .option("startingOffsets", start)
      .option("endingOffsets", end)
      .load()
    assertSameRows(sparkKafka(start, end), ours, (5000 - 100) + 10000 + (9000 - 2000))

    val bounded = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .includeHeaders(true)
      .startingOffsets(OffsetsInitializer.earliest())
      .stoppingOffsets(OffsetsInitializer.latest())
      .build()
    val all = Sluice.read(spark, bounded, null, "all")
    assert(all.schema == streamSchema(bounded))
    assertSameRows(sparkKafka("earliest", "latest"), all, records)
  }

  test(
    "Kafka: a stopping offset beyond a partition's end fails as lost records, or is skipped with failOnDataLoss=false") {
    kafka.createTopic("batch-short", 1)
    kafka.produce(
      "batch-short",
      (0 until 10).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(0))))
    def beyond(failOnDataLoss: Boolean) = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics("batch-short")
      .startingOffsets(OffsetsInitializer.earliest())
      .failOnDataLoss(failOnDataLoss)
      .option("endingOffsets", """{"batch-short":{"0":50}}""")
      .build()
    val e = intercept[Exception](Sluice.read(spark, beyond(failOnDataLoss = true)).collect())
    assert(
      messages(e).contains("ends at offset 10, but offsets up to 50 were planned to be read"),
      messages(e))
    assert(Sluice.read(spark, beyond(failOnDataLoss = false)).count() == 10)
  }

  test(
    "a hybrid of files, then bounded Kafka: every record once, in the streaming read's schema") {
    kafka.createTopic("batch-tail", 2)
    kafka.produce(
      "batch-tail",
      (0 until 30).map(i =>
        ProducedRecord.text(value = Some(s"""{"id":${1000 + i}}"""), partition = Some(i % 2))))
    val first = tempDir("files1")
    val second = tempDir("files2")
    Files.write(
      first.resolve("a.json"),
      (0 until 20).map(i => s"""{"id":$i}""").mkString("\n").getBytes(UTF_8))
    Files.write(
      second.resolve("b.json"),
      (100 until 140).map(i => s"""{"id":$i}""").mkString("\n").getBytes(UTF_8))
    def files(dir: Path) =
      FileSource.builder().path(dir.toString).format("json").schema("id BIGINT").build()
    val tail = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics("batch-tail")
      .startingOffsets(OffsetsInitializer.earliest())
      .stoppingOffsets(OffsetsInitializer.latest())
      .option("format", "json")
      .option("schema", "id BIGINT")
      .build()
    val hybrid =
      HybridSource.builder(files(first)).addSource(files(second)).addSource(tail).build()
    val df = Sluice.read(spark, hybrid, null, "three")
    assert(df.schema == streamSchema(hybrid))
    val ids = df.select("id").collect().map(_.getLong(0)).sorted.toSeq
    assert(ids == ((0L until 20L) ++ (100L until 140L) ++ (1000L until 1030L)))
  }

  // ---- refusals ---------------------------------------------------------------------------------

  /** Both entry points refuse at load(), before any job runs, with the same message. */
  private def refusedAtLoad(
      source: Source[_, _],
      options: Map[String, String] = Map.empty): String = {
    val direct = intercept[IllegalArgumentException](
      spark.read.format("sluice").options(source.options ++ options).load())
    val viaApi =
      intercept[IllegalArgumentException](Sluice.read(spark, source, null, null, options))
    assert(direct.getMessage == viaApi.getMessage)
    direct.getMessage
  }

  test("unbounded sources are refused at load(), naming what would make them bounded") {
    val kafkaSource = KafkaSource.builder().bootstrapServers("127.0.0.1:1").topics("t").build()
    assert(refusedAtLoad(kafkaSource).contains(
      "this kafka source is unbounded: give the Kafka source stopping offsets (endingOffsets / stoppingOffsets"))

    val monitored =
      FileSource.builder().path(jsonDir.toString).schema("a INT").monitorIntervalMs(1000).build()
    assert(refusedAtLoad(monitored).contains("unset monitorIntervalMs"))

    val endless = GeneratorSource.builder().rowsPerSecond(10).build()
    assert(refusedAtLoad(endless).contains("set recordsPerSplit"))

    val files = FileSource.builder().path(jsonDir.toString).schema("a INT").build()
    val hybrid = HybridSource.builder(files).addSource(monitored).build()
    assert(
      refusedAtLoad(hybrid).contains(
        "this hybrid source is unbounded: its last source is unbounded: it lists " +
          "its paths again every 1000 ms for new files; unset monitorIntervalMs"))

    // the same table still serves a stream
    assert(spark.readStream.format("sluice").options(endless.options).load().isStreaming)
  }

  test(
    "a hybrid whose next source is derived from where the previous one ended is refused at load()") {
    val files = FileSource.builder().path(jsonDir.toString).schema("a INT").build()
    val bounded = KafkaSource
      .builder()
      .bootstrapServers("127.0.0.1:1")
      .topics("t")
      .startingOffsets(OffsetsInitializer.earliest())
      .stoppingOffsets(OffsetsInitializer.latest())
      .build()
    val later = FileSource.builder().path(csvDir.toString).format("csv").schema("a INT").build()
    val byTime = HybridSource
      .builder(
        KafkaSource
          .builder()
          .bootstrapServers("127.0.0.1:1")
          .topics("a")
          .startingOffsets(OffsetsInitializer.earliest())
          .stoppingOffsets(OffsetsInitializer.latest())
          .build())
      .addSourceStartingAtPreviousEnd(bounded, 60000L)
      .build()
    val message = refusedAtLoad(byTime)
    assert(
      message.contains(
        "a batch read cannot derive the next source from where the previous one ended; source 1 " +
          "of this hybrid starts at the previous source's last event time minus 60000 ms"),
      message)

    val byFactory = HybridSource
      .builder(files)
      .addSource(SourceFactory(_ => later), Boundedness.Bounded)
      .build()
    assert(
      refusedAtLoad(byFactory).contains(
        "source 1 of this hybrid is built by a factory at the switch"))
  }

  test(
    "stream-only read options are refused at load(): maxRecordsPerTrigger, latencyTrackingInterval") {
    val source = GeneratorSource.builder().recordsPerSplit(10).build()
    assert(refusedAtLoad(source, Map("maxRecordsPerTrigger" -> "5")).contains(
      "option maxRecordsPerTrigger bounds the records of one micro-batch and means nothing in a batch read"))
    assert(
      refusedAtLoad(source, Map("latencyTrackingInterval" -> "1s"))
        .contains("option latencyTrackingInterval"))
    // off is not tracking: nothing to refuse
    assert(
      Sluice.read(spark, source, null, null, Map("latencyTrackingInterval" -> "0")).count() == 10)
  }
}

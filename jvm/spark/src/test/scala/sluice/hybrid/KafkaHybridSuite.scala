package sluice.hybrid

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** Bounded Kafka, then unbounded Kafka started where the first one's event time ended. */
class KafkaHybridSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  test(
    "bounded Kafka then Kafka from the previous end timestamp minus a margin, exactly once across a restart") {
    val base = 1700000000000L
    kafka.createTopic("archive", 2)
    kafka.createTopic("live", 2)
    // the archive holds event times base .. base+99s; the live topic base+50s .. base+199s
    kafka.produce(
      "archive",
      (0 until 100).map(i =>
        ProducedRecord.text(
          value = Some(s"a$i"),
          partition = Some(i % 2),
          timestamp = Some(base + i * 1000L))))
    kafka.produce(
      "live",
      (50 until 200).map(i =>
        ProducedRecord.text(
          value = Some(s"l$i"),
          partition = Some(i % 2),
          timestamp = Some(base + i * 1000L))))
    def hybrid = HybridSource
      .builder(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("archive")
          .startingOffsets(OffsetsInitializer.earliest())
          .stoppingOffsets(OffsetsInitializer.latest())
          .build())
      .addSourceStartingAtPreviousEnd(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("live")
          .startingOffsets(OffsetsInitializer.earliest())
          .build(),
        marginMs = 10000L)
      .build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) = Sluice
      .fromSource(spark, hybrid, null, "archive+live", Map("maxRecordsPerTrigger" -> "40"))
      .writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(trigger)
      .start()

    val first = start(Trigger.ProcessingTime(0))
    // stop just after the switch: the first batch that reads the live topic
    try
      eventually("the switch to the live topic", first) {
        first.recentProgress.exists(p =>
          p.sources.head.metrics.asScala.get("activeSource").contains("1"))
      }
    finally first.stop()
    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)

    val values = spark.read
      .parquet(out)
      .selectExpr("CAST(value AS STRING)")
      .collect()
      .map(_.getString(0))
      .toSeq
    // archive ends at base+99s; minus 10 s: the live topic is read from its record at base+89s
    val expected = (0 until 100).map(i => s"a$i") ++ (89 until 200).map(i => s"l$i")
    assert(values.sorted == expected.sorted)
  }

  test(
    "files, then files, then Kafka with a fixed start: every record once; a missing path fails at start") {
    kafka.createTopic("tail", 2)
    kafka.produce(
      "tail",
      (0 until 30).map(i =>
        ProducedRecord.text(value = Some(s"""{"id":${1000 + i}}"""), partition = Some(i % 2))))
    val first = tempDir("files1")
    val second = tempDir("files2")
    java.nio.file.Files.write(
      first.resolve("a.json"),
      (0 until 20).map(i => s"""{"id":$i}""").mkString("\n").getBytes("UTF-8"))
    java.nio.file.Files.write(
      second.resolve("b.json"),
      (100 until 140).map(i => s"""{"id":$i}""").mkString("\n").getBytes("UTF-8"))
    def files(dir: String) = sluice.connector.file.FileSource
      .builder()
      .path(dir)
      .format("json")
      .schema("id BIGINT")
      .build()
    val tail = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics("tail")
      .startingOffsets(OffsetsInitializer.earliest())
      .option("format", "json")
      .option("schema", "id BIGINT")
      .build()
    val hybrid = HybridSource
      .builder(files(first.toString))
      .addSource(files(second.toString))
      .addSource(tail)
      .build()
    val q = Sluice
      .fromSource(spark, hybrid, null, "three", Map("maxRecordsPerTrigger" -> "15"))
      .writeStream
      .format("memory")
      .queryName("files_files_kafka")
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    val ids =
      spark.table("files_files_kafka").select("id").collect().map(_.getLong(0)).sorted.toSeq
    assert(ids == ((0L until 20L) ++ (100L until 140L) ++ (1000L until 1030L)))
    assert(
      q.recentProgress
        .filter(_.numInputRows > 0)
        .last
        .sources
        .head
        .metrics
        .asScala("recordsPerSource") == "20,40,30")

    val missing =
      HybridSource.builder(files(first.resolve("nope").toString)).addSource(tail).build()
    val bad = Sluice
      .fromSource(spark, missing)
      .writeStream
      .format("noop")
      .trigger(Trigger.AvailableNow())
      .start()
    val e = intercept[Exception](bad.awaitTermination(60000))
    assert(e.getMessage.contains("matches no file or directory"), e.getMessage)
  }
}

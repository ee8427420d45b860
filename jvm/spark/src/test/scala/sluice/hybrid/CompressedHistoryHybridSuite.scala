package sluice.hybrid

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.{CompressedTestData, FileSource}
import sluice.connector.format.Provenance
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** A backfill from `.json.gz` archives, then live Kafka from where the archives ended in event time. */
class CompressedHistoryHybridSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  test(
    ".json.gz files then Kafka from their end timestamp minus a margin: every record once across a restart mid-file") {
    val base = 1700000000000L
    def line(i: Int) = s"""{"id": $i, "ts": ${base + i * 1000L}}"""
    val archive = tempDir("archive")
    Files.write(
      archive.resolve("a.json.gz"),
      CompressedTestData.compress((0 until 500).map(line).mkString("\n").getBytes(UTF_8), "gz"))
    Files.write(
      archive.resolve("b.json.gz"),
      CompressedTestData.compress((500 until 900).map(line).mkString("\n").getBytes(UTF_8), "gz"))
    kafka.createTopic("after-archive", 2)
    kafka.produce(
      "after-archive",
      (850 until 1000).map(i =>
        ProducedRecord.text(
          value = Some(line(i)),
          partition = Some(i % 2),
          timestamp = Some(base + i * 1000L))))

    def hybrid = HybridSource
      .builder(
        FileSource
          .builder()
          .path(archive.toString)
          .format("json")
          .schema("id BIGINT, ts BIGINT")
          .timestampColumn("ts")
          .build())
      .addSourceStartingAtPreviousEnd(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("after-archive")
          .startingOffsets(OffsetsInitializer.earliest())
          .option("format", "json")
          .option("schema", "id BIGINT, ts BIGINT")
          .build(),
        marginMs = 5000L)
      .build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) = Sluice
      .fromSource(spark, hybrid, null, "archive+live", Map("maxRecordsPerTrigger" -> "60"))
      .writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(trigger)
      .start()

    val first = start(Trigger.ProcessingTime(0))
    try
      eventually("three batches of the archive", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 3)
    finally first.stop()
    // stopped inside a compressed file of the archive, before the switch
    val firstRun = spark.read.parquet(out)
    assert(
      firstRun.count() < 900 && firstRun
        .where(s"${Provenance.SplitColumn} LIKE '%a.json.gz'")
        .count() < 500)
    assert(
      !first.recentProgress.exists(
        _.sources.head.metrics.asScala.get("activeSource").contains("1")))

    val second = start(Trigger.AvailableNow())
    awaitEnd(second)
    assert(second.exception.isEmpty, second.exception)
    val ids = spark.read.parquet(out).select("id").collect().map(_.getLong(0)).toSeq
    // the archive ends at base+899s; minus 5 s: Kafka is read from its record at base+894s
    assert(ids.sorted == ((0L until 900L) ++ (894L until 1000L)).sorted)
  }
}

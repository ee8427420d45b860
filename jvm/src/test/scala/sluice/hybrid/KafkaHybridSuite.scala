package sluice.hybrid

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** Bounded Kafka, then unbounded Kafka started where the first one's event time ended. */
class KafkaHybridSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  test("bounded Kafka then Kafka from the previous end timestamp minus a margin, exactly once across a restart") {
    val base = 1700000000000L
    kafka.createTopic("archive", 2)
    kafka.createTopic("live", 2)
    // the archive holds event times base .. base+99s; the live topic base+50s .. base+199s
    kafka.produce("archive", (0 until 100).map(i =>
      ProducedRecord.text(value = Some(s"a$i"), partition = Some(i % 2), timestamp = Some(base + i * 1000L))))
    kafka.produce("live", (50 until 200).map(i =>
      ProducedRecord.text(value = Some(s"l$i"), partition = Some(i % 2), timestamp = Some(base + i * 1000L))))
    def hybrid = HybridSource.builder(
        KafkaSource.builder().bootstrapServers(kafka.bootstrapServers).topics("archive")
          .startingOffsets(OffsetsInitializer.earliest()).stoppingOffsets(OffsetsInitializer.latest()).build())
      .addSourceStartingAtPreviousEnd(
        KafkaSource.builder().bootstrapServers(kafka.bootstrapServers).topics("live")
          .startingOffsets(OffsetsInitializer.earliest()).build(), marginMs = 10000L)
      .build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) = Sluice.fromSource(spark, hybrid, null, "archive+live",
        Map("maxRecordsPerTrigger" -> "40"))
      .writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt).trigger(trigger).start()

    val first = start(Trigger.ProcessingTime(0))
    // stop just after the switch: the first batch that reads the live topic
    while (!first.recentProgress.exists(p => p.sources.head.metrics.asScala.get("activeSource").contains("1"))) {
      Thread.sleep(20)
    }
    first.stop()
    val second = start(Trigger.AvailableNow())
    second.awaitTermination(120000)
    assert(second.exception.isEmpty, second.exception)

    val values = spark.read.parquet(out).selectExpr("CAST(value AS STRING)").collect().map(_.getString(0)).toSeq
    // archive ends at base+99s; minus 10 s: the live topic is read from its record at base+89s
    val expected = (0 until 100).map(i => s"a$i") ++ (89 until 200).map(i => s"l$i")
    assert(values.sorted == expected.sorted)
  }
}

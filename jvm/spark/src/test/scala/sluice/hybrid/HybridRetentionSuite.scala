package sluice.hybrid

import java.time.Duration

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * The retention-aware switch against a real broker: while the archive topic is read, the hybrid
 * watches whether the live topic still holds the records its start will need.
 */
class HybridRetentionSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val Margin = 10000L

  /** The archive (bounded, read 5 records a batch), then the live topic from its end minus the margin. */
  private def hybrid(archive: String, live: String, failOnDataLoss: Boolean = true) = HybridSource
    .builder(
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(archive)
        .startingOffsets(OffsetsInitializer.earliest())
        .stoppingOffsets(OffsetsInitializer.latest())
        .build())
    .addSourceStartingAtPreviousEnd(
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(live)
        .startingOffsets(OffsetsInitializer.earliest())
        .failOnDataLoss(failOnDataLoss)
        .build(),
      marginMs = Margin)
    .retentionCheck(Duration.ofMillis(500), Duration.ofHours(2))
    .build()

  private def start(source: HybridSource, name: String): StreamingQuery =
    Sluice
      .fromSource(spark, source, null, name, Map("maxRecordsPerTrigger" -> "5"))
      .writeStream
      .format("memory")
      .queryName(name.replace('-', '_'))
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.ProcessingTime(0))
      .start()

  /** Lets `q` switch to the live topic and read all there is, stops it; the values it wrote to `table`. */
  private def readThroughSwitch(q: StreamingQuery, table: String): Seq[String] = {
    try {
      eventually("the switch to the live topic", q) {
        q.recentProgress.exists(_.sources.head.metrics.asScala.get("activeSource").contains("1"))
      }
      processAllAvailable(q)
    } finally q.stop()
    assert(q.exception.isEmpty, q.exception)
    spark
      .table(table)
      .collect()
      .map(r => new String(r.getAs[Array[Byte]]("value"), "UTF-8"))
      .toSeq
  }

  private def text(values: Seq[(String, Long)]): Seq[ProducedRecord] =
    values.map { case (v, ts) => ProducedRecord.text(value = Some(v), timestamp = Some(ts)) }

  private val base = 1600000000000L // 2020: far older than the live topic's retention

  /** An archive of 100 records, and a live topic whose retention deleted the 100 records after them; returns when the newest was written. */
  private def archiveAndDeletedLive(archive: String, live: String): Long = {
    kafka.createTopic(archive, 1)
    kafka.produce(archive, text((0 until 100).map(i => s"a$i" -> (base + i * 1000L))))
    // CreateTime this old makes the broker roll a segment at every write and delete it within
    // seconds: records base+50s .. base+149s go; the record written now stays for 10 minutes
    kafka.createTopic(live, 1, Map("retention.ms" -> "600000", "segment.ms" -> "1000"))
    kafka.produce(live, text((50 until 150).map(i => s"l$i" -> (base + i * 1000L))))
    val recent = System.currentTimeMillis()
    kafka.produce(live, text(Seq("now" -> recent)))
    eventually("the broker's retention to delete the first segment") {
      kafka.startOffsets(live)(0) == 100L
    }
    recent
  }

  test(
    "the broker's retention deleted the records the switch needs: the query fails before the switch, saying so") {
    val recent = archiveAndDeletedLive("gone-archive", "gone-live")
    val q = start(hybrid("gone-archive", "gone-live"), "gone")
    val failed =
      try intercept[org.apache.spark.sql.streaming.StreamingQueryException](awaitEnd(q))
      finally q.stop()
    val e = failed.getCause
    // a runtime fault with its class, as Spark Connect and PySpark read it
    assert(
      e.asInstanceOf[org.apache.spark.SparkThrowable].getCondition == "SLUICE_RETENTION_EXCEEDED")
    val switchStart = base + 99000L - Margin
    assert(
      e.getMessage == s"HybridSource: source 1 (kafka) will start at its first record at or after $switchStart: " +
        s"source 0's last event time ${base + 99000L} minus $Margin ms, but the records it needs are gone: " +
        s"gone-live-0 from its first record at or after $switchStart (${java.time.Instant.ofEpochMilli(switchStart)}) (it now begins " +
        s"at offset 100, a record of $recent (${java.time.Instant.ofEpochMilli(recent)})) " +
        "(retention.ms of gone-live: 600000 ms). Keep them longer (raise retention.ms of gone-live), let the previous " +
        "source reach later event times, or start this source later. The query stops now, before the switch, rather " +
        "than skip those records after it. (Checked every hybrid.retentionCheckIntervalMs = 500 ms.)")
    // it failed before the switch: nothing of the live topic was planned or read. (How much of
    // the archive was read first depends on when the guard's thread checked, so it may be none.)
    assert(
      !q.recentProgress.exists(_.sources.head.metrics.asScala.get("activeSource").contains("1")))
    val read =
      spark.table("gone").collect().map(r => new String(r.getAs[Array[Byte]]("value"), "UTF-8"))
    assert(read.forall(_.startsWith("a")))
    assert(read.length < 100)
  }

  test(
    "with failOnDataLoss=false the switch goes ahead without the deleted records, and the metrics say they are gone") {
    archiveAndDeletedLive("tolerant-archive", "tolerant-live")
    val q = start(hybrid("tolerant-archive", "tolerant-live", failOnDataLoss = false), "tolerant")
    val read = readThroughSwitch(q, "tolerant")
    assert(read.sorted == ((0 until 100).map(i => s"a$i") :+ "now").sorted)
    // reported once the switch's start is known (at the switch at the latest), and kept after it
    assert(
      q.lastProgress.sources.head.metrics.get(HybridMetrics.RetentionRecordsLost) == "true",
      q.recentProgress
        .map(_.sources.head.metrics.asScala.filter(_._1.startsWith("retention")))
        .mkString("\n"))
  }

  test(
    "while the records are there, retentionHeadroomMs says how long before the switch's start can be deleted") {
    val now = System.currentTimeMillis()
    val base = now - 3600000L // an hour ago
    val retentionMs = 86400000L
    kafka.createTopic("kept-archive", 1)
    kafka.produce("kept-archive", text((0 until 100).map(i => s"a$i" -> (base + i * 1000L))))
    kafka.createTopic("kept-live", 1, Map("retention.ms" -> retentionMs.toString))
    kafka.produce("kept-live", text((50 until 200).map(i => s"l$i" -> (base + i * 1000L))))

    val startedAt = System.currentTimeMillis()
    val q = start(hybrid("kept-archive", "kept-live"), "kept")
    def headroom = q.recentProgress
      .flatMap(_.sources.head.metrics.asScala.get(HybridMetrics.RetentionHeadroomMs))
      .headOption
    try {
      eventually("retentionHeadroomMs in the metrics", q)(headroom.isDefined)
      // the switch starts at the archive's last record (base+99s) minus the margin; its records
      // can be deleted once they are retention.ms old
      val switchStart = base + 99000L - Margin
      val h = headroom.get.toLong
      assert(
        h <= switchStart + retentionMs - startedAt && h >= switchStart + retentionMs - System
          .currentTimeMillis(),
        h)
      val withHeadroom = q.recentProgress
        .map(_.sources.head.metrics.asScala)
        .find(_.contains(HybridMetrics.RetentionHeadroomMs))
        .get
      assert(withHeadroom("retentionStartMs") == switchStart.toString)
    } catch {
      case e: Throwable =>
        q.stop()
        throw e
    }
    // and the switch goes ahead: the live topic from base+89s on
    val read = readThroughSwitch(q, "kept")
    assert(
      read.sorted == ((0 until 100).map(i => s"a$i") ++ (89 until 200).map(i => s"l$i")).sorted)
    // after the switch there is nothing left to watch
    assert(
      !q.recentProgress.last.sources.head.metrics.containsKey(HybridMetrics.RetentionHeadroomMs))
  }
}

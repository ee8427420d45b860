package sluice.spark

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, Slow, SparkSuiteBase}
import sluice.connector.file.FileSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.hybrid.HybridSource
import sluice.testkit.{KafkaSuiteBase, ProducedRecord, TransactionalProducer}

/**
 * Real-time mode (`Trigger.RealTime`) against the real broker: open batches whose tasks emit each
 * record as it arrives, the next offset taken from where the readers got, alignment applied live.
 */
class RealTimeSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {
  private val base = 1700000000000L

  /**
   * Real-time mode runs every task of a batch at once: two sources of two splits each need four
   * task slots (threads here; the tasks mostly wait for records).
   */
  override protected def master: String = "local[4]"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    spark.conf.set(
      "spark.sql.streaming.realTimeMode.minBatchDuration",
      "1s"
    ) // short batches keep the suite quick
  }

  private def kafkaSource(
      topic: String,
      strategy: WatermarkStrategy = null,
      maxPollRecords: Int = 500): DataFrame =
    Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .option("kafka.max.poll.records", maxPollRecords.toString)
        .build(),
      strategy,
      topic)

  private def startRealTime(
      df: DataFrame,
      sink: String,
      checkpoint: String,
      batch: String): StreamingQuery =
    df.writeStream
      .foreach(RealTimeSink.writer(sink))
      .outputMode("update")
      .option("checkpointLocation", checkpoint)
      .trigger(Trigger.RealTime(batch))
      .start()

  private def produce(topic: String, partitions: Int, from: Int, until: Int): Unit =
    kafka.produce(
      topic,
      (from until until).map(i =>
        ProducedRecord.text(
          key = Some(s"k$i"),
          value = Some(s"v$i"),
          partition = Some(i % partitions),
          timestamp = Some(base + i * 1000L))))

  /** (partition, offset, key, value, timestamp) of Kafka rows. */
  private def kafkaRow(r: Row): (Int, Long, String, String, java.sql.Timestamp) =
    (
      r.getAs[Int]("partition"),
      r.getAs[Long]("offset"),
      new String(r.getAs[Array[Byte]]("key"), "UTF-8"),
      new String(r.getAs[Array[Byte]]("value"), "UTF-8"),
      r.getAs[java.sql.Timestamp]("timestamp"))

  private def microBatchRows(df: DataFrame, table: String): Seq[Row] = {
    val q =
      df.writeStream.format("memory").queryName(table).trigger(Trigger.AvailableNow()).start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    spark.table(table).collect().toSeq
  }

  private def offsetLogEntries(checkpoint: String): Int =
    Option(new java.io.File(checkpoint, "offsets").listFiles())
      .map(_.count(_.getName.forall(_.isDigit)))
      .getOrElse(0)

  /** The Kafka positions (partition -> next offset) of the last batch in the offset log. */
  private def lastLoggedPositions(checkpoint: String): Map[Int, Long] = {
    val last = new java.io.File(checkpoint, "offsets")
      .listFiles()
      .filter(_.getName.forall(_.isDigit))
      .maxBy(_.getName.toLong)
    val json = Files.readAllLines(last.toPath).asScala.last
    new ObjectMapper()
      .readTree(json)
      .get("splits")
      .elements()
      .asScala
      .map { s =>
        s.get("id").asText.split("-").last.toInt -> s.get("position").asLong
      }
      .toMap
  }

  test(
    "Kafka in real-time mode: the micro-batch rows, and records produced while a batch runs arrive in it",
    Slow) {
    val topic = "rt-rows"
    kafka.createTopic(topic, 3)
    produce(topic, 3, 0, 300)
    // A first batch longer than both waits below together (60 s each): 'the records arrived within
    // the first open batch' must not depend on how soon after its start the first records arrive.
    val q = startRealTime(kafkaSource(topic), "rows", tempDir("ckpt").toString, "5 minutes")
    try {
      RealTimeSink.await("rows", "the 300 records already in the topic", q)(_.size >= 300)
      produce(topic, 3, 300, 400) // while the first open batch runs
      val got =
        RealTimeSink.await("rows", "the records produced while the batch ran", q)(_.size >= 400)
      assert(
        q.lastProgress == null || q.lastProgress.batchId == 0,
        "the records arrived within the first open batch")
      val expected = microBatchRows(kafkaSource(topic), "rt_rows_micro")
      assert(
        got.map(kafkaRow).sortBy(r => (r._1, r._2)) == expected
          .map(kafkaRow)
          .sortBy(r => (r._1, r._2)))
    } finally q.stop()
  }

  test(
    "the generator in real-time mode: records at its rate, each split from 0 without gap or repeat, across batches",
    Slow) {
    val generator =
      sluice.connector.generator.GeneratorSource.builder().splits(2).rowsPerSecond(100).build()
    val started = System.currentTimeMillis()
    val q = startRealTime(
      Sluice.fromSource(spark, generator),
      "generator",
      tempDir("ckpt").toString,
      "1 second")
    try {
      val got = RealTimeSink.await("generator", "three seconds of records", q)(_.size >= 600)
      val elapsedSeconds = (System.currentTimeMillis() - started) / 1000.0
      // paced: no more than the rate allows since the query started (plus what one fetch adds)
      assert(
        got.size <= (elapsedSeconds * 200).toLong + 200,
        s"${got.size} records in $elapsedSeconds s at 2 x 100/s")
      assert(q.recentProgress.length >= 1, "at least one open batch ended and the next went on")
      got.groupBy(_.getAs[Int]("split")).foreach { case (split, rows) =>
        val ids = rows.map(_.getAs[Long]("id")).sorted
        assert(
          ids == ids.indices.map(i => i * 2L + split),
          s"split $split: ids with a gap or a repeat")
      }
    } finally q.stop()
  }

  test(
    "a query stopped in the middle of an open batch loses nothing on restart; only that batch is read again",
    Slow) {
    val topic = "rt-restart"
    kafka.createTopic(topic, 2)
    produce(topic, 2, 0, 100)
    val ckpt = tempDir("ckpt").toString
    val first = startRealTime(kafkaSource(topic), "restart", ckpt, "2 seconds")
    // let a few open batches commit, then stop one in its middle with more data in it
    try {
      eventually(
        "a real-time batch to end (a second entry in the offset log)",
        first,
        timeoutMs = 60000)(offsetLogEntries(ckpt) >= 2)
      produce(topic, 2, 100, 200)
      RealTimeSink.await("restart", "the second 100 records", first)(_.size >= 200)
    } finally first.stop()
    val committedAtStop = lastLoggedPositions(ckpt)

    produce(topic, 2, 200, 250)
    val second = startRealTime(kafkaSource(topic), "restart", ckpt, "2 seconds")
    try {
      val got = RealTimeSink.await("restart", "every record after the restart", second)(rows =>
        rows.map(kafkaRow).map(r => (r._1, r._2)).distinct.size >= 250)
      val values = got.map(kafkaRow).map(_._4)
      assert(values.toSet == (0 until 250).map(i => s"v$i").toSet, "nothing is lost")
      // At least once, as Spark's own Kafka source in real-time mode: what the stopped batch had
      // emitted before it was stopped is emitted again, nothing a committed batch read.
      val committed = committedAtStop
      val duplicated = got.map(kafkaRow).groupBy(r => (r._1, r._2)).collect {
        case (key, rs) if rs.size > 1 => key
      }
      duplicated.foreach { case (partition, offset) =>
        assert(
          offset >= committed(partition),
          s"partition $partition offset $offset, read by a committed batch, was read again")
      }
    } finally second.stop()
  }

  test(
    "files and a files-then-Kafka hybrid in real-time mode: every row, the switch at a batch end",
    Slow) {
    val dir = tempDir("rt-files")
    Files.write(
      dir.resolve("a.json"),
      (0 until 50)
        .map(i => s"""{"id":$i,"ts":${base + i * 1000L}}""")
        .mkString("\n")
        .getBytes("UTF-8"))
    Files.write(
      dir.resolve("b.json"),
      (50 until 80)
        .map(i => s"""{"id":$i,"ts":${base + i * 1000L}}""")
        .mkString("\n")
        .getBytes("UTF-8"))
    def files = FileSource
      .builder()
      .path(dir.toString)
      .format("json")
      .schema("id BIGINT, ts BIGINT")
      .build()

    val started = System.currentTimeMillis()
    val plain = startRealTime(
      Sluice.fromSource(spark, files),
      "files",
      tempDir("ckpt").toString,
      "3 seconds")
    try {
      val got = RealTimeSink.await("files", "the 80 file rows", plain)(_.size >= 80)
      // every file read: later batches have nothing to read and still last their 3 seconds
      val ended = plain.recentProgress.length
      eventually("two more batches, with nothing left to read", plain)(
        plain.recentProgress.length >= ended + 2)
      val starts = plain.recentProgress
        .drop(ended)
        .map(p => java.time.Instant.parse(p.timestamp).toEpochMilli)
      assert(
        starts.zip(starts.tail).forall { case (a, b) => b - a >= 2900 },
        s"batches with nothing to read started ${starts.mkString(", ")}: each should last 3 seconds")
      val batches = plain.recentProgress.length
      val elapsedMs = System.currentTimeMillis() - started
      assert(
        batches <= elapsedMs / 3000 + 1,
        s"$batches batches in $elapsedMs ms of 3-second batches")
      val expected = microBatchRows(Sluice.fromSource(spark, files), "rt_files_micro")
      assert(
        got.map(r => r.getAs[Long]("id")).sorted == expected.map(r => r.getAs[Long]("id")).sorted)
    } finally plain.stop()

    val topic = "rt-tail"
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (100 until 130).map(i =>
        ProducedRecord.text(value = Some(s"""{"id":$i,"ts":0}"""), partition = Some(i % 2))))
    val tail = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
      .option("format", "json")
      .option("schema", "id BIGINT, ts BIGINT")
      .build()
    val hybrid = Sluice.fromSource(
      spark,
      HybridSource.builder(files).addSource(tail).build(),
      null,
      "rt-hybrid",
      Map.empty[String, String])
    val q = startRealTime(hybrid.select("id"), "hybrid", tempDir("ckpt").toString, "2 seconds")
    try {
      val got =
        RealTimeSink.await("hybrid", "the file rows, then the Kafka rows", q)(_.size >= 110)
      assert(got.map(_.getLong(0)).sorted == ((0L until 80L) ++ (100L until 130L)))
      eventually("a batch that reports the switch to the Kafka source", q, timeoutMs = 30000) {
        q.recentProgress.exists(_.sources.head.metrics.asScala.get("activeSource").contains("1"))
      }
      kafka.produce(
        topic,
        (130 until 140).map(i =>
          ProducedRecord.text(value = Some(s"""{"id":$i,"ts":0}"""), partition = Some(0))))
      RealTimeSink.await("hybrid", "records produced after the switch", q)(_.size >= 120)
    } finally q.stop()
  }

  /**
   * Records of `ahead` that arrived while `lagging` was still being read and were more than
   * `drift` ahead of what `lagging` had delivered by then.
   */
  private def earlyArrivals(
      ahead: Seq[RealTimeSink.Arrival],
      lagging: Seq[RealTimeSink.Arrival],
      drift: Long): Int = {
    def eventTime(a: RealTimeSink.Arrival) = a.row.getAs[java.sql.Timestamp]("timestamp").getTime
    val lastLagging = lagging.last.sequence
    ahead.count { a =>
      val caughtUp =
        lagging.filter(_.sequence < a.sequence).map(eventTime).maxOption.getOrElse(Long.MinValue)
      a.sequence < lastLagging && eventTime(a) - caughtUp > drift
    }
  }

  private val drift = 60000L

  /** The lagging side runs out of records below the other's start: only its idleness lets the other finish. */
  private def alignedStrategy(group: String) = WatermarkStrategy
    .forMonotonousTimestamps()
    .withIdleness(java.time.Duration.ofSeconds(2))
    .withWatermarkAlignment(
      group,
      java.time.Duration.ofMillis(drift),
      java.time.Duration.ofMillis(100))

  test(
    "live alignment: a partition ahead in event time is paused while the lagging one catches up, " +
      "and runs on once the lagging one is idle",
    Slow) {
    val topic = "rt-aligned"
    kafka.createTopic(topic, 2)
    // partition 1: starts two hours after partition 0, all there from the start
    kafka.produce(
      topic,
      (0 until 400).map(i =>
        ProducedRecord.text(
          value = Some(s"p1-$i"),
          partition = Some(1),
          timestamp = Some(base + 7200000L + i * 5000L))))
    // partition 0: two hours of event time from `base`, arriving over a few seconds
    def lagging(from: Int, until: Int) = kafka.produce(
      topic,
      (from until until).map(i =>
        ProducedRecord.text(
          value = Some(s"p0-$i"),
          partition = Some(0),
          timestamp = Some(base + i * 5000L))))
    lagging(0, 180)
    val q = startRealTime(
      kafkaSource(topic, alignedStrategy("rt"), maxPollRecords = 50),
      "aligned",
      tempDir("ckpt").toString,
      "1 second")
    try {
      (1 until 8).foreach { chunk =>
        Thread.sleep(700)
        lagging(chunk * 180, (chunk + 1) * 180)
      }
      RealTimeSink.await("aligned", "both partitions in full", q)(_.size >= 1840)
      val arrivals = RealTimeSink.arrivals("aligned")
      val laggingArrivals = arrivals.filter(_.row.getAs[Int]("partition") == 0)
      // only what one poll (50 records) or one update interval could let through
      val early =
        earlyArrivals(arrivals.filter(_.row.getAs[Int]("partition") == 1), laggingArrivals, drift)
      assert(
        early <= 100,
        s"$early records of the partition ahead arrived before the lagging one caught up")
      val times = laggingArrivals.map(_.row.getAs[java.sql.Timestamp]("timestamp").getTime)
      assert(times == times.sorted, "the lagging partition was read in order")

      // what query progress reported: the split ahead paused, more than the drift ahead of the
      // lagging one, while the lagging one moved up
      val reported =
        q.recentProgress.toSeq.flatMap(_.sources.head.metrics.asScala.get("liveSplits")).map {
          json =>
            new ObjectMapper()
              .readTree(json)
              .elements()
              .asScala
              .map { n =>
                n.get("split").asText -> (
                  Option(n.get("watermarkMs")).map(_.asLong),
                  n.get("paused").asBoolean)
              }
              .toMap
        }
      val whilePaused = reported.filter(s => s.get(s"$topic-1").exists(_._2))
      assert(whilePaused.nonEmpty, s"no progress showed the split ahead paused: $reported")
      // (each split's state is its latest report, up to one update interval old: compare one sample at least)
      assert(
        whilePaused.exists { s =>
          val ahead = s(s"$topic-1")._1
          val behind = s(s"$topic-0")._1
          ahead.isDefined && behind.isDefined && ahead.get - behind.get > drift
        },
        s"no progress showed the split ahead paused more than the drift ahead: $whilePaused")
      val laggingWatermarks = whilePaused.flatMap(_(s"$topic-0")._1)
      assert(
        laggingWatermarks.distinct.size > 1 && laggingWatermarks == laggingWatermarks.sorted,
        s"the lagging split's reported watermark rose while the other waited: $laggingWatermarks")
      // the time the split ahead spent paused, in query progress (Spark 4.3's real-time mode
      // passes no reader task metrics to the scan's SQL metrics)
      eventually("the time paused shows in query progress", q) {
        q.recentProgress.exists(
          _.sources.head.metrics.asScala.get("alignmentPausedMs").exists(_.toLong > 0))
      }
    } finally q.stop()
  }

  test(
    "live alignment across two sources of one group: the source ahead waits from its first record",
    Slow) {
    kafka.createTopic("rt-ahead", 2)
    kafka.createTopic("rt-behind", 2)
    kafka.produce(
      "rt-behind",
      (0 until 1440).map(i =>
        ProducedRecord.text(
          value = Some(s"b$i"),
          partition = Some(i % 2),
          timestamp = Some(base + i * 5000L))))
    kafka.produce(
      "rt-ahead",
      (0 until 400).map(i =>
        ProducedRecord.text(
          value = Some(s"a$i"),
          partition = Some(i % 2),
          timestamp = Some(base + 7200000L + i * 5000L))))
    val ahead = kafkaSource("rt-ahead", alignedStrategy("rt2"), maxPollRecords = 50)
    val behind = kafkaSource("rt-behind", alignedStrategy("rt2"), maxPollRecords = 50)
    val q = startRealTime(
      ahead.unionByName(behind),
      "aligned-sources",
      tempDir("ckpt").toString,
      "5 seconds")
    try {
      RealTimeSink.await("aligned-sources", "both topics in full", q)(_.size >= 1840)
      val arrivals = RealTimeSink.arrivals("aligned-sources")
      def of(topic: String) = arrivals.filter(_.row.getAs[String]("topic") == topic)
      // the source ahead is planned first, before the group knows the other: it still waits
      val early = earlyArrivals(of("rt-ahead"), of("rt-behind"), drift)
      assert(
        early <= 100,
        s"$early records of the source ahead arrived before the lagging one caught up")
    } finally q.stop()
  }

  test(
    "under read_committed in real-time mode: committed transactions arrive once, aborted ones never, an open one when it commits; processAllAvailable ends at a commit marker",
    Slow) {
    val topic = "rt-transactions"
    kafka.createTopic(topic, 1)
    val source = Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .option("kafka.isolation.level", "read_committed")
        .build(),
      null,
      topic)
    def committed(until: Int) = (0 until until).map(i => s"c$i").sorted
    def values =
      RealTimeSink
        .arrivals(topic)
        .map(a => new String(a.row.getAs[Array[Byte]]("value"), "UTF-8"))
    val producer = new TransactionalProducer(kafka.bootstrapServers, "sluice-rt-transactions")
    try {
      producer.write(topic, 0, (0 until 5).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (0 until 5).map(i => s"a$i"))
      producer.abort()
      producer.write(topic, 0, (5 until 10).map(i => s"c$i"))
      producer.commit()
      producer.write(topic, 0, (10 until 15).map(i => s"c$i")) // left open
      val q = startRealTime(source, topic, tempDir("ckpt").toString, "1 second")
      try {
        RealTimeSink.await(topic, "the committed transactions", q)(_.size >= 10)
        // open batches end and begin again while the transaction stays open: none sees it
        eventually("two open batches ended with the transaction open", q) {
          q.recentProgress.length >= 2
        }
        assert(values.sorted == committed(10))
        producer.commit()
        RealTimeSink.await(topic, "the transaction committed while the query ran", q)(
          _.size >= 15)
        // the log now ends with the commit's marker, which no record stands for
        processAllAvailable(q)
        assert(values.sorted == committed(15), "each committed record once")
        // and with an aborted transaction: records and a marker no reader sees
        producer.write(topic, 0, (5 until 10).map(i => s"a$i"))
        producer.abort()
        processAllAvailable(q)
        assert(values.sorted == committed(15), "no aborted record")
      } finally q.stop()
    } finally producer.close()
  }
}

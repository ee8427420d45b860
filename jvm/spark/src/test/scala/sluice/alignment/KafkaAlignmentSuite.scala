package sluice.alignment

import java.time.Duration

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, expr, window}
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, StreamingQueryProgress, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, Slow, SparkSuiteBase}
import sluice.alignment.AlignedStreamSuite.splitStates
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * The acceptance scenarios of watermark alignment against a real broker, each compared with
 * Spark's own Kafka source on the same data.
 */
class KafkaAlignmentSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val Minute = 60000L
  private val Hour = 60 * Minute

  /** Backlogs end at this event time (minute-aligned, so windows are easy to count). */
  private val end = 1700000000000L / Hour * Hour

  private def sparkKafka(topic: String, maxOffsets: Int): DataFrame =
    spark.readStream
      .format("kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .option("maxOffsetsPerTrigger", maxOffsets.toString)
      .load()
      .withColumn("event_time", col("timestamp"))

  private def sluiceKafka(
      topic: String,
      strategy: WatermarkStrategy,
      name: String,
      maxRecords: Int): DataFrame =
    Sluice.fromSource(
      spark,
      KafkaSource
        .builder()
        .bootstrapServers(kafka.bootstrapServers)
        .topics(topic)
        .startingOffsets(OffsetsInitializer.earliest())
        .build(),
      strategy,
      name,
      Map("maxRecordsPerTrigger" -> maxRecords.toString))

  private def run(df: DataFrame, table: String, mode: OutputMode): StreamingQuery = {
    val q = df.writeStream
      .format("memory")
      .queryName(table)
      .outputMode(mode)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q, timeoutMs = 300000)
    assert(q.exception.isEmpty, q.exception)
    q
  }

  private def dropped(q: StreamingQuery): Long =
    q.recentProgress.flatMap(_.stateOperators).map(_.numRowsDroppedByWatermark).sum
  private def peakStateRows(q: StreamingQuery): Long =
    q.recentProgress.map(_.stateOperators.map(_.numRowsTotal).sum).maxOption.getOrElse(0L)
  private def dataBatches(q: StreamingQuery): Seq[StreamingQueryProgress] =
    q.recentProgress.filter(_.numInputRows > 0).toSeq

  test(
    "skewed catch-up: Spark's Kafka source drops the lagging partition, aligned Sluice counts every window") {
    // partition 0: 24 h of backlog, one record a minute; partitions 1-7: the last 2 h
    val topic = "skewed"
    kafka.createTopic(topic, 8)
    val records = for {
      p <- 0 until 8
      hours = if (p == 0) 24 else 2
      i <- 0 until hours * 60
    } yield ProducedRecord.text(
      value = Some(s"$p-$i"),
      partition = Some(p),
      timestamp = Some(end - (hours * 60 - i) * Minute))
    kafka.produce(topic, records)
    val expected = records.groupBy(r => r.timestamp.get / Minute * Minute).map { case (w, rs) =>
      w -> rs.size.toLong
    }

    def counts(df: DataFrame, table: String): (StreamingQuery, Int) = {
      val q = run(
        df.withWatermark("event_time", "10 minutes")
          .groupBy(window(col("event_time"), "1 minute"))
          .count(),
        table,
        OutputMode.Update())
      val got = spark
        .table(table)
        .collect()
        .map(r => r.getStruct(0).getTimestamp(0).getTime -> r.getLong(1))
        .groupBy(_._1)
        .map { case (w, cs) => w -> cs.map(_._2).max }
      (q, expected.count { case (w, n) => !got.get(w).contains(n) })
    }

    val (theirs, theirWrong) = counts(sparkKafka(topic, 200), "skew_spark")
    val drift = 5 * Minute
    val (ours, ourWrong) = counts(
      sluiceKafka(
        topic,
        WatermarkStrategy
          .forMonotonousTimestamps()
          .withWatermarkAlignment("catch-up", Duration.ofMillis(drift)),
        "skewed",
        200),
      "skew_sluice")

    assert(
      dropped(theirs) > 0 && theirWrong > 0,
      s"Spark dropped ${dropped(theirs)}, wrong windows $theirWrong")
    assert(dropped(ours) == 0)
    assert(ourWrong == 0)
    assert(
      spark
        .table("skew_sluice")
        .agg(expr("count(distinct window)"))
        .head()
        .getLong(0) == expected.size)
    // the bound, at every batch: unfinished splits within the drift (+ one record's step when the limit cut short)
    dataBatches(ours).foreach { p =>
      assert(p.numInputRows <= 200)
      val wms = splitStates(p).filterNot(_.finished).flatMap(_.watermark)
      if (wms.nonEmpty)
        assert(
          wms.max - wms.min <= drift + Minute,
          s"spread ${wms.max - wms.min} ms in batch ${p.batchId}")
    }
    // the first batch is aligned too: only the lagging partition reads
    val first = splitStates(dataBatches(ours).head)
    assert(first.filter(_.watermark.isDefined).map(_.split) == Seq(s"$topic-0"))
    assert(first.count(_.paused) == 7)
  }

  test(
    "two topics, one group: a stream-stream join keeps half of Spark's state at most, with the same output",
    Slow) {
    // 12 h of orders (one a minute) and payments (ten a minute, each within a minute of its order)
    kafka.createTopic("orders", 1)
    kafka.createTopic("payments", 1)
    val start = end - 12 * Hour
    kafka.produce(
      "orders",
      (0 until 720).map(i =>
        ProducedRecord.text(value = Some(s"$i"), timestamp = Some(start + i * Minute))))
    kafka.produce(
      "payments",
      (0 until 7200).map(j =>
        ProducedRecord.text(
          value = Some(s"${j / 10}:$j"),
          timestamp = Some(start + (j / 10) * Minute + (j % 10) * 5000L))))

    def joined(orders: DataFrame, payments: DataFrame, table: String): StreamingQuery = {
      val o = orders
        .selectExpr("cast(cast(value as string) as int) as order_id", "event_time as order_time")
        .withWatermark("order_time", "5 minutes")
      val p = payments
        .selectExpr(
          "cast(split(cast(value as string), ':')[0] as int) as paid_order",
          "cast(split(cast(value as string), ':')[1] as int) as payment_id",
          "event_time as paid_time")
        .withWatermark("paid_time", "5 minutes")
      run(
        o.join(
          p,
          expr(
            "paid_order = order_id AND paid_time BETWEEN order_time AND order_time + interval 2 minutes"))
          .select("order_id", "payment_id"),
        table,
        OutputMode.Append())
    }

    val theirs = joined(sparkKafka("orders", 400), sparkKafka("payments", 400), "join_spark")
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignment("join", Duration.ofMinutes(5))
    val ours = joined(
      sluiceKafka("orders", strategy, "orders", 400),
      sluiceKafka("payments", strategy, "payments", 400),
      "join_sluice")

    val expected = (0 until 7200).map(j => Row(j / 10, j))
    assert(spark.table("join_spark").collect().toSeq.sortBy(_.getInt(1)) == expected)
    assert(spark.table("join_sluice").collect().toSeq.sortBy(_.getInt(1)) == expected)
    // The dense side's batch (its read limit) stays in the join's state until the next watermark,
    // aligned or not; what alignment removes is the sparse side racing hours ahead of it.
    assert(
      peakStateRows(ours) * 2 <= peakStateRows(theirs),
      s"peak state ${peakStateRows(ours)} vs ${peakStateRows(theirs)}")
    // planned as one round, the group reads what the read limits allow (to within the horizon
    // search's tolerance): hardly more batches than Spark
    val allowed = math.ceil(dataBatches(theirs).size / (1 - HorizonPlanner.SearchTolerance)).toInt
    assert(
      dataBatches(ours).size <= allowed,
      s"${dataBatches(ours).size} batches against Spark's ${dataBatches(theirs).size}")
    // the group's members stay within the drift of each other at every batch end (+ one record's step)
    dataBatches(ours).foreach { p =>
      val m = p.sources.map(_.metrics.asScala)
      m.foreach(s => assert(s("alignment.group") == "join"))
      m.flatMap(_.get("alignment.groupSpreadMs"))
        .foreach(s => assert(s.toLong <= 5 * Minute + Minute, s"spread $s"))
    }
  }

  test("AvailableNow after a restart reads what only one member of a group received") {
    // Two topics in one group, run to completion; then only `first` gets records (within the
    // drift) and the query runs again on its checkpoint: a trigger that ends with them unread
    // would skip them run after run.
    val (first, second) = ("an-first", "an-second")
    Seq(first, second).foreach(kafka.createTopic(_, 1))
    def put(topic: String, from: Int, until: Int): Unit =
      kafka.produce(
        topic,
        (from until until).map(i =>
          ProducedRecord.text(
            key = None,
            value = Some(s"$topic-$i"),
            partition = Some(0),
            timestamp = Some(end - Hour + i * 1000L))))
    put(first, 0, 100)
    put(second, 0, 100)
    val ckpt = tempDir("ckpt").toString
    val out = tempDir("sink").toString
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignment("an", Duration.ofMinutes(5))
    def runOnce(): Seq[String] = {
      val q = sluiceKafka(first, strategy, "first", 50)
        .union(sluiceKafka(second, strategy, "second", 50))
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(Trigger.AvailableNow())
        .start()
      assert(q.awaitTermination(120000), "the trigger did not end")
      q.exception.foreach(e => throw e)
      spark.read.parquet(out).collect().map(_.getString(0)).toSeq
    }
    def values(topic: String, until: Int) = (0 until until).map(i => s"$topic-$i")
    assert(runOnce().sorted == (values(first, 100) ++ values(second, 100)).sorted)
    put(first, 100, 160)
    assert(runOnce().sorted == (values(first, 160) ++ values(second, 100)).sorted)
  }

  test("an idle partition stops holding the others back, and a record makes it active again") {
    val topic = "idle"
    kafka.createTopic(topic, 2)
    val t0 = end
    kafka.produce(
      topic,
      ProducedRecord.text(value = Some("p1-0"), partition = Some(1), timestamp = Some(t0)) +:
        (0 until 10).map(i =>
          ProducedRecord.text(
            value = Some(s"p0-$i"),
            partition = Some(0),
            timestamp = Some(t0 + i * Minute))))
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "100")
    // keep every progress (a few a second here): the checks read the whole run, by position
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withIdleness(Duration.ofSeconds(2))
      .withWatermarkAlignment("idle", Duration.ofMinutes(1))
    val q = Sluice
      .fromSource(
        spark,
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics(topic)
          .startingOffsets(OffsetsInitializer.earliest())
          .build(),
        strategy,
        "idle")
      .writeStream
      .format("memory")
      .queryName("idle_rows")
      .trigger(Trigger.ProcessingTime(200))
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    try {
      def withStates =
        q.recentProgress.toSeq.filter(_.sources.head.metrics.containsKey("watermark.splits"))
      def states = withStates.map(splitStates(_))
      def waitFor(what: String)(cond: => Boolean): Unit = eventually(what, q)(cond)
      def p0Paused(p: StreamingQueryProgress) =
        splitStates(p).exists(s => s.split == s"$topic-0" && s.paused)
      def p1Idle(p: StreamingQueryProgress) =
        splitStates(p).exists(s => s.split == s"$topic-1" && s.status == "IDLE")
      def recordsRead(p: StreamingQueryProgress) =
        p.sources.head.metrics.get("recordsRead").toLong
      // first p0 is held back by p1 (one minute of drift) ...
      waitFor("p0 paused")(states.exists(_.exists(s => s.split == s"$topic-0" && s.paused)))
      // ... until p1 has been idle for 2 s: then p0 reads everything
      waitFor("all rows")(spark.table("idle_rows").count() == 11)
      waitFor("p1 idle")(
        states.exists(_.exists(s => s.split == s"$topic-1" && s.status == "IDLE")))
      // What progress reported of each planning, not counts taken at some moment (which would race
      // the idle timeout): while p0 is paused it has not read all its records, and it reads the
      // rest only in a batch planned once p1 is idle, after it was paused.
      waitFor("the progress of the batch that read the last record")(
        withStates.exists(recordsRead(_) == 11))
      val run = withStates
      val paused = run.indexWhere(p0Paused)
      assert(paused >= 0, "no progress showed p0 paused")
      run.filter(p0Paused).foreach { p =>
        assert(
          recordsRead(p) < 11,
          s"batch ${p.batchId}: p0 paused, yet ${recordsRead(p)} records read")
      }
      val all = run.indexWhere(recordsRead(_) == 11)
      assert(
        all > paused,
        s"p0 read everything at progress $all, before it was paused at $paused")
      assert(
        p1Idle(run(all)),
        s"p0 read everything in batch ${run(all).batchId}, planned with p1 not idle: ${splitStates(run(all))}")
      // nothing arrives: both idle, and so is the source
      waitFor("source idle")(
        q.recentProgress.exists(_.sources.head.metrics.get("watermark.status") == "IDLE"))
      // a record on p1 makes it (and the source) active again
      val seen = q.recentProgress.length
      kafka.produce(
        topic,
        Seq(
          ProducedRecord
            .text(value = Some("p1-1"), partition = Some(1), timestamp = Some(t0 + 20 * Minute))))
      waitFor("p1 active")(q.recentProgress.drop(seen).exists { p =>
        p.numInputRows > 0 && splitStates(p).exists(s =>
          s.split == s"$topic-1" && s.status == "ACTIVE")
      })
      waitFor("12 rows")(spark.table("idle_rows").count() == 12)
    } finally {
      q.stop()
      spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
      spark.conf.unset("spark.sql.streaming.numRecentProgressUpdates")
    }
  }

  test("inside a hybrid source, the active source's partitions align after the switch") {
    // an hour of history (bounded), then a live topic whose partition 0 lags partition 1 by two hours
    kafka.createTopic("history", 1)
    kafka.createTopic("recent", 2)
    kafka.produce(
      "history",
      (0 until 60).map(i =>
        ProducedRecord.text(value = Some(s"h$i"), timestamp = Some(end - 4 * Hour + i * Minute))))
    val recent = (0 until 180).map(i =>
      ProducedRecord.text(
        value = Some(s"r0-$i"),
        partition = Some(0),
        timestamp = Some(end - 3 * Hour + i * Minute))) ++
      (0 until 60).map(i =>
        ProducedRecord.text(
          value = Some(s"r1-$i"),
          partition = Some(1),
          timestamp = Some(end - Hour + i * Minute)))
    kafka.produce("recent", recent)
    val hybrid = sluice.hybrid.HybridSource
      .builder(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("history")
          .startingOffsets(OffsetsInitializer.earliest())
          .stoppingOffsets(OffsetsInitializer.latest())
          .build())
      .addSource(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics("recent")
          .startingOffsets(OffsetsInitializer.earliest())
          .build())
      .build()
    val df = Sluice.fromSource(
      spark,
      hybrid,
      WatermarkStrategy
        .forMonotonousTimestamps()
        .withWatermarkAlignment("hybrid", Duration.ofMinutes(5)),
      "history+recent",
      Map("maxRecordsPerTrigger" -> "50"))
    val q = run(
      df.withWatermark("event_time", "10 minutes")
        .groupBy(window(col("event_time"), "1 minute"))
        .count(),
      "hybrid_counts",
      OutputMode.Update())
    assert(dropped(q) == 0)
    assert(
      spark
        .table("hybrid_counts")
        .groupBy("window")
        .agg(expr("max(count) as n"))
        .agg(expr("sum(n)"))
        .head()
        .getLong(0) == 300)
    // the lagging live partition reads first; the other waits, paused, until it is within the drift
    val live = dataBatches(q).map(splitStates(_)).filter(_.exists(_.split == "1:recent-1"))
    assert(live.exists(_.exists(s => s.split == "1:recent-1" && s.paused)))
  }
}

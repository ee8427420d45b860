package sluice.connector.kafka

import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.admin.{Admin, AdminClientConfig}
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * Spark's Kafka options, taken by their Spark names: a query moves from `format("kafka")` by
 * changing the format and adding `source=kafka`, and reads what Spark's source reads.
 */
class KafkaSparkOptionsSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val baseTs = 1700000000000L
  private var queries = 0

  private def fill(topic: String, partitions: Int, records: Int, from: Int = 0): Unit = {
    if (from == 0) kafka.createTopic(topic, partitions)
    kafka.produce(
      topic,
      (from until from + records).map { i =>
        ProducedRecord.text(
          key = Some(s"k$i"),
          value = Some(s"v$i"),
          partition = Some(i % partitions),
          timestamp = Some(baseTs + i * 10L))
      })
  }

  private def reader(format: String, options: Map[String, String]): DataFrame = {
    val r = spark.readStream
      .format(format)
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .options(options)
    (if (format == "sluice") r.option("source", "kafka") else r).load()
  }

  /** The rows an AvailableNow run of `format` reads (offsets as the key of every row), and the query. */
  private def run(format: String, options: Map[String, String]): (Seq[Row], StreamingQuery) = {
    queries += 1
    val name = s"spark_options_$queries"
    val q = reader(format, options)
      .selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
      .writeStream
      .format("memory")
      .queryName(name)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    (spark.table(name).collect().toSeq, q)
  }

  private def same(options: Map[String, String]): (Seq[Row], StreamingQuery, StreamingQuery) = {
    val (theirs, spark) = run("kafka", options)
    val (ours, sluice) = run("sluice", options)
    assert(ours.sortBy(_.toString) == theirs.sortBy(_.toString))
    (ours, spark, sluice)
  }

  private def dataBatches(q: StreamingQuery): Seq[Long] =
    q.recentProgress.toSeq.map(_.numInputRows).filter(_ > 0)

  test("maxOffsetsPerTrigger bounds every batch, as Spark's does") {
    fill("max-offsets", 3, 3000)
    val (rows, theirs, ours) = same(
      Map(
        "subscribe" -> "max-offsets",
        "startingOffsets" -> "earliest",
        "maxOffsetsPerTrigger" -> "500"))
    assert(rows.size == 3000)
    // Spark rounds each partition's share down (7 batches of at most 498); Sluice fills the bound
    assert(
      dataBatches(theirs).forall(_ <= 500) && dataBatches(theirs).size >= 6,
      dataBatches(theirs))
    assert(
      dataBatches(ours).forall(_ <= 500) && dataBatches(ours).sum == 3000 && dataBatches(
        ours).size >= 6,
      dataBatches(ours))
    val both = intercept[IllegalArgumentException](
      reader(
        "sluice",
        Map(
          "subscribe" -> "max-offsets",
          "maxOffsetsPerTrigger" -> "500",
          "maxRecordsPerTrigger" -> "400")))
    assert(
      both.getMessage.contains("'maxRecordsPerTrigger' (400) and 'maxOffsetsPerTrigger' (500)"),
      both.getMessage)
  }

  test("assign reads exactly the partitions given, as Spark's does") {
    fill("assigned", 4, 400)
    val (rows, _, _) =
      same(Map("assign" -> """{"assigned":[1,3]}""", "startingOffsets" -> "earliest"))
    assert(rows.map(_.getInt(1)).toSet == Set(1, 3) && rows.size == 200)
    val built = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .partitions(Map("assigned" -> Seq(3, 1)))
      .build()
    assert(built.options.get("assign").contains("""{"assigned":[1,3]}"""))
    val e = intercept[IllegalArgumentException](
      reader("sluice", Map("assign" -> """{"assigned":[1]}""", "subscribe" -> "assigned")))
    assert(e.getMessage.contains("'subscribe' and 'assign' exclude each other"), e.getMessage)
  }

  test(
    "idle consumers of a configuration no query uses any more are closed (groupIdPrefix draws one per run)") {
    val runs = Seq(1, 2).map(run =>
      KafkaConfig
        .fromOptions(
          Map(
            "kafka.bootstrap.servers" -> kafka.bootstrapServers,
            "subscribe" -> "t",
            "groupIdPrefix" -> "p"))
        .consumerProperties)
    assert(runs(0)("group.id") != runs(1)("group.id"))
    val now = System.currentTimeMillis()
    KafkaConsumerPool.releaseNow(runs(0), KafkaConsumerPool.borrow(runs(0)), healthy = true, now)
    assert(KafkaConsumerPool.idleCount(runs(0)) == 1)
    // the next run releases under its own group id, well after the first run's consumer went idle
    KafkaConsumerPool.releaseNow(
      runs(1),
      KafkaConsumerPool.borrow(runs(1)),
      healthy = true,
      now + 10 * 60 * 1000L)
    assert(KafkaConsumerPool.idleCount(runs(0)) == 0, "the first run's consumer was never closed")
    assert(KafkaConsumerPool.idleCount(runs(1)) == 1)
  }

  test(
    "kafka.group.id and groupIdPrefix label the consumers; nothing is committed to the group") {
    fill("grouped", 2, 200)
    same(
      Map(
        "subscribe" -> "grouped",
        "startingOffsets" -> "earliest",
        "kafka.group.id" -> "sluice-test-group"))
    same(
      Map(
        "subscribe" -> "grouped",
        "startingOffsets" -> "earliest",
        "groupIdPrefix" -> "sluice-prefix"))
    val admin = Admin.create(
      Map[String, AnyRef](
        AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG -> kafka.bootstrapServers).asJava)
    try {
      val committed =
        admin.listConsumerGroupOffsets("sluice-test-group").partitionsToOffsetAndMetadata().get()
      assert(committed.isEmpty, committed)
    } finally admin.close()
  }

  test(
    "startingOffsetsByTimestampStrategy: a start past every record fails by default, or starts at the end") {
    fill("late-start", 2, 100)
    val past = (baseTs + 1000000L).toString
    val options = Map("subscribe" -> "late-start", "startingTimestamp" -> past)
    intercept[Exception](run("kafka", options)) // Spark's default strategy is error too
    val e = intercept[Exception](run("sluice", options))
    val text = Iterator
      .iterate[Throwable](e)(_.getCause)
      .takeWhile(_ != null)
      .map(_.getMessage)
      .mkString(" | ")
    assert(
      text.contains("has a timestamp at or after") && text.contains(
        "startingOffsetsByTimestampStrategy=latest"),
      text)
    val (rows, _, _) = same(options + ("startingOffsetsByTimestampStrategy" -> "latest"))
    assert(rows.isEmpty)
    // the builders' timestamp start is Flink's: such a partition starts at its end
    val built = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics("late-start")
      .startingOffsets(OffsetsInitializer.Timestamp(baseTs + 1000000L))
      .build()
    assert(built.options.get("startingOffsetsByTimestampStrategy").contains("latest"))
    val ours = Sluice
      .fromSource(spark, built, null, "late")
      .writeStream
      .format("memory")
      .queryName("late_built")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(ours)
    assert(ours.exception.isEmpty && spark.table("late_built").count() == 0, ours.exception)
  }

  test(
    "minOffsetsPerTrigger holds batches back until enough records, or maxTriggerDelay, as Spark's does") {
    kafka.createTopic("min-offsets", 2)
    val delayMs = 8000L
    val started = System.currentTimeMillis()
    val q = reader(
      "sluice",
      Map(
        "subscribe" -> "min-offsets",
        "startingOffsets" -> "earliest",
        "minOffsetsPerTrigger" -> "100",
        "maxTriggerDelay" -> s"${delayMs}ms")).writeStream
      .format("memory")
      .queryName("min_offsets")
      .trigger(Trigger.ProcessingTime(200))
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    try {
      // the first trigger runs whatever is there (as Spark's: no batch before it to wait from)
      eventually("the first trigger ran", q, timeoutMs = 60000)(q.recentProgress.nonEmpty)
      fill("min-offsets", 2, 10, from = 1)
      def rows = spark.table("min_offsets").count()
      eventually("the 10 records are read once maxTriggerDelay has passed", q, timeoutMs = 60000)(
        rows == 10)
      // the stream's first trigger, not before `started`, counts as the last one: nothing earlier
      assert(
        System.currentTimeMillis() - started >= delayMs,
        "10 records were read before maxTriggerDelay")
      fill("min-offsets", 2, 150, from = 11)
      // the sink holds a batch's rows before its progress is reported: wait for both
      eventually(
        "150 more records, more than minOffsetsPerTrigger, are read",
        q,
        timeoutMs = 60000)(rows == 160 && q.recentProgress.map(_.numInputRows).sum == 160)
      // The broker may take the 150 in more than one request, so a batch can start with 100 of
      // them and leave the rest to the next maxTriggerDelay: what counts is that the first batch
      // after the 10 had enough records and did not wait for the delay.
      val batches = q.recentProgress
        .filter(_.numInputRows > 0)
        .map(p => (java.time.Instant.parse(p.timestamp).toEpochMilli, p.numInputRows))
      assert(
        batches.length >= 2 && batches(1)._2 >= 100 && batches(1)._1 - batches(0)._1 < delayMs,
        s"enough records did not start a batch at once: ${batches.toSeq}")
    } finally q.stop()
    val ignored = run(
      "sluice",
      Map(
        "subscribe" -> "min-offsets",
        "startingOffsets" -> "earliest",
        "minOffsetsPerTrigger" -> "100000"))._1
    assert(
      ignored.size == 160,
      "AvailableNow must read everything it found, whatever minOffsetsPerTrigger says")
  }

  private def tasksOfLastBatch(q: StreamingQuery): Int =
    q.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper]
      .streamingQuery
      .lastExecution
      .executedPlan
      .collect { case scan: org.apache.spark.sql.execution.datasources.v2.MicroBatchScanExec =>
        scan.inputPartitions.size
      }
      .sum

  test(
    "minPartitions divides one partition's backlog among tasks, as Spark's does; restarts stay exact") {
    fill("one-partition", 1, 1000)
    val options =
      Map("subscribe" -> "one-partition", "startingOffsets" -> "earliest", "minPartitions" -> "4")
    val (rows, theirs, ours) = same(options)
    assert(rows.size == 1000 && rows.map(_.getLong(2)).toSet == (0L until 1000L).toSet)
    assert(tasksOfLastBatch(theirs) == 4 && tasksOfLastBatch(ours) == 4)
    assert(
      ours.lastProgress.sources.head.metrics.get("recordsRead") == "1000",
      "every part counted once")

    // batches of 300, each read by 3 tasks; a second run on the same checkpoint reads only what came after
    val checkpoint = tempDir("ckpt").toString
    val out = tempDir("divided").toString
    def runOnce(): Seq[Long] = {
      val q =
        reader("sluice", options ++ Map("minPartitions" -> "3", "maxOffsetsPerTrigger" -> "300"))
          .selectExpr("offset")
          .writeStream
          .format("parquet")
          .option("path", out)
          .trigger(Trigger.AvailableNow())
          .option("checkpointLocation", checkpoint)
          .start()
      awaitEnd(q)
      q.exception.foreach(e => throw e)
      assert(tasksOfLastBatch(q) == 3)
      spark.read.parquet(out).collect().toSeq.map(_.getLong(0))
    }
    assert(runOnce().sorted == (0L until 1000L))
    fill("one-partition", 1, 500, from = 1000)
    assert(
      runOnce().sorted == (0L until 1500L),
      "the sink holds every offset once after a restart")
  }

  test(
    "Spark options Sluice does not take are refused with the reason; unknown names list the Kafka options only") {
    val e = intercept[IllegalArgumentException](
      reader("sluice", Map("subscribe" -> "t", "fetchOffset.numRetries" -> "8")))
    assert(
      e.getMessage.startsWith(
        "KafkaSource: option 'fetchOffset.numRetries' of Spark's Kafka source is not " +
          "supported: "),
      e.getMessage)
    val unknown = intercept[IllegalArgumentException](
      reader("sluice", Map("subscribe" -> "t", "startingOffset" -> "1")))
    assert(
      unknown.getMessage.contains("startingOffsets") && !unknown.getMessage.contains(
        "allowComments"),
      unknown.getMessage)
  }
}

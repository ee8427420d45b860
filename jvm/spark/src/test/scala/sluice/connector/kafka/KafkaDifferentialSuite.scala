package sluice.connector.kafka

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.ColumnarToRowExec
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Slow, SparkSuiteBase}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * Sluice's raw Kafka source against Spark's own, on the same topic: every column, as multisets.
 * 4 partitions, 40k records with keys, null keys and values, headers, explicit timestamps. With
 * headers Sluice reads rows; without, micro-batches and batch reads are column batches.
 */
class KafkaDifferentialSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val topic = "differential"
  private val records = 40000
  // each partition's: many fetches of Kafka's and Spark's default sizes (500 records a poll)
  private val perPartition = records / 4
  // where the bounded reads end: partition 0 early, 1 at its end, 2 part way, 3 not at all
  private val ends = s"""{"$topic":{"0":1000,"1":-1,"2":${perPartition * 4 / 5},"3":0}}"""
  private val endsRead = 1000 + perPartition + perPartition * 4 / 5
  private val baseTs = 1700000000000L
  private val SparkMetricNames =
    Seq(
      "minOffsetsBehindLatest",
      "maxOffsetsBehindLatest",
      "avgOffsetsBehindLatest",
      "estimatedTotalBytesBehindLatest")

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    kafka.createTopic(topic, 4)
    kafka.produce(
      topic,
      (0 until records).map { i =>
        ProducedRecord.text(
          key = if (i % 7 == 0) None else Some(s"k${i % 1000}"),
          value = if (i % 11 == 0) None else Some(s"""{"i":$i,"s":"välue-$i"}"""),
          partition = Some(i % 4),
          timestamp = Some(baseTs + i * 10L),
          headers = if (i % 3 == 0) Seq("h" -> s"$i", "n" -> null, "h" -> "again") else Nil)
      })
  }

  private def theirs(options: (String, String)*): DataFrame =
    spark.readStream
      .format("kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("includeHeaders", "true")
      .options(options.toMap)
      .load()

  private def ours(options: (String, String)*): DataFrame =
    spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("includeHeaders", "true")
      .options(options.toMap)
      .load()

  private def collect(df: DataFrame, name: String): DataFrame = run(df, name)._1

  private def run(df: DataFrame, name: String): (DataFrame, StreamingQuery) = {
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q, timeoutMs = 300000)
    assert(q.exception.isEmpty, q.exception)
    (spark.table(name), q)
  }

  /** Spark's Kafka source metrics (and the one it does not report) in each batch that read rows. */
  private def sparkMetrics(q: StreamingQuery): Seq[Map[String, Option[String]]] =
    q.recentProgress.toSeq.filter(_.numInputRows > 0).map { p =>
      val m = p.sources.head.metrics.asScala
      SparkMetricNames.map(n => n -> m.get(n)).toMap
    }

  private def assertSameMultiset(expected: DataFrame, actual: DataFrame, rows: Long): Unit = {
    assert(expected.schema == actual.schema)
    assert(expected.count() == rows)
    assert(actual.count() == rows)
    assert(expected.exceptAll(actual).isEmpty, "rows Spark's source read that Sluice did not")
    assert(actual.exceptAll(expected).isEmpty, "rows Sluice read that Spark's source did not")
  }

  test("earliest: identical rows, every column", Slow) {
    assertSameMultiset(
      collect(theirs("startingOffsets" -> "earliest"), "spark_earliest"),
      collect(ours("startingOffsets" -> "earliest"), "sluice_earliest"),
      records)
  }

  test("specific offsets per partition: identical rows") {
    val start = s"""{"$topic":{"0":100,"1":-2,"2":${perPartition - 1000},"3":$perPartition}}"""
    val expected = collect(theirs("startingOffsets" -> start), "spark_specific")
    assertSameMultiset(
      expected,
      collect(ours("startingOffsets" -> start), "sluice_specific"),
      records - 100 - (perPartition - 1000) - perPartition)
  }

  test("a start timestamp: identical rows") {
    val from = records * 3 / 5
    val ts = (baseTs + from * 10L).toString // record `from` on
    assertSameMultiset(
      collect(theirs("startingTimestamp" -> ts), "spark_ts"),
      collect(ours("startingTimestamp" -> ts), "sluice_ts"),
      records - from)
  }

  test("bounded ends: identical to Spark's batch read of the same range") {
    val expected = spark.read
      .format("kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("includeHeaders", "true")
      .option("startingOffsets", "earliest")
      .option("endingOffsets", ends)
      .load()
    val bounded = KafkaSource
      .builder()
      .bootstrapServers(kafka.bootstrapServers)
      .topics(topic)
      .includeHeaders(true)
      .startingOffsets(OffsetsInitializer.earliest())
      .option("endingOffsets", ends)
      .build()
    assert(bounded.boundedness == _root_.sluice.api.Boundedness.Bounded)
    val actual = collect(_root_.sluice.Sluice.fromSource(spark, bounded), "sluice_bounded")
    assertSameMultiset(expected, actual, endsRead)
  }

  test(
    "without headers, read as column batches: identical rows in a stream and in a batch read of ranges ending mid-partition",
    Slow) {
    val noHeaders = Seq("includeHeaders" -> "false", "startingOffsets" -> "earliest")
    val (actual, q) = run(ours(noHeaders: _*), "sluice_batches")
    assert(
      q.asInstanceOf[StreamingQueryWrapper]
        .streamingQuery
        .lastExecution
        .executedPlan
        .exists(_.isInstanceOf[ColumnarToRowExec]),
      "the stream's scan did not read column batches")
    assertSameMultiset(collect(theirs(noHeaders: _*), "spark_batches"), actual, records)

    def batchRead(format: String) = spark.read
      .format(format)
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .option("endingOffsets", ends)
      .load()
    val read = batchRead("sluice")
    assert(read.queryExecution.executedPlan.exists(_.isInstanceOf[ColumnarToRowExec]))
    assertSameMultiset(batchRead("kafka"), read, endsRead)
  }

  test(
    "Spark's source metrics: the same names and values at the end of an AvailableNow run; scan metrics exact") {
    val small = "differential-metrics"
    kafka.createTopic(small, 4)
    kafka.produce(
      small,
      (0 until 2000).map { i =>
        ProducedRecord.text(
          key = if (i % 5 == 0) None else Some(s"k$i"),
          value = if (i % 13 == 0) None else Some(s"v-é-$i"),
          partition = Some(i % 4))
      })
    def read(df: DataFrame) = df.selectExpr("key", "value", "topic", "partition", "offset")
    val (expected, theirQuery) = run(
      read(
        spark.readStream
          .format("kafka")
          .option("kafka.bootstrap.servers", kafka.bootstrapServers)
          .option("subscribe", small)
          .option("startingOffsets", "earliest")
          .load()),
      "spark_metrics")
    val (actual, ourQuery) = run(
      read(
        spark.readStream
          .format("sluice")
          .option("source", "kafka")
          .option("kafka.bootstrap.servers", kafka.bootstrapServers)
          .option("subscribe", small)
          .option("startingOffsets", "earliest")
          .load()),
      "sluice_metrics")
    assertSameMultiset(expected, actual, 2000)

    val (theirs, ours) = (sparkMetrics(theirQuery).last, sparkMetrics(ourQuery).last)
    // read to the end: 0 behind in every partition; Apache Spark reports no byte estimate
    assert(
      theirs == Map(
        "minOffsetsBehindLatest" -> Some("0"),
        "maxOffsetsBehindLatest" -> Some("0"),
        "avgOffsetsBehindLatest" -> Some("0.0"),
        "estimatedTotalBytesBehindLatest" -> None),
      theirs)
    assert(ours == theirs)

    // the scan's SQL metrics of Sluice's one batch: every record, and its key and value bytes
    assert(ourQuery.recentProgress.count(_.numInputRows > 0) == 1)
    val scan = _root_.sluice.spark.ScanMetrics.ofLastBatch(ourQuery)
    assert(scan("recordsRead") == 2000)
    val bytes = expected
      .selectExpr("sum(coalesce(octet_length(key), 0) + coalesce(octet_length(value), 0))")
      .head()
      .getLong(0)
    assert(scan("bytesRead") == bytes)
    assert(scan("malformedRecordsDropped") == 0 && scan("alignmentPausedMs") == 0)
  }

  test(
    "Spark's source metrics batch by batch: one partition read 300 offsets a trigger, as Spark's source reads it") {
    val one = "differential-lag"
    kafka.createTopic(one, 1)
    kafka.produce(
      one,
      (0 until 1000).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(0))))
    val (_, theirQuery) = run(
      spark.readStream
        .format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrapServers)
        .option("subscribe", one)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load(),
      "spark_lag")
    val (_, ourQuery) = run(
      spark.readStream
        .format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrapServers)
        .option("subscribe", one)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "300")
        .load(),
      "sluice_lag")
    val theirs = sparkMetrics(theirQuery)
    assert(
      theirs.map(_("maxOffsetsBehindLatest")) == Seq("700", "400", "100", "0").map(Some(_)),
      theirs)
    assert(sparkMetrics(ourQuery) == theirs)
  }
}

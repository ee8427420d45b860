package sluice.connector.kafka

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Slow, SparkSuiteBase}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * Sluice's raw Kafka source against Spark's own, on the same topic: every column, as multisets.
 * 4 partitions, 100k records with keys, null keys and values, headers, explicit timestamps.
 */
class KafkaDifferentialSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val topic = "differential"
  private val records = 100000
  private val baseTs = 1700000000000L

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    kafka.createTopic(topic, 4)
    kafka.produce(topic, (0 until records).map { i =>
      ProducedRecord.text(
        key = if (i % 7 == 0) None else Some(s"k${i % 1000}"),
        value = if (i % 11 == 0) None else Some(s"""{"i":$i,"s":"välue-$i"}"""),
        partition = Some(i % 4),
        timestamp = Some(baseTs + i * 10L),
        headers = if (i % 3 == 0) Seq("h" -> s"$i", "n" -> null, "h" -> "again") else Nil)
    })
  }

  private def theirs(options: (String, String)*): DataFrame =
    spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic).option("includeHeaders", "true").options(options.toMap).load()

  private def ours(options: (String, String)*): DataFrame =
    spark.readStream.format("sluice").option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic).option("includeHeaders", "true").options(options.toMap).load()

  private def collect(df: DataFrame, name: String): DataFrame = {
    val q = df.writeStream.format("memory").queryName(name).trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString).start()
    awaitEnd(q, timeoutMs = 300000)
    assert(q.exception.isEmpty, q.exception)
    spark.table(name)
  }

  private def assertSameMultiset(expected: DataFrame, actual: DataFrame, rows: Long): Unit = {
    assert(expected.schema == actual.schema)
    assert(expected.count() == rows)
    assert(actual.count() == rows)
    assert(expected.exceptAll(actual).isEmpty, "rows Spark's source read that Sluice did not")
    assert(actual.exceptAll(expected).isEmpty, "rows Sluice read that Spark's source did not")
  }

  test("earliest: identical rows, every column", Slow) {
    assertSameMultiset(collect(theirs("startingOffsets" -> "earliest"), "spark_earliest"),
      collect(ours("startingOffsets" -> "earliest"), "sluice_earliest"), records)
  }

  test("specific offsets per partition: identical rows") {
    val start = s"""{"$topic":{"0":100,"1":-2,"2":24000,"3":25000}}"""
    val expected = collect(theirs("startingOffsets" -> start), "spark_specific")
    assertSameMultiset(expected, collect(ours("startingOffsets" -> start), "sluice_specific"),
      records - 100 - 24000 - 25000)
  }

  test("a start timestamp: identical rows") {
    val ts = (baseTs + 600000L).toString // record 60000 on
    assertSameMultiset(collect(theirs("startingTimestamp" -> ts), "spark_ts"),
      collect(ours("startingTimestamp" -> ts), "sluice_ts"), records - 60000)
  }

  test("bounded ends: identical to Spark's batch read of the same range") {
    val end = s"""{"$topic":{"0":1000,"1":-1,"2":20000,"3":0}}"""
    val expected = spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", topic).option("includeHeaders", "true")
      .option("startingOffsets", "earliest").option("endingOffsets", end).load()
    val bounded = KafkaSource.builder().bootstrapServers(kafka.bootstrapServers).topics(topic)
      .includeHeaders(true).startingOffsets(OffsetsInitializer.earliest())
      .option("endingOffsets", end).build()
    assert(bounded.boundedness == _root_.sluice.api.Boundedness.Bounded)
    val actual = collect(_root_.sluice.Sluice.fromSource(spark, bounded), "sluice_bounded")
    assertSameMultiset(expected, actual, 1000 + 25000 + 20000)
  }
}

package sluice.connector.kafka

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** Compact Kafka rows (forceTimestampSupport=false) against the full rows of the same records. */
class KafkaCompactSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val topic = "compact"

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (0 until 2000).map { i =>
        ProducedRecord.text(
          key = if (i % 5 == 0) None else Some(s"k$i"),
          value = if (i % 7 == 0) None else Some(s"""{"i":$i,"s":"v$i"}"""),
          partition = Some(i % 2))
      })
  }

  private def source(options: (String, String)*): KafkaSource = earliestSource(topic, options: _*)

  private def read(df: DataFrame, table: String): DataFrame = {
    val q = df.writeStream
      .format("memory")
      .queryName(table)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    assert(q.awaitTermination(120000))
    assert(q.exception.isEmpty, q.exception)
    spark.table(table)
  }

  private def assertSameRows(a: DataFrame, b: DataFrame): Unit = {
    assert(a.schema == b.schema)
    assert(a.count() == b.count())
    assert(a.exceptAll(b).isEmpty && b.exceptAll(a).isEmpty)
  }

  private val compact = Map("forceTimestampSupport" -> "false")

  test("raw compact rows hold the value only, the same values as the full rows") {
    val rows = read(Sluice.fromSource(spark, source(), null, null, compact), "compact_value")
    assert(rows.columns.toSeq == Seq("value"))
    assert(rows.count() == 2000)
    assertSameRows(rows, read(Sluice.fromSource(spark, source()), "full_rows").select("value"))
  }

  test("with includeKey, the key and the value, as Spark's source reads them") {
    val rows = read(
      Sluice.fromSource(spark, source("includeKey" -> "true"), null, null, compact),
      "compact_kv")
    assert(rows.columns.toSeq == Seq("key", "value"))
    val theirs = read(
      spark.readStream
        .format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrapServers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load(),
      "spark_rows").select("key", "value")
    assertSameRows(rows, theirs)
  }

  test("parsed compact rows are the data columns without provenance") {
    val parsed = source("format" -> "json", "schema" -> "i INT, s STRING")
    val rows = read(Sluice.fromSource(spark, parsed, null, null, compact), "compact_parsed")
    assert(rows.columns.toSeq == Seq("i", "s"))
    assertSameRows(rows, read(Sluice.fromSource(spark, parsed), "full_parsed").select("i", "s"))
  }

  test("headers are not payload: compact raw rows refuse includeHeaders") {
    val e = intercept[IllegalArgumentException](
      Sluice.fromSource(spark, source("includeHeaders" -> "true"), null, null, compact))
    assert(
      e.getMessage == "KafkaSource: compact rows (forceTimestampSupport=false) hold the value, and the key " +
        "with includeKey=true, never headers; remove includeHeaders or set forceTimestampSupport=true.")
  }
}

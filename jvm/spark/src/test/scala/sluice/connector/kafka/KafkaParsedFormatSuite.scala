package sluice.connector.kafka

import java.nio.charset.StandardCharsets
import java.nio.file.Files

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.SparkSuiteBase
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** Kafka values parsed by the same code as files: same schema, same rows for the same payloads. */
class KafkaParsedFormatSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val payloads = Seq(
    """{"id":1,"name":"ä","tags":["x"],"ts":"2024-01-01T00:00:00Z"}""",
    """{"id":2,"name":null}""",
    """not json""",
    """{"id":"three"}""",
    """{"id":4,"name":"日本","nested":{"a":1}}""")
  private val schema =
    "id BIGINT, name STRING, tags ARRAY<STRING>, ts TIMESTAMP, _corrupt_record STRING"

  private def collect(df: DataFrame, name: String): DataFrame = {
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q, timeoutMs = 60000)
    assert(q.exception.isEmpty, q.exception)
    spark.table(name)
  }

  test(
    "a FileSource and a KafkaSource with the same format and schema give the same schema and data rows") {
    kafka.createTopic("parsed", 1)
    kafka.produce(
      "parsed",
      payloads.map(p => ProducedRecord.text(value = Some(p), partition = Some(0))) :+
        ProducedRecord.text(value = None, partition = Some(0)))
    val dir = tempDir("files")
    Files.write(
      dir.resolve("part.json"),
      payloads.mkString("\n").getBytes(StandardCharsets.UTF_8))

    val fromKafka = collect(
      spark.readStream
        .format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrapServers)
        .option("subscribe", "parsed")
        .option("startingOffsets", "earliest")
        .option("format", "json")
        .option("schema", schema)
        .load(),
      "parsed_kafka")
    val fromFiles = collect(
      spark.readStream
        .format("sluice")
        .option("source", "file")
        .option("path", dir.toString)
        .option("format", "json")
        .option("schema", schema)
        .load(),
      "parsed_files")

    assert(fromKafka.schema == fromFiles.schema)
    assert(
      fromKafka.schema.fieldNames.toSeq.takeRight(3) == Seq("_split", "_position", "_timestamp"))
    val data = fromFiles.schema.fieldNames.filterNot(_.startsWith("_")) :+ "_corrupt_record"
    val kafkaRows = fromKafka.select(data.distinct.map(fromKafka.col): _*)
    val fileRows = fromFiles.select(data.distinct.map(fromFiles.col): _*)
    assert(kafkaRows.count() == payloads.size)
    assert(kafkaRows.exceptAll(fileRows).isEmpty && fileRows.exceptAll(kafkaRows).isEmpty)
    // and both equal Spark's own reader
    val spark_ = spark.read.schema(schema).json(dir.toString)
    assert(spark_.exceptAll(fileRows.select(spark_.columns.map(fileRows.col): _*)).isEmpty)
    assert(
      fromKafka.selectExpr("_split").distinct().collect().map(_.getString(0)).toSeq == Seq(
        "parsed-0"))
    assert(
      fromKafka.selectExpr("_position").collect().map(_.getLong(0)).sorted.toSeq == (0L until 5L))
  }

  test(
    "DROPMALFORMED drops and counts in query progress and scan metrics; option errors name the option") {
    kafka.createTopic("parsed-drop", 1)
    kafka.produce(
      "parsed-drop",
      payloads.map(p => ProducedRecord.text(value = Some(p), partition = Some(0))))
    val df = spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", "parsed-drop")
      .option("startingOffsets", "earliest")
      .option("format", "json")
      .option("schema", "id BIGINT, name STRING")
      .option("mode", "DROPMALFORMED")
      .load()
    val q = df.writeStream
      .format("memory")
      .queryName("parsed_drop")
      .trigger(Trigger.AvailableNow())
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q, timeoutMs = 60000)
    assert(q.exception.isEmpty, q.exception)
    assert(
      spark.table("parsed_drop").selectExpr("id").collect().map(_.getLong(0)).sorted.toSeq == Seq(
        1L,
        2L,
        4L))
    val metrics = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(metrics("malformedRecordsDropped") == "2")
    // and in the scan's SQL metrics (the Spark UI's SQL tab): the batch read all five values
    val scan = sluice.spark.ScanMetrics.ofLastBatch(q)
    assert(scan("recordsRead") == 3 && scan("malformedRecordsDropped") == 2)
    assert(scan("bytesRead") == payloads.map(_.getBytes(StandardCharsets.UTF_8).length).sum)
    assert(scan("alignmentPausedMs") == 0)

    val e = intercept[IllegalArgumentException](
      KafkaSource
        .builder()
        .bootstrapServers("127.0.0.1:1")
        .topics("t")
        .option("schema", "a INT")
        .build())
    assert(
      e.getMessage == "KafkaSource: option 'schema' applies to parsed formats; set 'format' to json, csv or text.")
  }
}

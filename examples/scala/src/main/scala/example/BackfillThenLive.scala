package example

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}
import java.time.{Duration, Instant}
import java.util.{Collections, Properties}

import org.apache.kafka.clients.admin.{Admin, NewTopic}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.serialization.StringSerializer
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.Trigger

import sluice.Sluice
import sluice.connector.file.FileSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.eventtime.WatermarkStrategy
import sluice.hybrid.HybridSource

/**
 * Backfill, then live, in one query: two hours of history in JSON files, then a Kafka topic from
 * where the files end (minus a 5-minute margin), with the files' splits aligned in event time.
 *
 * {{{
 * sbt "run <bootstrap servers> <topic> <work directory>"
 * }}}
 *
 * Writes the files and the topic (created here, 2 partitions) itself, reads them, prints the ids it
 * read as one line `rows: <ids>` and fails unless they are the ones expected.
 */
object BackfillThenLive {
  private val Schema = "id BIGINT, ts TIMESTAMP"
  private val Start = Instant.parse("2026-11-01T00:00:00Z")
  private val MarginMs = Duration.ofMinutes(5).toMillis

  private def at(minute: Int): Instant = Start.plus(Duration.ofMinutes(minute.toLong))
  private def json(id: Int): String = s"""{"id": $id, "ts": "${at(id)}"}"""

  def main(args: Array[String]): Unit = {
    val Array(bootstrap, topic, work) = args
    val history = writeHistory(Paths.get(work, "history"))
    produceLive(bootstrap, topic)

    val spark = SparkSession
      .builder()
      .master("local[2]")
      .appName("backfill-then-live")
      .config("spark.sql.extensions", "sluice.spark.SluiceExtensions")
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.ui.enabled", "false")
      .getOrCreate()

    val files = FileSource
      .builder()
      .path(history.toString)
      .format("json")
      .schema(Schema)
      .timestampColumn("ts")
      .build()
    val live = KafkaSource
      .builder()
      .bootstrapServers(bootstrap)
      .topics(topic)
      .startingOffsets(OffsetsInitializer.earliest())
      .stoppingOffsets(OffsetsInitializer.latest())
      .option("format", "json")
      .option("schema", Schema)
      .build()
    val hybrid = HybridSource
      .builder(files)
      .addSourceStartingAtPreviousEnd(live, marginMs = MarginMs)
      .build()
    // the two files' splits stay within 30 minutes of event time of each other
    val strategy = WatermarkStrategy
      .forMonotonousTimestamps()
      .withWatermarkAlignment("backfill", Duration.ofMinutes(30))

    val query = Sluice
      .fromSource(spark, hybrid, strategy, "backfill", Map("maxRecordsPerTrigger" -> "40"))
      .writeStream
      .format("memory")
      .queryName("rows")
      .option("checkpointLocation", Paths.get(work, "checkpoint").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    query.awaitTermination()

    import spark.implicits._
    val ids = spark.table("rows").select($"id").as[Long].collect().sorted.toSeq
    val paused = query.recentProgress.exists(
      _.sources.exists(_.metrics.getOrDefault("watermark.pausedSplits", "0") != "0"))
    spark.stop()
    println(s"rows: ${ids.mkString(",")}")
    println(s"paused by alignment: $paused")
    // files: ids 0..119; Kafka from the files' last event time (id 119) minus 5 minutes: 114..179
    val expected = ((0 to 119) ++ (114 to 179)).map(_.toLong).sorted
    require(ids == expected, s"expected ids ${expected.mkString(",")}")
  }

  /** Two files of an hour each, a record a minute: ids 0..59, then 60..119. */
  private def writeHistory(dir: Path): Path = {
    Files.createDirectories(dir)
    for ((name, ids) <- Seq("first.json" -> (0 to 59), "second.json" -> (60 to 119)))
      Files.write(dir.resolve(name), ids.map(json).mkString("", "\n", "\n").getBytes(UTF_8))
    dir
  }

  /** Ids 110..179 over 2 partitions, each record's Kafka timestamp its event time. */
  private def produceLive(bootstrap: String, topic: String): Unit = {
    val props = new Properties()
    props.put("bootstrap.servers", bootstrap)
    val admin = Admin.create(props)
    try admin.createTopics(Collections.singleton(new NewTopic(topic, 2, 1.toShort))).all().get()
    finally admin.close()
    val producer = new KafkaProducer(props, new StringSerializer, new StringSerializer)
    try {
      for (id <- 110 to 179)
        producer.send(
          new ProducerRecord[String, String](topic, id % 2, at(id).toEpochMilli, null, json(id)))
      producer.flush()
    } finally producer.close()
  }
}

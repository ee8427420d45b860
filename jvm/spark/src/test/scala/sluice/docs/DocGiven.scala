package sluice.docs

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.time.{Instant, ZoneOffset}

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{PartitionSpec, Schema => IcebergSchema}
import org.apache.iceberg.data.{GenericRecord, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.hadoop.HadoopTables
import org.apache.iceberg.parquet.Parquet
import org.apache.iceberg.types.Types
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types._

import sluice.connector.file.FileSource
import sluice.connector.generator.GeneratorSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{EmbeddedKafka, ProducedRecord}

/**
 * What the docs' Scala snippets read and may be given (a marker's `given name` or `given
 * bound=name` binds the method of that name), as tests/test_doc_snippets.py writes and gives them
 * to the Python snippets: under `work`, the archive's JSON events (id, user, amount, ts), and the
 * topics `events` and `orders` on the test broker with the same six events. Tables are written
 * when a page first names them. The topics keep the pages' names, so no other suite of this test
 * JVM's group may create them (the broker refuses a second `events`: a clash fails loudly).
 */
final class DocGiven(spark: SparkSession, kafka: EmbeddedKafka, work: Path) {
  import DocGiven._

  private val events = (0 until 6).map(i => (i.toLong, s"u${i % 3}", i * 1.5))

  /** Writes the archive and the topics: once per run, before the first page. */
  def write(): this.type = {
    val archive = Files.createDirectories(work.resolve("archive/events"))
    val lines = events.take(3).map { case (id, user, amount) =>
      s"""{"id": $id, "user": "$user", "amount": $amount, "ts": "2023-11-14T22:13:20Z"}"""
    }
    Files.write(archive.resolve("part-0.json"), lines.map(_ + "\n").mkString.getBytes(UTF_8))
    for (topic <- Seq("events", "orders")) {
      kafka.createTopic(topic)
      kafka.produce(
        topic,
        events.zipWithIndex.map { case ((id, user, amount), i) =>
          ProducedRecord.text(
            value = Some(
              s"""{"id": $id, "user": "$user", "amount": $amount, "ts": "2023-11-14T22:13:20Z"}"""),
            timestamp = Some(EventsMs + i))
        })
    }
    this
  }

  /** A generator source of two splits of 50 records (the Python test's `source`). */
  def source: GeneratorSource = GeneratorSource.builder().splits(2).recordsPerSplit(50).build()

  /** The topic `events` from its start to its end now: six records. */
  def bounded_events: KafkaSource = KafkaSource
    .builder()
    .bootstrapServers(kafka.bootstrapServers)
    .topics("events")
    .startingOffsets(OffsetsInitializer.earliest())
    .stoppingOffsets(OffsetsInitializer.latest())
    .build()

  /** The topic `orders` from its start. */
  def kafka_orders: KafkaSource = KafkaSource
    .builder()
    .bootstrapServers(kafka.bootstrapServers)
    .topics("orders")
    .startingOffsets(OffsetsInitializer.earliest())
    .build()

  /** docs/hybrid.md's `history`: the archive's JSON events, timed by `ts`. */
  def history: FileSource = FileSource
    .builder()
    .path(s"$work/archive/events")
    .format("json")
    .schema(HybridSchema)
    .timestampColumn("ts")
    .build()

  /** docs/hybrid.md's `live`: the topic `events` from its start, parsed as `history`'s rows. */
  def live: KafkaSource = KafkaSource
    .builder()
    .bootstrapServers(kafka.bootstrapServers)
    .topics("events")
    .startingOffsets(OffsetsInitializer.earliest())
    .option("format", "json")
    .option("schema", HybridSchema)
    .build()

  /**
   * The events as an Iceberg table (a Hadoop table written by Iceberg's own Parquet writer): its
   * current metadata file, as a catalog names the table.
   */
  lazy val iceberg_events: String = {
    val schema = new IcebergSchema(
      Types.NestedField.optional(1, "id", Types.LongType.get),
      Types.NestedField.optional(2, "user", Types.StringType.get),
      Types.NestedField.optional(3, "amount", Types.DoubleType.get),
      Types.NestedField.optional(4, "ts", Types.TimestampType.withZone()))
    val table = new HadoopTables(new Configuration())
      .create(
        schema,
        PartitionSpec.unpartitioned,
        Map.empty[String, String].asJava,
        s"$work/iceberg/events")
    val writer = Parquet
      .writeData(table.io.newOutputFile(s"${table.location}/data/events.parquet"))
      .forTable(table)
      .withSpec(table.spec)
      .createWriterFunc(GenericParquetWriter.create _)
      .build[Record]()
    try
      events.zipWithIndex.foreach { case ((id, user, amount), i) =>
        val r = GenericRecord.create(schema)
        r.setField("id", id)
        r.setField("user", user)
        r.setField("amount", amount)
        r.setField("ts", Instant.ofEpochMilli(EventsMs + i * 1000L).atOffset(ZoneOffset.UTC))
        writer.write(r)
      }
    finally writer.close()
    table.newAppend().appendFile(writer.toDataFile).commit()
    table.refresh()
    table
      .asInstanceOf[org.apache.iceberg.HasTableOperations]
      .operations
      .current
      .metadataFileLocation
  }

  /**
   * The events as a Delta table: one Parquet file written by Spark, added by version 0 of a log
   * written here (the actions a Delta writer writes): its directory.
   */
  lazy val delta_events: String = {
    val dir = work.resolve("delta/events")
    val schema = StructType(
      Seq(
        StructField("id", LongType),
        StructField("user", StringType),
        StructField("amount", DoubleType),
        StructField("ts", TimestampType)))
    val rows = events.zipWithIndex.map { case ((id, user, amount), i) =>
      Row(id, user, amount, java.sql.Timestamp.from(Instant.ofEpochMilli(EventsMs + i * 1000L)))
    }
    val staged = work.resolve("delta/staged")
    val before = spark.conf.getOption(TimestampType_)
    spark.conf.set(
      TimestampType_,
      "TIMESTAMP_MICROS"
    ) // Delta's timestamps; Spark's default is INT96
    try
      spark.createDataFrame(rows.asJava, schema).coalesce(1).write.parquet(staged.toString)
    finally before.fold(spark.conf.unset(TimestampType_))(spark.conf.set(TimestampType_, _))
    val data = Files.createDirectories(dir)
    val file =
      Files.list(staged).iterator.asScala.find(_.getFileName.toString.endsWith(".parquet")).get
    Files.move(file, data.resolve("part-0.parquet"))
    val log = Files.createDirectories(dir.resolve("_delta_log"))
    val actions = Seq(
      """{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}""",
      s"""{"metaData":{"id":"5b1f0f9e-3c1d-4a7e-9d5a-2f1e6c0b7a10","format":{"provider":"parquet",""" +
        s""""options":{}},"schemaString":${quotedJson(schema.json)},"partitionColumns":[],""" +
        s""""configuration":{},"createdTime":$EventsMs}}""",
      s"""{"add":{"path":"part-0.parquet","partitionValues":{},"size":${Files.size(
          data.resolve("part-0.parquet"))},""" +
        s""""modificationTime":$EventsMs,"dataChange":true}}""")
    Files.write(log.resolve("00000000000000000000.json"), actions.mkString("\n").getBytes(UTF_8))
    dir.toString
  }
}

object DocGiven {

  /** The events' first record time (the Python test's EVENTS_MS). */
  val EventsMs: Long = 1700000000000L

  /** docs/hybrid.md's schema of `history` and `live`. */
  private val HybridSchema = "id BIGINT, user STRING, ts TIMESTAMP"

  private val TimestampType_ = "spark.sql.parquet.outputTimestampType"

  /** `s` as a JSON string literal. */
  private def quotedJson(s: String): String =
    "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
}

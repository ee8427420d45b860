package sluice.docs

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.time.{Instant, ZoneOffset}

import scala.jdk.CollectionConverters._

import io.delta.kernel.types.{DoubleType, LongType, StringType, StructType, TimestampType}
import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{PartitionSpec, Schema => IcebergSchema}
import org.apache.iceberg.data.{GenericRecord, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.hadoop.HadoopTables
import org.apache.iceberg.parquet.Parquet
import org.apache.iceberg.types.Types

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
final class DocGiven(kafka: EmbeddedKafka, work: Path) {
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
   * The events as a Delta table written by Delta Kernel (`KernelDeltaTable`), as the Python test's
   * is by delta-rs: `ts` a timestamp with time zone, in microseconds: its directory.
   */
  lazy val delta_events: String = {
    val dir = work.resolve("delta/events").toString
    val schema = new StructType()
      .add("id", LongType.LONG)
      .add("user", StringType.STRING)
      .add("amount", DoubleType.DOUBLE)
      .add("ts", TimestampType.TIMESTAMP)
    val rows = events.zipWithIndex.map { case ((id, user, amount), i) =>
      Seq(id, user, amount, (EventsMs + i * 1000L) * 1000L)
    }
    KernelDeltaTable.create(dir, schema, rows)
    dir
  }
}

object DocGiven {

  /** The events' first record time (the Python test's EVENTS_MS). */
  val EventsMs: Long = 1700000000000L

  /** docs/hybrid.md's schema of `history` and `live`. */
  private val HybridSchema = "id BIGINT, user STRING, ts TIMESTAMP"
}

package sluice.hybrid

import java.nio.file.{Files, Path}

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.file.parquet.ParquetSource
import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * A hybrid's members read only the columns a query uses and skip what its filters exclude: a
 * Parquet history (3 days) then Kafka, the rows those of the unpushed plan.
 *
 * The proofs: the pushed query declares the history's `big` column, strings in the files, as
 * INT, so reading it fails; and a file that is not Parquet sits in the day the query filters
 * out, so listing it would fail; the query's input rows are those of the days kept.
 */
class HybridPushdownSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val PerDay = 300
  private val Live = 90
  private val topic = "hybrid_pushdown"

  private lazy val table: Path = {
    val dir = tempDir("hybrid-pushdown").resolve("history")
    spark
      .range(0, 3 * PerDay, 1, 1)
      .selectExpr(
        "id",
        "concat('n', id) AS name",
        "repeat(CAST(id AS STRING), 10) AS big",
        s"date_add(DATE'2024-01-01', CAST(id DIV $PerDay AS INT)) AS day")
      .write
      .option("parquet.block.size", "2048")
      .partitionBy("day")
      .parquet(dir.toString)
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (0 until Live).map(i =>
        ProducedRecord.text(
          value = Some(
            s"""{"id": ${10000 + i}, "name": "k$i", "big": $i, "day": "2024-01-0${1 + i % 3}"}"""),
          partition = Some(i % 2))))
    dir
  }

  private def history(bigType: String): ParquetSource =
    ParquetSource
      .builder()
      .path(table.toString)
      .schema(s"id BIGINT, name STRING, big $bigType")
      .build()

  private def live(bigType: String): KafkaSource = KafkaSource
    .builder()
    .bootstrapServers(kafka.bootstrapServers)
    .topics(topic)
    .startingOffsets(OffsetsInitializer.earliest())
    .option("format", "json")
    .option("schema", s"id BIGINT, name STRING, big $bigType, day DATE")
    .build()

  /** Parquet then Kafka from its earliest offsets, both with `big` declared as `bigType`. */
  private def hybrid(bigType: String): HybridSource =
    HybridSource.builder(history(bigType)).addSource(live(bigType)).build()

  test("a Parquet -> Kafka hybrid reads only the columns used and lists only the days kept") {
    // the unpushed plan: every column of every day, then the query's filter and columns
    val whole = runToEnd(Sluice.fromSource(spark, hybrid("STRING"), null, "whole"))
    assert(whole.inputRows == 3 * PerDay + Live)
    val kept = java.sql.Date.valueOf("2024-01-02")
    val expected = whole.rows
      .filter(r => !r.getAs[java.sql.Date]("day").after(kept))
      .map(r => Row(r.getAs[Long]("id"), r.getAs[String]("name")))
    assert(expected.size == 2 * PerDay + 2 * Live / 3)

    // a file that is not Parquet in the day filtered out: opening it would fail the query
    val junk = table.resolve("day=2024-01-03").resolve("junk.parquet")
    Files.write(junk, "not parquet".getBytes("UTF-8"))
    try {
      val pushed = runToEnd(
        Sluice
          .fromSource(spark, hybrid("INT"), null, "pushed")
          .where("day <= DATE'2024-01-02'")
          .select("id", "name"))
      assert(multiset(pushed.rows) == multiset(expected))
      // the history read 2 of its 3 days; Kafka every record (a filter skips nothing there)
      assert(pushed.inputRows == 2 * PerDay + Live)
      assert(
        pushed.scanColumns == Seq(Seq("id", "name", "day", "_split", "_position", "_timestamp")),
        pushed.scanColumns)

      // Kafka started where the history ended: the history is handed no filter (what it skipped
      // would move that start), so it lists the file that is not Parquet, and fails on it
      val startsAtEnd =
        HybridSource
          .builder(history("INT"))
          .addSourceStartingAtPreviousEnd(live("INT"), 0L)
          .build()
      val failure = intercept[Exception](
        runToEnd(
          Sluice
            .fromSource(spark, startsAtEnd, null, "at-end")
            .where("day <= DATE'2024-01-02'")
            .select("id", "name")))
      assert(
        Iterator
          .iterate[Throwable](failure)(_.getCause)
          .takeWhile(_ != null)
          .exists(e => String.valueOf(e.getMessage).contains("junk.parquet")),
        failure)
    } finally Files.delete(junk)
  }

  test(
    "a member whose end decides the next start is not pruned when pruning would keep a record it drops") {
    // CSV under DROPMALFORMED: the last line lacks `note`, so Spark drops it and the history ends
    // at the line before (Jan 4). Parsing only `id` and `ts` would keep it, end the history on
    // Jan 5, start Kafka there and skip the record of Jan 4, noon.
    val day = (d: Int) => java.time.Instant.parse(s"2024-01-0${d}T00:00:00Z").toEpochMilli
    val dir = tempDir("hybrid-malformed")
    Files.write(
      dir.resolve("part-0.csv"),
      "1,2024-01-01T00:00:00Z,a\n2,2024-01-04T00:00:00Z,b\n3,2024-01-05T00:00:00Z\n".getBytes(
        "UTF-8"))
    val liveTopic = "hybrid_pushdown_malformed"
    kafka.createTopic(liveTopic, 1)
    kafka.produce(
      liveTopic,
      Seq(100 -> (day(4) + 12 * 3600 * 1000L), 101 -> day(6)).map { case (id, ts) =>
        ProducedRecord.text(
          value =
            Some(s"""{"id": $id, "ts": "${java.time.Instant.ofEpochMilli(ts)}", "note": "k"}"""),
          timestamp = Some(ts))
      })
    val schema = "id INT, ts TIMESTAMP, note STRING"
    def startsAtEnd(mode: String) = HybridSource
      .builder(
        sluice.connector.file.FileSource
          .builder()
          .path(dir.toString)
          .format("csv")
          .schema(schema)
          .timestampColumn("ts")
          .option("mode", mode)
          .build())
      .addSourceStartingAtPreviousEnd(
        KafkaSource
          .builder()
          .bootstrapServers(kafka.bootstrapServers)
          .topics(liveTopic)
          .option("format", "json")
          .option("schema", schema)
          .build(),
        0L)
      .build()
    val full = startsAtEnd("DROPMALFORMED").schema(sluice.config.RecordLayout.Full)
    // not pruned past the history while it drops records; pruned when it drops none
    assert(
      startsAtEnd("DROPMALFORMED")
        .schemaWithColumns(Set("id"), sluice.config.RecordLayout.Full) ==
        full)
    assert(
      startsAtEnd("PERMISSIVE").schemaWithColumns(Set("id"), sluice.config.RecordLayout.Full) !=
        full)
    val ids = runToEnd(
      Sluice.fromSource(spark, startsAtEnd("DROPMALFORMED"), null, "malformed").select("id")).rows
      .map(_.getInt(0))
    assert(ids.sorted == Seq(1, 2, 100, 101))
  }
}

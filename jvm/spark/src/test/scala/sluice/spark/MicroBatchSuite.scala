package sluice.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.connector.generator.{GeneratorConfig, GeneratorSource}

class MicroBatchSuite extends AnyFunSuite with SparkSuiteBase {

  private def expected(c: GeneratorConfig): Seq[(Long, Int)] =
    for (s <- 0 until c.splits; i <- 0L until c.recordsPerSplit.get) yield (c.recordId(s, i), s)

  private def ids(df: DataFrame): Seq[(Long, Int)] =
    df.collect().toSeq.map(r => (r.getLong(0), r.getInt(1)))

  private def runToMemory(df: DataFrame, table: String, trigger: Trigger): StreamingQuery = {
    val q = df.writeStream
      .format("memory")
      .queryName(table)
      .trigger(trigger)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    awaitEnd(q)
    q
  }

  test("a bounded generator read with AvailableNow yields exactly its records and terminates") {
    val source = GeneratorSource.builder().splits(4).recordsPerSplit(2500).build()
    val q = runToMemory(Sluice.fromSource(spark, source), "gen_all", Trigger.AvailableNow())
    assert(!q.isActive)
    val rows = spark.table("gen_all")
    assert(rows.schema == GeneratorSource.Schema)
    assert(ids(rows.select("id", "split")).sorted == expected(source.config).sorted)
    val first = rows.where("id = 5").collect().head
    assert(
      first.getAs[java.sql.Timestamp]("timestamp").getTime == source.config.eventTimeMs(1, 1))
    assert(first.getAs[String]("payload") == source.config.payload(1, 1))
  }

  test("maxRecordsPerTrigger bounds every batch, and AvailableNow still reads everything") {
    val df = spark.readStream
      .format("sluice")
      .option("source", "generator")
      .option("splits", "4")
      .option("recordsPerSplit", "1000")
      .option("maxRecordsPerTrigger", "700")
      .option("name", "limited")
      .load()
    val q = runToMemory(df, "gen_limited", Trigger.AvailableNow())
    val batches = q.recentProgress.filter(_.numInputRows > 0)
    assert(batches.map(_.numInputRows).sum == 4000)
    assert(batches.forall(_.numInputRows <= 700), batches.map(_.numInputRows).mkString(","))
    assert(batches.length == 6) // ceil(4000 / 700)
    assert(spark.table("gen_limited").count() == 4000)
    val metrics = batches.last.sources.head.metrics.asScala
    assert(metrics("source") == "limited")
    assert(metrics("splits") == "4")
    assert(metrics("recordsRead").toLong >= 4000 - 700)
  }

  test(
    "a batch looked at with isEmpty before it is written counts every record once, not the peek") {
    val source = GeneratorSource.builder().splits(2).recordsPerSplit(500).build()
    val written = new java.util.concurrent.atomic.AtomicLong
    val q = Sluice
      .fromSource(spark, source, null, "peeked")
      .writeStream
      .foreachBatch { (batch: DataFrame, _: Long) =>
        if (!batch.isEmpty)
          written.addAndGet(batch.count()) // isEmpty reads one row of one task and stops
        ()
      }
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty)
    assert(written.get == 1000)
    val metrics = q.recentProgress.filter(_.numInputRows > 0).last.sources.head.metrics.asScala
    assert(
      metrics("recordsRead") == "1000",
      "the peek's one-row report must not stand for the range")
  }

  test("AvailableNow terminates on an unbounded source, reading what existed when it started") {
    val source = GeneratorSource.builder().splits(2).rowsPerSecond(1000).build()
    val q = runToMemory(
      Sluice.fromSource(spark, source, null, "unbounded"),
      "gen_unbounded",
      Trigger.AvailableNow())
    assert(!q.isActive)
    assert(q.exception.isEmpty)
    val perSplit = spark
      .table("gen_unbounded")
      .groupBy("split")
      .count()
      .collect()
      .map(r => r.getInt(0) -> r.getLong(1))
      .toMap
    // every split read a contiguous prefix: ids 0..n-1 of each split
    perSplit.foreach { case (s, n) =>
      val got = spark
        .table("gen_unbounded")
        .where(s"split = $s")
        .select("id")
        .collect()
        .map(_.getLong(0))
        .sorted
      assert(got.toSeq == (0L until n).map(i => i * 2 + s))
    }
  }

  test(
    "a query stopped mid-way and restarted from its checkpoint writes every record exactly once") {
    val source = GeneratorSource.builder().splits(3).recordsPerSplit(3000).build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger, limit: String) =
      spark.readStream
        .format("sluice")
        .options(source.options)
        .option("maxRecordsPerTrigger", limit)
        .load()
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()

    val first = start(Trigger.ProcessingTime(0), "1000")
    try
      eventually("two batches of the first run", first)(
        first.recentProgress.count(_.numInputRows > 0) >= 2)
    finally first.stop()
    // The sink holds exactly the records the offset log planned up to the last batch the sink
    // committed, however far the first run got before stop() landed.
    val committed =
      sluice.Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val reached = sluice.Checkpoints.positions(ckpt, committed)
    val partial = ids(spark.read.parquet(out).select("id", "split"))
    val planned =
      for ((split, position) <- reached.toSeq; i <- 0L until position)
        yield (source.config.recordId(split.toInt, i), split.toInt)
    assert(
      partial.sorted == planned.sorted,
      s"the first run's batches 0 to $committed end at $reached")
    assert(
      partial.size >= 2000,
      s"two batches of 1000 committed, yet the first run wrote ${partial.size} rows")

    // Restart with a different limit: the batch in flight is replayed as planned, then the rest.
    val second = start(Trigger.AvailableNow(), "4000")
    awaitEnd(second)
    assert(second.exception.isEmpty)
    assert(
      ids(spark.read.parquet(out).select("id", "split")).sorted == expected(source.config).sorted)
    val metrics = second.recentProgress.last.sources.head.metrics.asScala
    assert(metrics("recordsRead") == "9000")
  }

  test("a checkpoint of another source type is refused, not restarted from scratch") {
    val ckpt = tempDir("ckpt").toString
    val source = GeneratorSource.builder().splits(1).recordsPerSplit(10).build()
    val q1 = Sluice
      .fromSource(spark, source)
      .writeStream
      .format("noop")
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q1)
    val offsetFile = new java.io.File(ckpt, "offsets/0")
    val text = new String(java.nio.file.Files.readAllBytes(offsetFile.toPath), "UTF-8")
    // the source's offset (the log's third line) as a newer build would write it
    val lines = text.split("\n", -1)
    assert(lines(2).startsWith(s"""{"version":${SluiceOffset.InlineVersion},"""), lines(2))
    lines(2) = lines(2).replaceFirst("\"version\":\\d+,", "\"version\":7,")
    java.nio.file.Files.write(offsetFile.toPath, lines.mkString("\n").getBytes("UTF-8"))
    new java.io.File(ckpt, "commits/0").delete()
    val q2 = Sluice
      .fromSource(spark, source)
      .writeStream
      .format("noop")
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    val e = intercept[Exception](q2.awaitTermination(60000))
    assert(e.getMessage.contains("offset has version 7"), e.getMessage)
  }

  test("reading through format(\"sluice\") validates options when the query is defined") {
    val e = intercept[IllegalArgumentException](
      spark.readStream
        .format("sluice")
        .option("source", "generator")
        .option("splits", "0")
        .load())
    assert(e.getMessage.contains("invalid value '0' for option 'splits'"))
    val unknown = intercept[IllegalArgumentException](
      spark.readStream
        .format("sluice")
        .option("source", "generator")
        .option("rowsPerSecnd", "1")
        .load())
    assert(unknown.getMessage.contains("unknown option 'rowsPerSecnd'"))
  }

  test("rows carry the records' values") {
    val source = GeneratorSource
      .builder()
      .splits(1)
      .recordsPerSplit(3)
      .eventTimeStartMs(0)
      .eventTimeStepMs(1000)
      .build()
    runToMemory(Sluice.fromSource(spark, source), "gen_values", Trigger.AvailableNow())
    val rows = spark.table("gen_values").orderBy("id").collect().toSeq
    assert(
      rows.map(r => (r.getLong(0), r.getInt(1), r.getTimestamp(2).getTime)) ==
        Seq((0L, 0, 0L), (1L, 0, 1000L), (2L, 0, 2000L)))
    assert(rows.head == Row(0L, 0, new java.sql.Timestamp(0), "r0-xxxxxxxxxxxxx"))
  }
}

package sluice.hybrid

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Checkpoints, Sluice, SparkSuiteBase, Sources}
import sluice.api.{Boundedness, RecordsWithSplitIds, SplitRange}
import sluice.connector.generator.GeneratorSource

/** Hybrid switching on the generator: exact output, restarts at every phase, validation, traps. */
class HybridSourceSuite extends AnyFunSuite with SparkSuiteBase {

  import HybridSourceSuite.gen

  private def rows(table: String): Seq[(Long, Long)] =
    spark
      .table(table)
      .selectExpr("id", "CAST(timestamp AS LONG)")
      .collect()
      .map(r => (r.getLong(0), r.getLong(1)))
      .toSeq

  private def expected(sources: (Int, Long)*): Seq[(Long, Long)] = sources.flatMap {
    case (records, start) =>
      val c = gen(records, start).config
      for (s <- 0 until 2; i <- 0L until records)
        yield (c.recordId(s, i), c.eventTimeMs(s, i) / 1000)
  }

  private def runAvailableNow(
      df: DataFrame,
      table: String,
      ckpt: String = tempDir("ckpt").toString,
      limit: Option[Long] = None): StreamingQuery = {
    val q = df.writeStream
      .format("memory")
      .queryName(table)
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    q
  }

  /**
   * The sources whose records each batch of the offset log read: those of the splits whose
   * position the batch moved on (generator splits start at 0).
   */
  private def sourcesReadByBatch(ckpt: String): Seq[(Long, Set[Int])] = {
    val batches = Checkpoints.offsetBatches(ckpt)
    batches.map { b =>
      val before =
        if (b == batches.head) Map.empty[String, Long] else Checkpoints.positions(ckpt, b - 1)
      b -> Checkpoints
        .positions(ckpt, b)
        .collect {
          case (id, position) if position > before.getOrElse(id, 0L) => HybridSplit.parseId(id)._1
        }
        .toSet
    }
  }

  /** The hybrid's state at the end of each batch of the offset log: (active source, switches recorded). */
  private def hybridStates(ckpt: String): Seq[(Int, Int)] =
    Checkpoints.offsetBatches(ckpt).map { b =>
      val c = Checkpoints.offset(ckpt, b).checkpoint
      val state = HybridStateSerializer.deserialize(c.enumeratorVersion, c.enumeratorState)
      (state.activeIndex, state.switches.size)
    }

  test(
    "files-like bounded sources then another: every record once, in source order, switch visible in metrics") {
    val hybrid = HybridSource
      .builder(gen(300, 0L))
      .addSource(gen(200, 10000000L))
      .addSource(gen(100, 20000000L))
      .build()
    val df = Sluice.fromSource(spark, hybrid, null, "chain", Map("maxRecordsPerTrigger" -> "250"))
    val ckpt = tempDir("ckpt").toString
    val q = runAvailableNow(df, "hybrid_chain", ckpt)
    assert(
      rows("hybrid_chain").sorted == expected(
        (300, 0L),
        (200, 10000000L),
        (100, 20000000L)).sorted)
    val batches = q.recentProgress.filter(_.numInputRows > 0)
    // No batch mixes two sources' records (each source is read to its end before the switch), and
    // the sources come in order: checked for every batch, from the ranges the offset log planned.
    val readBy = sourcesReadByBatch(ckpt)
    readBy.foreach { case (b, sources) =>
      assert(sources.size <= 1, s"batch $b read sources $sources: $readBy")
    }
    val dataBatches = readBy.filter(_._2.nonEmpty)
    assert(
      dataBatches.flatMap(_._2) == dataBatches.flatMap(_._2).sorted,
      s"sources out of order: $readBy")
    assert(dataBatches.flatMap(_._2).distinct == Seq(0, 1, 2), readBy)
    // ... and every batch's progress names the source it read as the active one
    assert(
      batches.map(_.batchId).toSeq == dataBatches.map(_._1),
      s"progress ${batches.map(_.batchId).toSeq}; offset log $readBy")
    batches.foreach { p =>
      assert(
        Set(p.sources.head.metrics.asScala("activeSource").toInt) == readBy.toMap.apply(
          p.batchId),
        s"batch ${p.batchId}: progress says source ${p.sources.head.metrics.get("activeSource")}, offset log ${readBy.toMap.apply(p.batchId)}")
    }
    assert(batches.last.sources.head.metrics.asScala("activeSource") == "2")
    val last = batches.last.sources.head.metrics.asScala
    assert(last("recordsPerSource") == "600,400,200")
    assert(last.contains("lastSwitchAtMs"))
  }

  test("an empty first source switches at once") {
    val hybrid = HybridSource.builder(gen(0, 0L)).addSource(gen(50, 5000000L)).build()
    runAvailableNow(Sluice.fromSource(spark, hybrid), "hybrid_empty_first")
    assert(rows("hybrid_empty_first").sorted == expected((50, 5000000L)).sorted)
  }

  test("a factory builds the next source from the previous end state") {
    val hybrid = HybridSource
      .builder(gen(100, 0L))
      .addSource(
        (ctx: SourceSwitchContext) => {
          // start the next generator's event time right after where the previous one ended
          gen(10, ctx.previousMaxEventTime.get + 1000L)
        },
        Boundedness.Bounded)
      .build()
    runAvailableNow(Sluice.fromSource(spark, hybrid), "hybrid_factory")
    val previousMax = gen(100, 0L).config.eventTimeMs(1, 99)
    assert(rows("hybrid_factory").sorted == expected((100, 0L), (10, previousMax + 1000L)).sorted)
  }

  test("restarts before, at and after a switch give exactly-once output") {
    val sources = Seq((400, 0L), (400, 10000000L), (400, 20000000L))
    def hybrid = HybridSource
      .builder(gen(400, 0L))
      .addSource((_: SourceSwitchContext) => gen(400, 10000000L), Boundedness.Bounded)
      .addSource(gen(400, 20000000L))
      .build()
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    // 2400 records at 300 per batch: stop after 1, 3 (the first switch), 5 and then finish
    Seq(1, 3, 5).foreach { stopAfter =>
      val q = Sluice
        .fromSource(spark, hybrid, null, "restarts", Map("maxRecordsPerTrigger" -> "300"))
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(Trigger.ProcessingTime(0))
        .start()
      try
        eventually(s"batch $stopAfter", q)(
          q.recentProgress.exists(_.numInputRows > 0) && q.lastProgress.batchId >= stopAfter)
      finally q.stop()
    }
    val last = Sluice
      .fromSource(spark, hybrid, null, "restarts", Map("maxRecordsPerTrigger" -> "300"))
      .writeStream
      .format("parquet")
      .option("path", out)
      .option("checkpointLocation", ckpt)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(last)
    assert(last.exception.isEmpty, last.exception)
    val got = spark.read
      .parquet(out)
      .selectExpr("id", "CAST(timestamp AS LONG)")
      .collect()
      .map(r => (r.getLong(0), r.getLong(1)))
      .toSeq
    assert(got.sorted == expected(sources: _*).sorted)
  }

  test("a factory that throws fails the query, records no switch, and a fixed restart resumes") {
    val ckpt = tempDir("ckpt").toString
    val out = tempDir("sink").toString
    def query(factory: SourceSwitchContext => sluice.api.Source[_, _]) =
      Sluice
        .fromSource(
          spark,
          HybridSource.builder(gen(100, 0L)).addSource(factory, Boundedness.Bounded).build())
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(Trigger.AvailableNow())
        .start()
    val failing = query(_ => throw new IllegalStateException("the archive index is unreachable"))
    val e = intercept[Exception](failing.awaitTermination(60000))
    assert(e.getMessage.contains("the archive index is unreachable"))
    // no switch recorded: the offset log still has the first source active, and no switch in it
    assert(
      hybridStates(ckpt).nonEmpty && hybridStates(ckpt).forall(_ == (0, 0)),
      hybridStates(ckpt))
    val fixed = query(_ => gen(20, 5000000L))
    awaitEnd(fixed)
    assert(fixed.exception.isEmpty, fixed.exception)
    assert(hybridStates(ckpt).last == (1, 1), "the fixed restart records its one switch")
    val got = spark.read
      .parquet(out)
      .selectExpr("id", "CAST(timestamp AS LONG)")
      .collect()
      .map(r => (r.getLong(0), r.getLong(1)))
      .toSeq
    assert(got.sorted == expected((100, 0L), (20, 5000000L)).sorted)
  }

  test(
    "the next source's no-more-splits does not end the hybrid early; an unbounded last source keeps going") {
    val unbounded = GeneratorSource
      .builder()
      .splits(2)
      .rowsPerSecond(1000)
      .eventTimeStartMs(9000000000L)
      .build()
    val hybrid = HybridSource.builder(gen(20, 0L)).addSource(unbounded).build()
    assert(hybrid.boundedness == Boundedness.ContinuousUnbounded)
    val q = Sluice
      .fromSource(spark, hybrid)
      .writeStream
      .format("memory")
      .queryName("hybrid_unbounded")
      .start()
    try {
      eventually("100 rows of the unbounded last source", q)(
        rows("hybrid_unbounded").count(_._2 >= 9000000L) >= 100)
      assert(rows("hybrid_unbounded").count(_._2 < 9000000L) == 40)
      assert(rows("hybrid_unbounded").count(_._2 >= 9000000L) >= 100)
      assert(q.isActive)
    } finally q.stop()
  }

  test("validation: bounded sources first, one schema, at least one source") {
    val unbounded = GeneratorSource.builder().rowsPerSecond(1).build()
    val e1 = intercept[IllegalArgumentException](
      HybridSource.builder(unbounded).addSource(gen(1, 0L)).build())
    assert(
      e1.getMessage == "HybridSource: source 0 (generator) is unbounded, but every source except the last " +
        "must be bounded: give it stopping offsets, or make it the last source.")
    val other = new sluice.connector.kafka.KafkaSourceTestSupport().boundedKafka
    val e2 = intercept[IllegalArgumentException](
      HybridSource.builder(gen(1, 0L)).addSource(other).build())
    assert(
      e2.getMessage.startsWith(
        "HybridSource: all sources must produce the same schema, but source 1 (kafka)"))
    assert(e2.getMessage.contains("only in source 0: [id BIGINT, split INT, payload STRING]"))
    val e3 = intercept[IllegalArgumentException](
      Sources.fromOptions(Map("source" -> "hybrid", "hybrid.sources" -> "0")))
    assert(
      e3.getMessage == "HybridSource: invalid value '0' for option 'hybrid.sources'; allowed: an integer >= 1.")
  }

  test("a hybrid survives the options round trip, factories included") {
    val hybrid = HybridSource
      .builder(gen(5, 0L))
      .addSource((_: SourceSwitchContext) => gen(5, 1L), Boundedness.Bounded)
      .build()
    val again = Sources.fromOptions(hybrid.options).asInstanceOf[HybridSource]
    assert(again.entries.size == 2)
    assert(again.entries(1).isInstanceOf[HybridSource.FromFactory])
  }

  test("pause and resume reach the active source's reader (FLINK-37308)") {
    val source = HybridSource.builder(gen(10, 0L)).build()
    val enumerator = source.createEnumerator()
    val splits = enumerator.discoverSplits()
    val reader = source.createReader(sluice.api.ReaderContext())
    reader.handleSplitsChanges(splits.map(s => SplitRange(s, 0L, 10L)))
    reader.pauseOrResumeSplits(Seq(splits.head), Nil)
    def readIds(records: RecordsWithSplitIds): Set[String] = {
      val ids = Iterator
        .continually(records.nextSplit())
        .takeWhile(_ != null)
        .filter(_ => records.nextRecord())
        .toSet
      ids
    }
    assert(readIds(reader.fetch()) == Set(splits(1).splitId))
    reader.pauseOrResumeSplits(Nil, Seq(splits.head))
    reader.pauseOrResumeSplits(Seq(splits(1)), Nil)
    assert(readIds(reader.fetch()) == Set(splits.head.splitId))
  }
}

/** Sources for the tests, outside the suite so that factories do not capture it (they are serialized). */
object HybridSourceSuite {

  /** Bounded generators told apart by event time. */
  def gen(records: Int, eventTimeStart: Long): GeneratorSource =
    GeneratorSource
      .builder()
      .splits(2)
      .recordsPerSplit(records)
      .eventTimeStartMs(eventTimeStart)
      .build()
}

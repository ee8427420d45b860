package sluice.hybrid

import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Dataset, Row}
import org.apache.spark.sql.streaming.{StreamingQueryException, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.api.Boundedness

/**
 * A hybrid's factories live as long as someone needs them: its definition until released, each
 * query reading it while it runs. Restarts never grow the registry, and releasing never breaks a
 * running query.
 */
class FactoryLifecycleSuite extends AnyFunSuite with SparkSuiteBase {

  import HybridSourceSuite.gen

  private def factoryHybrid(): HybridSource = HybridSource
    .builder(gen(20, 0L))
    .addSource((_: SourceSwitchContext) => gen(10, 5000000L), Boundedness.Bounded)
    .build()

  /** Runs `df` to its end in a new checkpoint; the number of rows it read. */
  private def readAll(df: DataFrame): Long = {
    val q = df.writeStream
      .format("noop")
      .option("checkpointLocation", tempDir("factories").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    try {
      awaitEnd(q)
      assert(q.exception.isEmpty, q.exception)
      q.recentProgress.map(_.numInputRows).sum
    } finally q.stop()
  }

  test(
    "a factory hybrid restarted 20 times holds one entry; releasing it leaves the registry as it was") {
    val before = SourceFactories.size
    val hybrid = factoryHybrid()
    val df = Sluice.fromSource(spark, hybrid)
    assert(SourceFactories.size == before + 1)
    (1 to 20).foreach { i =>
      assert(readAll(df) == 60L, s"run $i") // 2 splits x (20 + 10 built at the switch)
      assert(SourceFactories.size == before + 1, s"after run $i")
    }
    hybrid.release()
    assert(SourceFactories.size == before)
  }

  test("a query started from a released definition fails, saying to define it again") {
    val hybrid = factoryHybrid()
    val df = Sluice.fromSource(spark, hybrid)
    hybrid.release()
    val before = SourceFactories.size
    val q = df.writeStream
      .format("noop")
      .option("checkpointLocation", tempDir("released").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    try {
      val e = intercept[StreamingQueryException](awaitEnd(q))
      assert(e.getMessage.contains("define the query again in this application"), e.getMessage)
      assert(
        e.getMessage.contains("a released HybridSource gives its factories up"),
        e.getMessage)
    } finally q.stop()
    assert(SourceFactories.size == before)
  }

  test(
    "releasing a definition while its query runs: the switch still finds the factory, rows exact") {
    val before = SourceFactories.size
    val hybrid = factoryHybrid()
    val (running, released) = (new CountDownLatch(1), new CountDownLatch(1))
    val seen = new ConcurrentLinkedQueue[Long]()
    // the first batch (the stream built, its factory pinned) waits for the release, so the switch
    // (a later batch: 10 rows a batch) comes after it
    val q = Sluice
      .fromSource(spark, hybrid, null, null, Map("maxRecordsPerTrigger" -> "10"))
      .writeStream
      .option("checkpointLocation", tempDir("release-running").toString)
      .foreachBatch { (batch: Dataset[Row], _: Long) =>
        running.countDown()
        assert(released.await(SparkSuiteBase.WaitMs, TimeUnit.MILLISECONDS))
        batch.select("id").collect().foreach(r => seen.add(r.getLong(0)))
      }
      .start()
    try {
      assert(running.await(SparkSuiteBase.WaitMs, TimeUnit.MILLISECONDS), "no first batch")
      hybrid.release()
      assert(SourceFactories.size == before + 1, "the running query lost its factory")
      released.countDown()
      eventually("every row of both sources", q)(seen.size >= 60)
      assert(q.exception.isEmpty, q.exception)
    } finally q.stop()
    val expected = Seq((20, 0L), (10, 5000000L)).flatMap { case (records, start) =>
      val c = gen(records, start).config
      for (s <- 0 until 2; i <- 0L until records) yield c.recordId(s, i)
    }
    assert(seen.asScala.toSeq.sorted == expected.sorted)
    assert(SourceFactories.size == before, "the stopped query kept the released factory")
  }
}

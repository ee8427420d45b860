package sluice.spark

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{CheckoutFiles, Sluice, SparkSuiteBase}
import sluice.api.SourceMetric
import sluice.connector.generator.GeneratorSource
import sluice.hybrid.HybridSource

class MetricDeclarationsSuite extends AnyFunSuite with SparkSuiteBase {

  test("python/sluice/_metrics.json holds exactly the declared metrics") {
    val path = Some(CheckoutFiles("python", "sluice", "_metrics.json"))
      .filter(Files.exists(_))
      .getOrElse(fail("python/sluice/_metrics.json is missing: generate it with `make docs`"))
    assert(
      new String(Files.readAllBytes(path), "UTF-8") == MetricDeclarations.json,
      "python/sluice/_metrics.json is out of date: regenerate it with `make docs`")
  }

  private def gen(records: Int, start: Long) =
    GeneratorSource.builder().splits(2).recordsPerSplit(records).eventTimeStartMs(start).build()

  /** Every metric of every progress of a query reading `source` with `options`, by key. */
  private def reported(
      table: String,
      source: sluice.api.Source[_, _],
      options: Map[String, String]): Seq[(String, String)] = {
    val q = Sluice
      .fromSource(spark, source, null, table, options)
      .writeStream
      .format("memory")
      .queryName(table)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    assert(q.exception.isEmpty, q.exception)
    q.recentProgress.toSeq.flatMap(_.sources.toSeq.flatMap(_.metrics.asScala.toSeq))
  }

  test("what queries report is declared, and reads as its declared type") {
    val hybrid = HybridSource.builder(gen(300, 0L)).addSource(gen(200, 10000000L)).build()
    val metrics = reported(
      "metrics_hybrid",
      hybrid,
      Map(
        "maxRecordsPerTrigger" -> "150",
        "watermark.kind" -> "monotonous",
        "watermark.alignment.group" -> "metrics",
        "watermark.alignment.maxDriftMs" -> "100000",
        "latencyTrackingInterval" -> "1")) ++
      reported(
        "metrics_compact",
        gen(50, 0L),
        Map("forceTimestampSupport" -> "false", "maxRecordsPerTrigger" -> "40"))
    val keys = metrics.map(_._1).toSet
    // the query reached what the list must cover: splits, event time, alignment, a hybrid, compact rows
    Seq(
      "splitProgress",
      "watermark.splits",
      "alignment.maxAllowedWatermarkMs",
      "recordsPerSource")
      .foreach(k => assert(keys.contains(k), s"no progress reported $k: $keys"))
    assert(metrics.contains("recordLayout" -> "compact"))

    val declared = MetricDeclarations.byName
    val undeclared = keys.filterNot(declared.contains)
    assert(undeclared.isEmpty, s"reported but not declared in MetricDeclarations: $undeclared")
    val json = new ObjectMapper()
    metrics.foreach { case (key, value) =>
      val metric = declared(key)
      assert(SourceMetric.reads(metric.kind, value), s"$key = '$value' is no ${metric.kind.name}")
      if (metric.kind == SourceMetric.JsonList) {
        val fields = json.readTree(value).elements().asScala.flatMap(_.fieldNames().asScala).toSet
        val known = metric.fields.map(_._1).toSet
        assert(fields.subsetOf(known), s"$key has undeclared fields ${fields -- known}")
      }
    }
  }
}

package sluice.connector.kafka

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.eventtime.WatermarkStrategy
import sluice.spark.RealTimeSink
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/**
 * Kafka builds only the columns a query uses, without asking for compact rows: the scan's rows
 * hold those columns, the rows are the unpruned plan's (as multisets), and the offsets and the
 * record times read (`maxEventTimeMs`) are the unpruned query's, in micro-batches, batch reads,
 * real-time mode and continuous processing.
 */
class KafkaPruningSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val topic = "pruning"
  private val Records = 400
  private val Base = 1767225600000L

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (0 until Records).map { i =>
        ProducedRecord.text(
          key = if (i % 5 == 0) None else Some(s"k$i"),
          value = Some(s"""{"i":$i,"s":"v$i"}"""),
          partition = Some(i % 2),
          timestamp = Some(Base + i * 1000L))
      })
  }

  private def source(options: (String, String)*): KafkaSource = earliestSource(topic, options: _*)

  /** Rows with binary values as text, so that equal bytes make equal rows. */
  private def plain(rows: Seq[Row]): Map[Row, Int] = multiset(rows.map(r =>
    Row(r.toSeq.map {
      case b: Array[Byte] => new String(b, java.nio.charset.StandardCharsets.UTF_8)
      case other => other
    }: _*)))

  private def stream(s: KafkaSource = source(), name: String = "k"): DataFrame =
    Sluice.fromSource(spark, s, null, name)

  /** The unpruned run: every column built; what a pruned query must give, narrowed after it. */
  private lazy val unpruned: SparkSuiteBase.Run = runToEnd(stream())

  private def unprunedAs(columns: String*): Seq[Row] =
    unpruned.rows.map(r => Row(columns.map(c => r.get(r.fieldIndex(c))): _*))

  private def maxEventTime(q: StreamingQuery): Option[String] =
    q.recentProgress.flatMap(_.sources.head.metrics.asScala.get("maxEventTimeMs")).lastOption

  test("micro-batches build only the columns used; rows, offsets and record times as unpruned") {
    assert(unpruned.rows.size == Records && unpruned.scanColumns.head.size == 7)
    Seq(Seq("value"), Seq("key", "value"), Seq("topic", "partition", "offset", "timestamp"))
      .foreach { columns =>
        val run = runToEnd(stream().select(columns.head, columns.tail: _*))
        assert(run.scanColumns == Seq(columns), columns)
        assert(plain(run.rows) == plain(unprunedAs(columns: _*)), columns)
        assert(run.endOffset == unpruned.endOffset, columns)
        assert(run.inputRows == Records)
        assert(maxEventTime(run.query) == maxEventTime(unpruned.query), columns)
      }
    assert(maxEventTime(unpruned.query).contains((Base + (Records - 1) * 1000L).toString))

    // a filter's columns are used too; an aggregate keeps only what it groups and counts by
    val filtered = runToEnd(stream().where("partition = 1").select("value"))
    assert(filtered.scanColumns == Seq(Seq("value", "partition")))
    assert(
      plain(filtered.rows) ==
        plain(unprunedAs("value", "partition").filter(_.getInt(1) == 1).map(r => Row(r(0)))))
  }

  test("a query using no column builds rows of none; the compact option still prunes") {
    val counted = runToEnd(stream().groupBy().count(), outputMode = "complete")
    assert(counted.scanColumns == Seq(Nil))
    assert(counted.rows == Seq(Row(Records.toLong)))

    val compact = runToEnd(
      Sluice
        .fromSource(
          spark,
          source("includeKey" -> "true"),
          null,
          "c",
          Map("forceTimestampSupport" -> "false"))
        .select("value"))
    assert(compact.scanColumns == Seq(Seq("value")))
    assert(plain(compact.rows) == plain(unprunedAs("value")))
    assert(maxEventTime(compact.query).isEmpty, "compact rows read no record time")
  }

  test("parsed values parse only the fields used, without the provenance columns") {
    val parsed = source("format" -> "json", "schema" -> "i INT, s STRING")
    val all = runToEnd(stream(parsed)).rows.map(r => Row(r.getAs[Int]("i")))
    val run = runToEnd(stream(parsed).select("i"))
    assert(run.scanColumns == Seq(Seq("i")))
    assert(all.size == Records && plain(run.rows) == plain(all))
    val withPosition = runToEnd(stream(parsed).select("s", "_position"))
    assert(withPosition.scanColumns == Seq(Seq("s", "_split", "_position", "_timestamp")))
    assert(withPosition.rows.map(_.getLong(1)).toSet == (0 until Records / 2).map(_.toLong).toSet)
  }

  test("the event-time column of a watermark strategy is always built") {
    val strategy =
      WatermarkStrategy.forBoundedOutOfOrderness(java.time.Duration.ofSeconds(5))
    val run =
      runToEnd(Sluice.fromSource(spark, source(), strategy, "wm").select("value", "event_time"))
    assert(run.scanColumns == Seq(Seq("value", "event_time")))
    assert(
      plain(run.rows) == plain(unprunedAs("value", "timestamp")),
      "event_time is the record's timestamp")

    val byColumn = strategy.withTimestampColumn("timestamp")
    val columnRun =
      runToEnd(Sluice.fromSource(spark, source(), byColumn, "wmc").select("key", "event_time"))
    assert(columnRun.scanColumns == Seq(Seq("key", "timestamp", "event_time")))
    assert(plain(columnRun.rows) == plain(unprunedAs("key", "timestamp")))
  }

  test("a batch read (spark.read) builds only its columns") {
    val bounded = source("endingOffsets" -> "latest")
    val read = Sluice.read(spark, bounded, null, "batch").select("offset", "value")
    val scans = read.queryExecution.executedPlan.collect {
      case s: org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanExecBase =>
        s.scan.readSchema().fieldNames.toSeq
    }
    assert(scans == Seq(Seq("value", "offset")))
    assert(plain(read.collect().toSeq) == plain(unprunedAs("offset", "value")))
    assert(Sluice.read(spark, bounded, null, "count").count() == Records)
  }

  test("real-time mode and continuous processing build only the columns used") {
    Seq(
      "kafka-pruning-rt" -> Trigger.RealTime("1 second"),
      "kafka-pruning-cont" -> Trigger.Continuous("1 second")).foreach { case (sink, trigger) =>
      val q = startOpen(stream(name = sink).select("offset", "value"), sink, trigger)
      val got =
        try RealTimeSink.await(sink, s"the $Records records ($sink)", q)(plain(_).size >= Records)
        finally q.stop()
      val scans = SparkSuiteBase.scanColumns(q)
      assert(scans == Seq(Seq("value", "offset")), sink)
      // continuous processing reads at least once (an epoch replayed): records are unique by offset and value
      assert(plain(got).keySet == plain(unprunedAs("offset", "value")).keySet, sink)
    }
  }
}

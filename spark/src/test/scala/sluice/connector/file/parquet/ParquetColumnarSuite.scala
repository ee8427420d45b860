package sluice.connector.file.parquet

import java.io.FileNotFoundException
import java.nio.file.{Files, Path}

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.ColumnarToRowExec
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.alignment.AlignedStreamSuite.splitStates
import sluice.api.{ColumnarFetch, ReaderContext, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.file.FileReader.{ChangedFilesSkipped, MissingFilesSkipped}
import sluice.connector.format.Provenance
import sluice.eventtime.WatermarkStrategy

/**
 * Whole row groups reach Spark as the vectorized reader's column batches: the same rows,
 * provenance, event times and reports as rows give (the row path is what Spark's reader gives
 * with `spark.sql.parquet.enableVectorizedReader=false`, or for ranges cut inside a row group).
 */
class ParquetColumnarSuite extends AnyFunSuite with SparkSuiteBase {
  import ParquetSourceSuite.BaseMs

  /** 2000 rows in 4 files under `region=` directories, several row groups each, nulls and nested columns. */
  private lazy val table: Path = {
    val dir = tempDir("columnar").resolve("table")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")(spark.range(0, 2000, 1, 2).selectExpr(
      "id",
      "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('name-', id) END AS name",
      "CAST(id * 1.25 AS DECIMAL(12, 2)) AS amount",
      s"CASE WHEN id % 11 = 0 THEN NULL ELSE timestamp_millis($BaseMs + id * 1000 + id % 3) END AS ts",
      "named_struct('a', id % 3, 'b', CASE WHEN id % 5 = 0 THEN NULL ELSE array(id, id + 1) END) AS nested",
      "CAST(id % 2 AS INT) AS region")
      .write.option("parquet.block.size", "4096").partitionBy("region").parquet(dir.toString))
    dir
  }

  private var queries = 0

  /** Every row (with provenance) of an AvailableNow run, and whether its last batch was read as batches. */
  private def run(df: DataFrame): (Seq[Row], Boolean, StreamingQuery) = {
    queries += 1
    val name = s"columnar_$queries"
    val q = df.writeStream.format("memory").queryName(name).option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow()).start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    val columnar = q.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper].streamingQuery
      .lastExecution.executedPlan.exists(_.isInstanceOf[ColumnarToRowExec])
    (spark.table(name).collect().toSeq, columnar, q)
  }

  private def source(): ParquetSource = ParquetSource.builder().path(table.toString).build()

  test("whole row groups are read as column batches: the rows, _split, _position and _timestamp of the row path") {
    val (batches, columnar, _) = run(Sluice.fromSource(spark, source(), null, "batches"))
    assert(columnar, "the scan did not read column batches")
    val (rows, rowPath, _) = withConf("spark.sql.parquet.enableVectorizedReader", "false") {
      run(Sluice.fromSource(spark, source(), null, "rows"))
    }
    assert(!rowPath)
    assert(batches.size == 2000)
    assert(multiset(batches) == multiset(rows))
    // and the data is spark.read.parquet's
    val expected = spark.read.parquet(table.toString).collect().toSeq
    assert(multiset(batches.map(r => Row(r.toSeq.dropRight(3): _*))) == multiset(expected))

    // compact rows and a batch read (spark.read) take batches too
    val (compact, compactColumnar, _) = run(Sluice.fromSource(spark, source(), null, "compact",
      Map("forceTimestampSupport" -> "false")))
    assert(compactColumnar && multiset(compact) == multiset(expected))
    val read = Sluice.read(spark, source(), null, "batch")
    assert(read.queryExecution.executedPlan.exists(_.isInstanceOf[ColumnarToRowExec]))
    assert(multiset(read.collect().toSeq) == multiset(rows))
  }

  test("under a watermark strategy the event-time column, each split's watermark and the query's are the row path's") {
    def withStrategy(name: String) = {
      val strategy = WatermarkStrategy.forBoundedOutOfOrderness(java.time.Duration.ofSeconds(5))
        .withTimestampColumn("ts")
      val df = Sluice.fromSource(spark, source(), strategy, name)
      run(df.withWatermark("event_time", "1 minute").select("id", "ts", "event_time"))
    }
    val (batches, columnar, q1) = withStrategy("wm_batches")
    val (rows, rowPath, q2) = withConf("spark.sql.parquet.enableVectorizedReader", "false")(withStrategy("wm_rows"))
    assert(columnar && !rowPath)
    assert(multiset(batches) == multiset(rows))
    // event_time is ts truncated to the millisecond, null where ts is
    assert(batches.forall(r => r.isNullAt(1) == r.isNullAt(2)))
    assert(batches.exists(r => !r.isNullAt(1) && r.getTimestamp(1).getTime % 1000 != 0))
    def states(q: StreamingQuery) = q.recentProgress.filter(_.numInputRows > 0).flatMap(p => splitStates(p))
      .map(s => s.split -> s.watermark).toMap
    assert(states(q1).nonEmpty && states(q1) == states(q2))
    assert(q1.lastProgress.eventTime.get("watermark") == q2.lastProgress.eventTime.get("watermark"))
  }

  test("ranges cut inside row groups (a read limit) are read as batches too, every row once") {
    val s = source()
    val split = s.createEnumerator().discoverSplits().head
    assert(s.readsColumnar(Seq(SplitRange(split, split.firstRow + 1, split.firstRow + 2)), RecordLayout.Full))
    withConf("spark.sql.parquet.enableVectorizedReader", "false") {
      assert(!source().readsColumnar(Seq(SplitRange(split, split.firstRow, split.firstRow + split.rowCount)),
        RecordLayout.Full))
    }
    // batches of 150 records end inside row groups, and the next batch starts there
    val (limited, columnar, q) = run(Sluice.fromSource(spark, s, null, "limited", Map("maxRecordsPerTrigger" -> "150")))
    assert(columnar && q.recentProgress.count(_.numInputRows > 0) > 5)
    assert(q.recentProgress.filter(_.numInputRows > 0).dropRight(1).forall(_.numInputRows == 150))
    assert(multiset(limited) == multiset(run(Sluice.fromSource(spark, s, null, "unlimited"))._1))
  }

  test("the batch reader starts and ends a range inside a row group: the rows the row reader gives there") {
    // batches of 16 rows, so a range starts inside a later batch of its row group
    val s = withConf("spark.sql.parquet.columnarReaderBatchSize", "16")(source())
    val split = s.createEnumerator().discoverSplits().filter(_.rowCount > 60).head
    val ranges = Seq(SplitRange(split, split.firstRow + 37, split.firstRow + split.rowCount - 5))
    val columnar = ArrayBuffer[(Long, Long, String)]()
    val reader = s.createColumnarReader(ReaderContext())
    reader.handleSplitsChanges(ranges)
    try {
      var finished = false
      while (!finished) {
        val f = reader.fetch()
        finished = f.finishedSplits.nonEmpty
        Option(f.batch).foreach { b =>
          (0 until b.numRows()).foreach { i =>
            columnar += ((b.column(0).getLong(i), b.column(b.numCols() - 2).getLong(i),
              if (b.column(1).isNullAt(i)) null else b.column(1).getUTF8String(i).toString))
          }
          assert(f.position == columnar.last._2 + 1)
          // a struct field read through the shifted view
          if (b.numRows() > 0) assert(b.column(4).getStruct(0).getLong(0) == columnar(columnar.size - b.numRows())._1 % 3)
        }
      }
    } finally reader.close()
    val rows = ArrayBuffer[(Long, Long, String)]()
    val rowReader = s.createReader(ReaderContext())
    rowReader.handleSplitsChanges(ranges)
    try {
      var finished = false
      while (!finished) {
        val f = rowReader.fetch()
        finished = f.finishedSplits.nonEmpty
        while (f.nextSplit() != null) while (f.nextRecord()) {
          val r = f.row
          rows += ((r.getLong(0), r.getLong(r.numFields - 2), if (r.isNullAt(1)) null else r.getUTF8String(1).toString))
        }
      }
    } finally rowReader.close()
    assert(columnar.map(_._2) == (split.firstRow + 37 until split.firstRow + split.rowCount - 5))
    assert(columnar == rows)
  }

  /** Reads `ranges` with the source's batch reader: per fetch, the split, the row indexes and the finished splits. */
  private def readBatches(s: ParquetSource, ranges: Seq[SplitRange[RowGroupSplit]], context: ReaderContext)(
      between: () => Unit = () => ()): Seq[(String, Seq[Long], Set[String])] = {
    val reader = s.createColumnarReader(context)
    reader.handleSplitsChanges(ranges)
    val fetches = ArrayBuffer[(String, Seq[Long], Set[String])]()
    var finished = Set.empty[String]
    try while (finished.size < ranges.size) {
      val f: ColumnarFetch = reader.fetch()
      finished ++= f.finishedSplits
      val positions = Option(f.batch).toSeq.flatMap { b =>
        val position = b.column(b.numCols() - 2) // _position
        (0 until b.numRows()).map(position.getLong)
      }
      if (f.batch != null) assert(f.position == positions.last + 1)
      fetches += ((f.splitId, positions, f.finishedSplits))
      between()
    } finally reader.close()
    fetches.toSeq
  }

  test("the batch reader: every row index of its ranges once, each range finished once, after its last batch") {
    val s = source()
    val splits = s.createEnumerator().discoverSplits().take(3)
    val ranges = splits.map(split => SplitRange(split, split.firstRow, split.firstRow + split.rowCount))
    val fetches = readBatches(s, ranges, ReaderContext())()
    splits.foreach { split =>
      val read = fetches.filter(_._1 == split.splitId).flatMap(_._2)
      assert(read == (split.firstRow until split.firstRow + split.rowCount))
      assert(fetches.count(_._3.contains(split.splitId)) == 1)
      // finished in the fetch after its last batch: that batch's vectors stay valid until then
      val last = fetches.lastIndexWhere(_._1 == split.splitId)
      assert(fetches(last + 1)._3.contains(split.splitId))
    }
    // the record time of a row is its timestamp column's, in ms
    val timed = ParquetSource.builder().path(table.toString).timestampColumn("ts").build()
    val reader = timed.createColumnarReader(ReaderContext())
    reader.handleSplitsChanges(ranges.take(1))
    try {
      val f = reader.fetch()
      val ids = f.batch.column(0)
      val ts = f.batch.column(3)
      (0 until f.batch.numRows()).foreach { i =>
        val expected = if (ts.isNullAt(i)) RecordsWithSplitIds.NoTimestamp else Math.floorDiv(ts.getLong(i), 1000L)
        assert(f.recordTime(i) == expected, s"row id ${ids.getLong(i)}")
      }
      assert((0 until f.batch.numRows()).exists(i => f.recordTime(i) == RecordsWithSplitIds.NoTimestamp))
    } finally reader.close()
  }

  test("the batch reader skips a file deleted or changed after listing only when told, and counts it") {
    def copyOf(name: String) = {
      val dir = tempDir(name)
      val file = Files.list(table.resolve("region=0")).filter(_.toString.endsWith(".parquet")).findFirst().get
      Files.copy(file, dir.resolve("part.parquet"))
      dir
    }
    val gone = copyOf("gone")
    val strict = ParquetSource.builder().path(gone.toString).build()
    val goneSplits = strict.createEnumerator().discoverSplits()
    Files.delete(gone.resolve("part.parquet"))
    val e = intercept[FileNotFoundException](readBatches(strict, goneSplits.map(s => SplitRange(s, s.firstRow,
      s.firstRow + s.rowCount)), ReaderContext())())
    assert(e.getMessage.contains("was listed but no longer exists. Set option 'ignoreMissingFiles'"), e.getMessage)

    val gone2 = copyOf("gone2")
    val lenient = ParquetSource.builder().path(gone2.toString).ignoreMissingFiles(true).build()
    val splits = lenient.createEnumerator().discoverSplits()
    Files.delete(gone2.resolve("part.parquet"))
    val context = ReaderContext()
    val fetches = readBatches(lenient, splits.map(s => SplitRange(s, s.firstRow, s.firstRow + s.rowCount)), context)()
    assert(fetches.forall(_._2.isEmpty))
    splits.foreach(s => assert(context.countersOf(s.splitId) == Map(MissingFilesSkipped -> 1L, ChangedFilesSkipped -> 0L)))

    val changing = copyOf("changed")
    val changed = ParquetSource.builder().path(changing.toString).ignoreChangedFiles(true).build()
    val changedSplits = changed.createEnumerator().discoverSplits()
    Files.write(changing.resolve("part.parquet"), Array[Byte](1, 2, 3), java.nio.file.StandardOpenOption.APPEND)
    val changedContext = ReaderContext()
    assert(readBatches(changed, changedSplits.map(s => SplitRange(s, s.firstRow, s.firstRow + s.rowCount)),
      changedContext)().forall(_._2.isEmpty))
    changedSplits.foreach(s => assert(changedContext.countersOf(s.splitId)(ChangedFilesSkipped) == 1L))
  }
}

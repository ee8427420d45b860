package sluice.connector.file.parquet

import java.io.FileNotFoundException
import java.nio.file.{Files, Path}

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.ColumnarToRowExec
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.alignment.AlignedStreamSuite.splitStates
import sluice.api.{ColumnarFetch, ReaderContext, ReaderCounters, RecordsWithSplitIds, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.file.{DiscoveredFile, FileStatistics}
import sluice.connector.file.FileReader.{ChangedFilesSkipped, MissingFilesSkipped}
import sluice.connector.format.Provenance
import sluice.eventtime.WatermarkStrategy

/**
 * Row-group ranges reach Spark as the vectorized reader's column batches: the same rows,
 * provenance, event times and reports as rows give (the row path: Spark's reader with
 * `spark.sql.parquet.enableVectorizedReader=false`, or `ParquetReader` on the same ranges),
 * including ranges that start or end inside a row group.
 */
class ParquetColumnarSuite extends AnyFunSuite with SparkSuiteBase {
  import ParquetSourceSuite.BaseMs

  /** 2000 rows in 4 files under `region=` directories, several row groups each, nulls and nested columns. */
  private lazy val table: Path = {
    val dir = tempDir("columnar").resolve("table")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")(
      spark
        .range(0, 2000, 1, 2)
        .selectExpr(
          "id",
          "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('name-', id) END AS name",
          "CAST(id * 1.25 AS DECIMAL(12, 2)) AS amount",
          s"CASE WHEN id % 11 = 0 THEN NULL ELSE timestamp_millis($BaseMs + id * 1000 + id % 3) END AS ts",
          "named_struct('a', id % 3, 'b', CASE WHEN id % 5 = 0 THEN NULL ELSE array(id, id + 1) END) AS nested",
          "CAST(id % 2 AS INT) AS region")
        .write
        .option("parquet.block.size", "4096")
        .partitionBy("region")
        .parquet(dir.toString))
    dir
  }

  private var queries = 0

  /** Every row (with provenance) of an AvailableNow run, and whether its last batch was read as batches. */
  private def run(df: DataFrame): (Seq[Row], Boolean, StreamingQuery) = {
    queries += 1
    val name = s"columnar_$queries"
    val q = df.writeStream
      .format("memory")
      .queryName(name)
      .option("checkpointLocation", tempDir("ckpt").toString)
      .trigger(Trigger.AvailableNow())
      .start()
    awaitEnd(q)
    q.exception.foreach(e => throw e)
    val columnar = q
      .asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper]
      .streamingQuery
      .lastExecution
      .executedPlan
      .exists(_.isInstanceOf[ColumnarToRowExec])
    (spark.table(name).collect().toSeq, columnar, q)
  }

  private def source(): ParquetSource = ParquetSource.builder().path(table.toString).build()

  test(
    "whole row groups are read as column batches: the rows, _split, _position and _timestamp of the row path") {
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
    val (compact, compactColumnar, _) = run(
      Sluice
        .fromSource(spark, source(), null, "compact", Map("forceTimestampSupport" -> "false")))
    assert(compactColumnar && multiset(compact) == multiset(expected))
    val read = Sluice.read(spark, source(), null, "batch")
    assert(read.queryExecution.executedPlan.exists(_.isInstanceOf[ColumnarToRowExec]))
    assert(multiset(read.collect().toSeq) == multiset(rows))
  }

  test(
    "under a watermark strategy the event-time column, each split's watermark and the query's are the row path's") {
    def withStrategy(name: String, limit: Map[String, String]) = {
      val strategy = WatermarkStrategy
        .forBoundedOutOfOrderness(java.time.Duration.ofSeconds(5))
        .withTimestampColumn("ts")
      val df = Sluice.fromSource(spark, source(), strategy, name, limit)
      run(df.withWatermark("event_time", "1 minute").select("id", "ts", "event_time"))
    }
    // batches of 170 records end inside row groups: views and cut batches carry event times too
    val limited = Map("maxRecordsPerTrigger" -> "170")
    val (cut, cutColumnar, q3) = withStrategy("wm_cut_batches", limited)
    val (cutRows, _, q4) = withConf("spark.sql.parquet.enableVectorizedReader", "false")(
      withStrategy("wm_cut_rows", limited))
    assert(cutColumnar && multiset(cut) == multiset(cutRows))
    def perBatch(q: StreamingQuery) = q.recentProgress
      .filter(_.numInputRows > 0)
      .map(p => splitStates(p).map(s => s.split -> s.watermark))
    assert(perBatch(q3).length > 5 && perBatch(q3).toSeq == perBatch(q4).toSeq)

    val (batches, columnar, q1) = withStrategy("wm_batches", Map.empty)
    val (rows, rowPath, q2) = withConf("spark.sql.parquet.enableVectorizedReader", "false")(
      withStrategy("wm_rows", Map.empty))
    assert(columnar && !rowPath)
    assert(multiset(batches) == multiset(rows))
    // event_time is ts truncated to the millisecond, null where ts is
    assert(batches.forall(r => r.isNullAt(1) == r.isNullAt(2)))
    assert(batches.exists(r => !r.isNullAt(1) && r.getTimestamp(1).getTime % 1000 != 0))
    def states(q: StreamingQuery) = q.recentProgress
      .filter(_.numInputRows > 0)
      .flatMap(p => splitStates(p))
      .map(s => s.split -> s.watermark)
      .toMap
    assert(states(q1).nonEmpty && states(q1) == states(q2))
    assert(
      q1.lastProgress.eventTime.get("watermark") == q2.lastProgress.eventTime.get("watermark"))
  }

  test("ranges cut inside row groups (a read limit) are read as batches too, every row once") {
    val s = source()
    val split = s.createEnumerator().discoverSplits().head
    assert(
      s.readsColumnar(
        Seq(SplitRange(split, split.firstRow + 1, split.firstRow + 2)),
        RecordLayout.Full))
    withConf("spark.sql.parquet.enableVectorizedReader", "false") {
      assert(
        !source().readsColumnar(
          Seq(SplitRange(split, split.firstRow, split.firstRow + split.rowCount)),
          RecordLayout.Full))
    }
    // batches of 150 records end inside row groups, and the next batch starts there
    val (limited, columnar, q) =
      run(Sluice.fromSource(spark, s, null, "limited", Map("maxRecordsPerTrigger" -> "150")))
    assert(columnar && q.recentProgress.count(_.numInputRows > 0) > 5)
    assert(q.recentProgress.filter(_.numInputRows > 0).dropRight(1).forall(_.numInputRows == 150))
    assert(multiset(limited) == multiset(run(Sluice.fromSource(spark, s, null, "unlimited"))._1))
  }

  /**
   * 200 rows in one row group, every type the vectorized reader reads, nulls in each column;
   * pages of at most 20 rows, dictionary-encoded strings and a column that falls back to plain pages.
   */
  private lazy val wide: Path = {
    val dir = tempDir("wide").resolve("table")
    withConf("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")(
      spark
        .range(0, 200, 1, 1)
        .selectExpr(
          "id",
          "CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(id AS INT) END AS i",
          "CAST(id % 300 AS SHORT) AS sh",
          "CAST(id % 100 AS BYTE) AS b",
          "id % 2 = 0 AS flag",
          "CAST(id / 3.0 AS FLOAT) AS f",
          "CASE WHEN id % 5 = 0 THEN NULL ELSE id / 7.0 END AS d",
          "date_add(DATE'2026-01-01', CAST(id AS INT)) AS day",
          "CAST(concat('bin-', id) AS BINARY) AS bin",
          "CAST(id * 1.000001 AS DECIMAL(38, 6)) AS big",
          s"CASE WHEN id % 11 = 0 THEN NULL ELSE timestamp_millis($BaseMs + id * 1000 + id % 7) END AS ts",
          "map(concat('k', id), named_struct('x', CAST(id AS INT))) AS m",
          "CASE WHEN id % 4 = 0 THEN NULL ELSE array(named_struct('y', id, 'z', concat('z', id)), named_struct('y', id + 1, 'z', CAST(NULL AS STRING))) END AS arr",
          "named_struct('inner', CASE WHEN id % 6 = 0 THEN NULL ELSE named_struct('a', CAST(id AS INT), 'b', concat('b', id)) END, 'n', id * 2) AS nested",
          // strings that repeat (dictionary entries read by many rows of a batch), and one whose
          // dictionary outgrows its limit at about row 118: later pages are plain
          "CASE WHEN id % 13 = 0 THEN NULL ELSE concat('city-', id % 4) END AS city",
          "array(concat('t', id % 3), CAST(NULL AS STRING), concat('t', id % 5)) AS tags",
          "map(concat('mk', id % 2), concat('mv', id % 3)) AS kv",
          "CASE WHEN id < 100 THEN concat(repeat('x', 40), id % 30) ELSE concat(repeat('y', 40), id) END AS drifting")
        .write
        .option("parquet.page.row.count.limit", "20")
        .option("parquet.dictionary.page.size", "2048")
        .parquet(dir.toString))
    dir
  }

  test(
    "the batch reader starts and ends ranges inside a row group: the rows and record times the row reader gives") {
    // batches of 16 rows, so ranges start inside, at the start of and after whole batches of the row group
    // full rows with record times from `ts`; compact rows (which carry no time) without
    val sources = withConf("spark.sql.parquet.columnarReaderBatchSize", "16")(
      Map(
        RecordLayout.Full -> ParquetSource
          .builder()
          .path(wide.toString)
          .timestampColumn("ts")
          .build(),
        RecordLayout.Compact -> ParquetSource.builder().path(wide.toString).build()))
    val split = sources(RecordLayout.Full).createEnumerator().discoverSplits().head
    assert(split.rowCount == 200)
    Seq((37L, 195L), (16L, 48L), (40L, 45L), (0L, 200L), (199L, 200L), (50L, 50L)).foreach {
      case (from, until) =>
        Seq(RecordLayout.Full, RecordLayout.Compact).foreach { layout =>
          val s = sources(layout)
          val convert = org.apache.spark.sql.catalyst.CatalystTypeConverters
            .createToScalaConverter(s.schema(layout))
          val range = Seq(SplitRange(split, split.firstRow + from, split.firstRow + until))
          val columnar = ArrayBuffer[(Row, Long)]()
          eachBatch(s, layout, range.head) { f =>
            (0 until f.batch.numRows()).foreach(i =>
              columnar += ((convert(f.batch.getRow(i)).asInstanceOf[Row], f.recordTime(i))))
            assert(f.position == split.firstRow + from + columnar.size)
          }
          val rows = ArrayBuffer[(Row, Long)]()
          val rowReader = s.createReader(ReaderContext(layout))
          rowReader.handleSplitsChanges(range)
          try {
            var finished = false
            while (!finished) {
              val f = rowReader.fetch()
              finished = f.finishedSplits.nonEmpty
              while (f.nextSplit() != null)
                while (f.nextRecord()) rows += ((convert(f.row).asInstanceOf[Row], f.eventTime))
            }
          } finally rowReader.close()
          assert(columnar.map(_._1.getLong(0)) == (from until until), s"[$from, $until) $layout")
          assert(columnar == rows, s"[$from, $until) $layout")
          if (layout == RecordLayout.Full && until - from > 20)
            assert(
              columnar.exists(_._2 == RecordsWithSplitIds.NoTimestamp) &&
                columnar.exists(_._2 != RecordsWithSplitIds.NoTimestamp))
        }
    }
  }

  test(
    "string columns reach Spark through the dictionary view, over dictionary and plain pages alike") {
    // the file holds what the range test above needs to mean something here: repeated dictionary
    // strings, and a column chunk whose plain pages start inside a batch of 16 rows
    val listing = Files.list(wide)
    val file =
      try listing.iterator().asScala.find(_.toString.endsWith(".parquet")).get
      finally listing.close()
    val footer = org.apache.parquet.hadoop.ParquetFileReader.open(
      org.apache.parquet.hadoop.util.HadoopInputFile
        .fromPath(new org.apache.hadoop.fs.Path(file.toUri), spark.sessionState.newHadoopConf()))
    // the row at which `drifting`'s plain pages start: its dictionary-encoded pages come first
    val (city, plainFrom) =
      try {
        val chunks = footer.getFooter.getBlocks
          .get(0)
          .getColumns
          .asScala
          .map(c => c.getPath.toDotString -> c)
          .toMap
        val drifting = chunks("drifting")
        val stats = drifting.getEncodingStats
        val pages = footer.readOffsetIndex(drifting)
        assert(
          stats != null && pages != null,
          "the writer left out encoding stats or the offset index this test reads")
        val dictionaryPages = stats.getDataEncodings.asScala.toSeq
          .filter(_.usesDictionary)
          .map(stats.getNumDataPagesEncodedAs)
          .sum
        assert(
          stats.hasNonDictionaryEncodedPages && dictionaryPages > 0 && dictionaryPages < pages.getPageCount,
          s"$dictionaryPages dictionary-encoded pages of ${pages.getPageCount}")
        (chunks("city").getEncodingStats, pages.getFirstRowIndex(dictionaryPages))
      } finally footer.close()
    assert(city.hasDictionaryEncodedPages && !city.hasNonDictionaryEncodedPages)
    assert(
      plainFrom % 16 != 0,
      s"the plain pages start at row $plainFrom, at the start of a batch")

    val s = withConf("spark.sql.parquet.columnarReaderBatchSize", "16")(
      ParquetSource.builder().path(wide.toString).build())
    val split = s.createEnumerator().discoverSplits().head
    val names = s.schema(RecordLayout.Full).fieldNames
    val (cityColumn, drifting) = (names.indexOf("city"), names.indexOf("drifting"))
    val read = ArrayBuffer[String]()
    eachBatch(
      s,
      RecordLayout.Full,
      SplitRange(split, split.firstRow, split.firstRow + split.rowCount)) { f =>
      val b = f.batch
      Seq("city", "tags", "kv", "drifting", "m", "nested").foreach { name =>
        assert(b.column(names.indexOf(name)).isInstanceOf[DictionaryStringVector], name)
      }
      assert(!b.column(names.indexOf("id")).isInstanceOf[DictionaryStringVector])
      // rows of a batch with the same city share one decoded string
      val cities = (0 until b.numRows())
        .filterNot(b.column(cityColumn).isNullAt)
        .map(b.column(cityColumn).getUTF8String)
      cities.groupBy(_.toString).values.foreach(same => assert(same.forall(_ eq same.head)))
      read ++= (0 until b.numRows()).map(i => b.column(drifting).getUTF8String(i).toString)
    }
    assert(
      read == spark.read
        .parquet(wide.toString)
        .orderBy("id")
        .collect()
        .toSeq
        .map(_.getAs[String]("drifting")))
  }

  /** Reads one range with the source's batch reader, handing each fetch that holds a batch to `each`. */
  private def eachBatch(s: ParquetSource, layout: RecordLayout, range: SplitRange[RowGroupSplit])(
      each: ColumnarFetch => Unit): Unit = {
    val reader = s.createColumnarReader(ReaderContext(layout))
    reader.handleSplitsChanges(Seq(range))
    try {
      var finished = false
      while (!finished) {
        val f = reader.fetch()
        finished = f.finishedSplits.nonEmpty
        if (f.batch != null) each(f)
      }
    } finally reader.close()
  }

  /** Reads `ranges` with the source's batch reader: per fetch, the split, its rows' ids and `_position`s, and the finished splits. */
  private def readBatches(
      s: ParquetSource,
      ranges: Seq[SplitRange[RowGroupSplit]],
      context: ReaderContext)(
      between: () => Unit = () => ()): Seq[(String, Seq[(Long, Long)], Set[String])] = {
    val reader = s.createColumnarReader(context)
    reader.handleSplitsChanges(ranges)
    val fetches = ArrayBuffer[(String, Seq[(Long, Long)], Set[String])]()
    var finished = Set.empty[String]
    try
      while (finished.size < ranges.size) {
        val f: ColumnarFetch = reader.fetch()
        finished ++= f.finishedSplits
        val rows = Option(f.batch).toSeq.flatMap { b =>
          val position = b.column(b.numCols() - 2) // _position
          (0 until b.numRows()).map(i => (b.column(0).getLong(i), position.getLong(i)))
        }
        if (f.batch != null) assert(f.position == rows.last._2 + 1)
        fetches += ((f.splitId, rows, f.finishedSplits))
        between()
      }
    finally reader.close()
    fetches.toSeq
  }

  /** Spark's own (id, `_metadata.row_index`) of the rows of `split`. */
  private def sparkRowIndexes(split: RowGroupSplit): Seq[(Long, Long)] =
    spark.read
      .parquet(split.path)
      .selectExpr("id", "_metadata.row_index AS i")
      .where(s"i >= ${split.firstRow} AND i < ${split.firstRow + split.rowCount}")
      .orderBy("i")
      .collect()
      .toSeq
      .map(r => (r.getLong(0), r.getLong(1)))

  test(
    "a whole-file split read in ranges starts each at the row group holding it: exact rows, no earlier row group decoded") {
    val s = source()
    val groups = s.createEnumerator().discoverSplits().groupBy(_.path).values.maxBy(_.size)
    assert(groups.size >= 3, "the file has too few row groups")
    val firstRows = groups.map(_.firstRow).sorted
    val rows = groups.map(_.rowCount).sum
    // the split a table's metadata makes of this file: rows [0, rows) over its whole byte range
    val whole = RowGroups
      .wholeFile(
        DiscoveredFile(
          groups.head.path,
          groups.head.fileLength,
          groups.head.modificationTime,
          statistics = Some(FileStatistics(rows, None))))
      .get
    val expected = sparkRowIndexes(whole)
    assert(expected.map(_._2) == (0L until rows))
    // cuts at the file's start, inside the first row group, at a row group's first row, inside a
    // later one, and at the last row: each range read by a new reader, as after a restart
    val (second, third) = (firstRows(1), firstRows(2))
    val cuts = Seq(0L, 5L, second, second + 3, third + (firstRows(3) - third) / 2, rows - 1, rows)
    val position = s.schema(RecordLayout.Full).fieldNames.indexOf("_position")
    // rows from the vectorized reader, and from parquet-mr's (Spark's row path)
    val parquetMr = withConf("spark.sql.parquet.enableVectorizedReader", "false")(source())
    def readRows(s: ParquetSource, range: SplitRange[RowGroupSplit], context: ReaderContext) = {
      val reader = s.createReader(context)
      reader.handleSplitsChanges(Seq(range))
      val read = ArrayBuffer[(Long, Long)]()
      try {
        var finished = false
        while (!finished) {
          val f = reader.fetch()
          finished = f.finishedSplits.nonEmpty
          while (f.nextSplit() != null)
            while (f.nextRecord()) read += ((f.row.getLong(0), f.row.getLong(position)))
        }
      } finally reader.close()
      read.toSeq
    }
    cuts.zip(cuts.tail).foreach { case (from, until) =>
      val range = SplitRange(whole, from, until)
      val contexts = Seq.fill(3)(ReaderContext())
      val want = expected.slice(from.toInt, until.toInt)
      assert(readBatches(s, Seq(range), contexts(0))().flatMap(_._2) == want, s"[$from, $until)")
      assert(readRows(s, range, contexts(1)) == want, s"[$from, $until) as rows")
      assert(readRows(parquetMr, range, contexts(2)) == want, s"[$from, $until) by parquet-mr")
      // only the rows of the row group holding `from` that come before it were decoded and dropped
      val dropped = from - firstRows.filter(_ <= from).max
      contexts.foreach { c =>
        assert(
          c.countersOf(whole.splitId)
            .get(ReaderCounters.RowsDecodedBeforeStart)
            .contains(dropped),
          s"[$from, $until)")
      }
    }
  }

  test(
    "the batch reader: every row of its ranges once with Spark's row index, each range finished once, after its last batch") {
    val s = source()
    val splits = s.createEnumerator().discoverSplits().take(3)
    val ranges =
      splits.map(split => SplitRange(split, split.firstRow, split.firstRow + split.rowCount))
    val fetches = readBatches(s, ranges, ReaderContext())()
    splits.foreach { split =>
      val read = fetches.filter(_._1 == split.splitId).flatMap(_._2)
      assert(read.map(_._2) == (split.firstRow until split.firstRow + split.rowCount))
      // rows are numbered by counting: the numbers are Spark's row indexes of the same rows
      assert(read == sparkRowIndexes(split))
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
        val expected =
          if (ts.isNullAt(i)) RecordsWithSplitIds.NoTimestamp
          else Math.floorDiv(ts.getLong(i), 1000L)
        assert(f.recordTime(i) == expected, s"row id ${ids.getLong(i)}")
      }
      assert((0 until f.batch.numRows()).exists(i =>
        f.recordTime(i) == RecordsWithSplitIds.NoTimestamp))
    } finally reader.close()
  }

  test(
    "a reader that gives more rows than the row group held when listed fails the read, in a batch or after the last") {
    // batches of 16 rows (Spark's reader is built when the source first reads, under the
    // session's settings then); a split that says it holds fewer rows than the file's row group
    withConf("spark.sql.parquet.columnarReaderBatchSize", "16")(forgedRowCounts())
  }

  private def forgedRowCounts(): Unit = {
    val s = ParquetSource.builder().path(wide.toString).build()
    val split = s.createEnumerator().discoverSplits().head
    assert(split.rowCount == 200)
    Seq(
      (
        190L,
        176L,
        "inside a batch"
      ), // the batch of rows 176-191 runs past row 189: none of it is handed on
      (
        192L,
        192L,
        "after the last batch"
      ) // rows 0-191 are whole batches; the reader still has 8 rows
    ).foreach { case (listed, handedOn, where) =>
      val forged = split.copy(rowCount = listed)
      val reader = s.createColumnarReader(ReaderContext())
      reader.handleSplitsChanges(
        Seq(SplitRange(forged, forged.firstRow, forged.firstRow + listed)))
      var rows = 0L
      val e =
        try
          intercept[IllegalStateException] {
            while (true) Option(reader.fetch().batch).foreach(rows += _.numRows())
          }
        finally reader.close()
      assert(
        e.getMessage.contains(
          s"gave more rows for row group 0 of '${split.path}' than the $listed its footer held"),
        s"$where: ${e.getMessage}")
      assert(rows == handedOn, where)
    }
    // a range that ends before the row group's end leaves rows to the reader: no failure
    val cut = readBatches(
      s,
      Seq(SplitRange(split, split.firstRow, split.firstRow + 100)),
      ReaderContext())()
    assert(cut.flatMap(_._2).map(_._2) == (split.firstRow until split.firstRow + 100))
  }

  test(
    "the batch reader skips a file deleted or changed after listing only when told, and counts it") {
    def copyOf(name: String) = {
      val dir = tempDir(name)
      val file = Files
        .list(table.resolve("region=0"))
        .filter(_.toString.endsWith(".parquet"))
        .findFirst()
        .get
      Files.copy(file, dir.resolve("part.parquet"))
      dir
    }
    val gone = copyOf("gone")
    val strict = ParquetSource.builder().path(gone.toString).build()
    val goneSplits = strict.createEnumerator().discoverSplits()
    Files.delete(gone.resolve("part.parquet"))
    val e = intercept[FileNotFoundException](
      readBatches(
        strict,
        goneSplits.map(s => SplitRange(s, s.firstRow, s.firstRow + s.rowCount)),
        ReaderContext())())
    assert(
      e.getMessage.contains("was listed but no longer exists. Set option 'ignoreMissingFiles'"),
      e.getMessage)

    val gone2 = copyOf("gone2")
    val lenient = ParquetSource.builder().path(gone2.toString).ignoreMissingFiles(true).build()
    val splits = lenient.createEnumerator().discoverSplits()
    Files.delete(gone2.resolve("part.parquet"))
    val context = ReaderContext()
    val fetches = readBatches(
      lenient,
      splits.map(s => SplitRange(s, s.firstRow, s.firstRow + s.rowCount)),
      context)()
    assert(fetches.forall(_._2.isEmpty))
    // a skipped file decoded nothing before its range's start: that counter is there, at 0
    splits.foreach(s =>
      assert(
        context.countersOf(s.splitId) == Map(
          MissingFilesSkipped -> 1L,
          ChangedFilesSkipped -> 0L,
          ReaderCounters.RowsDecodedBeforeStart -> 0L)))

    val changing = copyOf("changed")
    val changed = ParquetSource.builder().path(changing.toString).ignoreChangedFiles(true).build()
    val changedSplits = changed.createEnumerator().discoverSplits()
    Files.write(
      changing.resolve("part.parquet"),
      Array[Byte](1, 2, 3),
      java.nio.file.StandardOpenOption.APPEND)
    val changedContext = ReaderContext()
    assert(
      readBatches(
        changed,
        changedSplits.map(s => SplitRange(s, s.firstRow, s.firstRow + s.rowCount)),
        changedContext)().forall(_._2.isEmpty))
    changedSplits.foreach(s =>
      assert(changedContext.countersOf(s.splitId)(ChangedFilesSkipped) == 1L))
  }
}

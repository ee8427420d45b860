package sluice.connector.table.iceberg

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{DataFile, DeleteFile, FileFormat, PartitionSpec, Schema, Table}
import org.apache.iceberg.data.{GenericRecord, IcebergGenerics, Record}
import org.apache.iceberg.data.parquet.GenericParquetWriter
import org.apache.iceberg.deletes.{BaseDVFileWriter, PositionDelete}
import org.apache.iceberg.hadoop.HadoopTables
import org.apache.iceberg.io.OutputFileFactory
import org.apache.iceberg.parquet.Parquet
import org.apache.iceberg.types.Types
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Sluice, SparkSuiteBase}
import sluice.api.{ReaderContext, ReaderCounters, SplitRange}
import sluice.config.RecordLayout
import sluice.connector.file.parquet.{RowGroupSplit, RowGroupSplitSerializer}
import sluice.connector.format.Provenance

/**
 * Iceberg v2 position deletes applied: a table whose data and position delete files are written
 * by Iceberg's own Parquet writers (iceberg-parquet; pyiceberg writes no merge-on-read deletes),
 * read by Sluice as rows and as column batches, against Iceberg's own generic reader of the same
 * snapshot (iceberg-data's `IcebergGenerics`, which applies the deletes) as multisets. Deleted rows
 * sit in several row groups of a file, across a row-group boundary, fill a whole row group, and
 * fill a whole file; a stream stopped inside a row group resumes from its checkpoint exactly.
 * v3 deletion vectors likewise, written by iceberg-core's own DV writer. Read with a
 * timestampColumn, the same files are planned whole from their manifests' bounds (`id`, a long
 * column Iceberg's writer keeps bounds of) and carry the file's deleted rows the same way.
 */
class IcebergDeletesSuite extends AnyFunSuite with SparkSuiteBase {

  private val schema = new Schema(
    Types.NestedField.optional(1, "id", Types.LongType.get),
    Types.NestedField.optional(2, "city", Types.StringType.get))

  /** Rows deleted by position, per data file, as two delete files say (file a's from both). */
  private val firstDeletes =
    Map("a" -> ((3L to 5L) ++ Seq(15L) ++ (20L to 29L)), "b" -> Seq(0L, 1L, 49L))
  private val secondDeletes = Map("a" -> ((37L to 41L) :+ 99L), "c" -> (0L to 9L))

  /**
   * Data files a (ids 0-99), b (100-149) and c (150-159), row groups of 10 rows (Iceberg's writer
   * checks the row group's size every 10 rows, against a size of 1 byte), then the two delete
   * files in one row delta. Row `i` of a file holds the file's first id plus `i`.
   */
  private lazy val table: Table = {
    val t = newTable(formatVersion = 2)
    val files = Map("a" -> (0L until 100L), "b" -> (100L until 150L), "c" -> (150L until 160L))
      .map { case (name, ids) => name -> dataFile(t, name, ids) }
    val append = t.newAppend()
    files.values.foreach(append.appendFile)
    append.commit()
    t.newRowDelta()
      .addDeletes(deleteFile(t, "deletes-1", firstDeletes.map { case (f, p) => files(f) -> p }))
      .addDeletes(deleteFile(t, "deletes-2", secondDeletes.map { case (f, p) => files(f) -> p }))
      .commit()
    t
  }

  private def newTable(formatVersion: Int): Table =
    new HadoopTables(new Configuration()).create(
      schema,
      PartitionSpec.unpartitioned,
      Map(
        "format-version" -> formatVersion.toString,
        "write.parquet.row-group-size-bytes" -> "1",
        "write.parquet.row-group-check-min-record-count" -> "10",
        "write.parquet.row-group-check-max-record-count" -> "10").asJava,
      tempDir("iceberg-deletes").resolve("t").toString)

  private def dataFile(t: Table, name: String, ids: Seq[Long]): DataFile = {
    val writer = Parquet
      .writeData(t.io.newOutputFile(s"${t.location}/data/$name.parquet"))
      .forTable(t)
      .withSpec(t.spec)
      .createWriterFunc(GenericParquetWriter.create _)
      .overwrite()
      .build[Record]()
    try
      ids.foreach { id =>
        val r = GenericRecord.create(schema)
        r.setField("id", id)
        r.setField("city", if (id % 3 == 0) "b" else "a")
        writer.write(r)
      }
    finally writer.close()
    writer.toDataFile
  }

  private def deleteFile(
      t: Table,
      name: String,
      positions: Map[DataFile, Seq[Long]]): DeleteFile = {
    val writer = Parquet
      .writeDeletes(t.io.newOutputFile(s"${t.location}/data/$name.parquet"))
      .setAll(t.properties) // not forTable: it would write each deleted row's data too
      .withSpec(t.spec)
      .overwrite()
      .buildPositionWriter[Record]()
    val delete = PositionDelete.create[Record]()
    try
      positions.toSeq.sortBy(_._1.location).foreach { case (f, ps) =>
        ps.sorted.foreach(p => writer.write(delete.set(f.location, p, null)))
      }
    finally writer.close()
    writer.toDeleteFile
  }

  /** Iceberg's own read of the current snapshot of `t`, deletes applied: (id, city). */
  private def icebergRows(t: Table): Seq[Row] = {
    val records = IcebergGenerics.read(t).build()
    try
      records.asScala.map(r => Row(r.getField("id"), r.getField("city"))).toSeq
    finally records.close()
  }

  private lazy val expected: Seq[Row] = icebergRows(table)

  private def source = IcebergSource.builder().table(table.location).build()

  /** A row's position is its row index in its file: its id less the file's first id. */
  private def positionsAreRowIndexes(df: DataFrame): Unit = {
    val firstId = Map("a.parquet" -> 0L, "b.parquet" -> 100L, "c.parquet" -> 150L)
    df.select(col("id"), col(Provenance.SplitColumn), col(Provenance.PositionColumn))
      .collect()
      .foreach { r =>
        val file = r.getString(1).split('/').last.takeWhile(_ != '#')
        assert(r.getLong(2) == r.getLong(0) - firstId(file), r)
      }
  }

  test(
    "deleted rows are never read, as rows or as column batches, and positions stay row indexes") {
    assert(expected.size == 160 - 20 - 3 - 10)
    // batches of 2 rows: file a's rows 4-5 make a wholly deleted batch inside a row group, and its
    // rows 38-39 a wholly deleted last batch of one
    Seq(("true", "4096"), ("true", "2"), ("false", "4096")).foreach { case (vectorized, size) =>
      withConf("spark.sql.parquet.enableVectorizedReader", vectorized) {
        withConf("spark.sql.parquet.columnarReaderBatchSize", size) {
          val ckpt = tempDir("ckpt").toString
          val run = runToEnd(
            Sluice.fromSource(
              spark,
              source,
              null,
              s"deletes_${vectorized}_$size",
              Map("maxRecordsPerTrigger" -> "45")),
            ckpt)
          val rows = run.rows.map(r => Row(r.getLong(0), r.getString(1)))
          assert(multiset(rows) == multiset(expected), s"vectorized=$vectorized batch=$size")
          assert(run.readColumnar == (vectorized == "true"))
          val df = spark.createDataFrame(run.rows.asJava, run.rows.head.schema)
          positionsAreRowIndexes(df)
          // a row group whose every row is deleted makes no split: 9 of a's 10, b's 5, none of c's
          assert(df.select(Provenance.SplitColumn).distinct().count() == 14)
          val logged = sluice.Checkpoints.offsetBatches(ckpt).flatMap { b =>
            sluice.Checkpoints
              .offset(ckpt, b)
              .splits
              .map(e => RowGroupSplitSerializer.deserialize(e.splitVersion, e.split))
          }
          assert(logged.nonEmpty)
          assert(
            !logged.exists(s =>
              (s.path.endsWith("/a.parquet") && s.firstRow == 20) || s.path.endsWith(
                "/c.parquet")),
            "a wholly deleted row group or file has a split in the offset log")
        }
      }
    }
    // a batch read gives the same rows
    val batch = Sluice.read(spark, source)
    assert(multiset(batch.select("id", "city").collect().toSeq) == multiset(expected))
  }

  Seq("true", "false").foreach { vectorized =>
    test(
      s"a stream stopped inside a row group resumes from its checkpoint: each kept row once, no deleted one (vectorized=$vectorized)") {
      withConf("spark.sql.parquet.enableVectorizedReader", vectorized) {
        val out = tempDir("sink").toString
        val ckpt = tempDir("ckpt").toString
        def start(trigger: Trigger) =
          Sluice
            .fromSource(
              spark,
              source,
              null,
              s"deletes_restart_$vectorized",
              Map("maxRecordsPerTrigger" -> "15"))
            .select("id", "city")
            .writeStream
            .format("parquet")
            .option("path", out)
            .option("checkpointLocation", ckpt)
            .trigger(trigger)
            .start()
        val first = start(Trigger.ProcessingTime(0))
        try
          eventually("two batches of the first run", first)(
            first.recentProgress.count(_.numInputRows > 0) >= 2)
        finally first.stop()
        val committed =
          sluice.Checkpoints
            .lastSinkBatch(out)
            .getOrElse(fail("the first run committed no batch"))
        val ends = sluice.Checkpoints.offset(ckpt, committed).splits.map { e =>
          RowGroupSplitSerializer.deserialize(e.splitVersion, e.split) -> e.position
        }
        assert(
          ends.exists { case (s, p) => p > s.firstRow && p < s.firstRow + s.rowCount },
          "no row group was stopped inside: the test would not show a restart mid-row-group")
        assert(
          ends.exists(_._1.deleted.isDefined),
          "the offset log carries the splits' deleted rows")
        // file a's rows 3-5 are deleted: its first row group is stopped at one of them
        assert(
          ends.exists { case (s, p) => s.deleted.exists(_.contains(p)) },
          s"no split was stopped at a deleted row: $ends")
        val partial = spark.read.parquet(out).count()
        assert(partial > 0 && partial < expected.size)
        val second = start(Trigger.AvailableNow())
        awaitEnd(second)
        second.exception.foreach(e => throw e)
        assert(multiset(spark.read.parquet(out).collect().toSeq) == multiset(expected))
      }
    }
  }

  /** The table read with event time from `id`: each data file planned whole from its manifest bounds. */
  private def timedSource =
    IcebergSource.builder().table(table.location).timestampColumn("id").build()

  /** The splits of every offset the checkpoint logged. */
  private def loggedSplits(ckpt: String): Seq[RowGroupSplit] =
    sluice.Checkpoints.offsetBatches(ckpt).flatMap { b =>
      sluice.Checkpoints.offset(ckpt, b).splits.map { e =>
        RowGroupSplitSerializer.deserialize(e.splitVersion, e.split)
      }
    }

  test(
    "a whole-file split from manifest bounds carries its file's deleted rows, and a range inside it starts at the row group holding it: both readers") {
    val source = timedSource
    val splits = source.createEnumerator().discoverSplits()
    // file c, every row deleted, makes no split; a and b are one split each, unopened
    assert(splits.map(_.path.split('/').last) == Seq("a.parquet", "b.parquet"))
    assert(splits.forall(s => s.wholeFile && s.rowGroups == 1 && s.firstRow == 0), splits)
    val a = splits.head
    assert(a.rowCount == 100 && a.deleted.map(_.count).contains(20L), a)
    // file a's kept rows: id = row index
    val kept = expected.map(_.getLong(0)).filter(_ < 100).sorted
    val position = source.schema(RecordLayout.Full).fieldNames.indexOf("_position")
    // cuts at the file's start, on a deleted row (15) of the second row group, and inside the
    // fourth, whose rows 37-39 and the fifth's 40-41 are deleted: each range read by a new reader
    val cuts = Seq(0L, 15L, 35L, 100L)
    cuts.zip(cuts.tail).foreach { case (from, until) =>
      val range = SplitRange(a, from, until)
      val rowContext = ReaderContext()
      val reader = source.createReader(rowContext)
      reader.handleSplitsChanges(Seq(range))
      val asRows = ArrayBuffer[(Long, Long)]()
      try {
        var finished = false
        while (!finished) {
          val f = reader.fetch()
          finished = f.finishedSplits.nonEmpty
          while (f.nextSplit() != null)
            while (f.nextRecord()) asRows += ((f.row.getLong(0), f.row.getLong(position)))
        }
      } finally reader.close()
      val batchContext = ReaderContext()
      val columnar = source.createColumnarReader(batchContext)
      columnar.handleSplitsChanges(Seq(range))
      val asBatches = ArrayBuffer[(Long, Long)]()
      try {
        var finished = false
        while (!finished) {
          val f = columnar.fetch()
          finished = f.finishedSplits.nonEmpty
          Option(f.batch).foreach { b =>
            (0 until b.numRows()).foreach { i =>
              asBatches += ((b.column(0).getLong(i), b.column(position).getLong(i)))
            }
          }
        }
      } finally columnar.close()
      val want = kept.filter(id => id >= from && id < until).map(id => (id, id))
      assert(asRows == want, s"[$from, $until) as rows")
      assert(asBatches == want, s"[$from, $until) as batches")
      // only the earlier rows of the row group holding `from` were decoded and dropped
      Seq(rowContext, batchContext).foreach { c =>
        assert(
          c.countersOf(a.splitId).get(ReaderCounters.RowsDecodedBeforeStart).contains(from % 10),
          s"[$from, $until)")
      }
    }
  }

  test(
    "a table planned whole from its manifest bounds, stopped inside a file and restarted from its checkpoint: each kept row once at its row index, no deleted one") {
    val out = tempDir("sink").toString
    val ckpt = tempDir("ckpt").toString
    def start(trigger: Trigger) =
      Sluice
        .fromSource(
          spark,
          timedSource,
          null,
          "deletes_whole",
          Map("maxRecordsPerTrigger" -> "15"))
        .select("id", "city", Provenance.SplitColumn, Provenance.PositionColumn)
        .writeStream
        .format("parquet")
        .option("path", out)
        .option("checkpointLocation", ckpt)
        .trigger(trigger)
        .start()
    // the first run reads column batches, the restarted one rows: each reader starts a range
    // inside a whole file
    withConf("spark.sql.parquet.enableVectorizedReader", "true") {
      val first = start(Trigger.ProcessingTime(0))
      try
        eventually("two batches of the first run", first)(
          first.recentProgress.count(_.numInputRows > 0) >= 2)
      finally first.stop()
    }
    val committed =
      sluice.Checkpoints.lastSinkBatch(out).getOrElse(fail("the first run committed no batch"))
    val ends = sluice.Checkpoints.offset(ckpt, committed).splits.map { e =>
      RowGroupSplitSerializer.deserialize(e.splitVersion, e.split) -> e.position
    }
    assert(
      ends.exists { case (s, p) => s.wholeFile && p >= 10 && p < s.rowCount },
      s"no whole file was stopped past its first row group: $ends")
    withConf("spark.sql.parquet.enableVectorizedReader", "false") {
      val second = start(Trigger.AvailableNow())
      awaitEnd(second)
      second.exception.foreach(e => throw e)
    }
    val result = spark.read.parquet(out)
    assert(multiset(result.select("id", "city").collect().toSeq) == multiset(expected))
    positionsAreRowIndexes(result)
    val logged = loggedSplits(ckpt)
    assert(logged.nonEmpty && logged.forall(_.wholeFile), "a file was split by row group")
    assert(!logged.exists(_.path.endsWith("/c.parquet")), "the wholly deleted file has a split")
    assert(
      logged.filter(_.path.endsWith("/a.parquet")).forall(_.deleted.exists(_.count == 20)),
      "a logged split of file a lost its deleted rows")
  }

  test(
    "v3 deletion vectors are applied: Iceberg's own DV writer, a whole row group and a whole file deleted") {
    val t = newTable(formatVersion = 3)
    val a = dataFile(t, "a", 0L until 40L)
    val c = dataFile(t, "c", 150L until 160L)
    t.newAppend().appendFile(a).appendFile(c).commit()
    val dvs = new BaseDVFileWriter(
      OutputFileFactory.builderFor(t, 1, 1).format(FileFormat.PUFFIN).build(),
      _ => null)
    try {
      ((2L to 4L) ++ (10L to 19L) ++ Seq(39L)).foreach(p =>
        dvs.delete(a.location, p, t.spec, null))
      (0L until 10L).foreach(p => dvs.delete(c.location, p, t.spec, null))
    } finally dvs.close()
    val delta = t.newRowDelta()
    dvs.result.deleteFiles.asScala.foreach(delta.addDeletes)
    delta.commit()
    val expectedV3 = icebergRows(t)
    assert(expectedV3.size == 40 - 14)
    val run = runToEnd(
      Sluice.fromSource(
        spark,
        IcebergSource.builder().table(t.location).build(),
        null,
        "deletes_v3",
        Map("maxRecordsPerTrigger" -> "15")))
    assert(multiset(run.rows.map(r => Row(r.getLong(0), r.getString(1)))) == multiset(expectedV3))
    assert(run.readColumnar)
  }

  test(
    "positions past a data file's rows and of files outside the plan are ignored; a negative one fails naming its delete file") {
    val t = newTable(formatVersion = 2)
    val a = dataFile(t, "a", 0L until 10L)
    val gone = dataFile(t, "gone", 100L until 110L) // never appended: no plan keeps it
    t.newAppend().appendFile(a).commit()
    t.newRowDelta()
      .addDeletes(
        deleteFile(t, "past", Map(a -> Seq(3L, 10L, 1L << 31, 1L << 40), gone -> Seq(0L, 1L))))
      .commit()
    val expectedPast = icebergRows(t)
    assert(expectedPast.size == 9)
    val read = Sluice.read(spark, IcebergSource.builder().table(t.location).build())
    assert(multiset(read.select("id", "city").collect().toSeq) == multiset(expectedPast))

    t.newRowDelta().addDeletes(deleteFile(t, "negative", Map(a -> Seq(-1L)))).commit()
    val e = intercept[Exception](
      Sluice.read(spark, IcebergSource.builder().table(t.location).build()).collect())
    val messages =
      Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage)
    assert(
      messages.exists(m =>
        m != null && m.contains("negative.parquet") && m.contains("position -1")),
      e)
  }

  test(
    "a data file appended twice is read under each entry, with the deletes each entry's sequence number takes") {
    // file a appended, its rows 3-5 deleted by position, then a appended again by a later
    // snapshot: the delete's sequence number is above the first entry's and below the second's,
    // so Iceberg applies it to the first entry only (spec: position deletes apply to data files
    // of a data sequence number at or below theirs)
    val t = newTable(formatVersion = 2)
    val a = dataFile(t, "a", 0L until 10L)
    t.newFastAppend().appendFile(a).commit()
    t.newRowDelta().addDeletes(deleteFile(t, "early", Map(a -> Seq(3L, 4L, 5L)))).commit()
    t.newFastAppend().appendFile(a).commit()
    val twice = icebergRows(t)
    assert(twice.size == 7 + 10, "Iceberg's own read gives the file's rows twice, 3 deleted once")
    val read = Sluice.read(spark, IcebergSource.builder().table(t.location).build())
    assert(multiset(read.select("id", "city").collect().toSeq) == multiset(twice))
    // each entry a split of its own, named by the snapshot read and its entry
    val snapshot = t.currentSnapshot.snapshotId
    assert(
      read.select(Provenance.SplitColumn).distinct().collect().map(_.getString(0)).sorted.toSeq ==
        Seq(s"${a.location}#snapshot=$snapshot", s"${a.location}#snapshot=$snapshot.2"))
  }
}

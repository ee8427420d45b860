package sluice.connector.file.parquet

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.types.{StructType, TimestampType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.connector.file.{DiscoveredFile, FileMetrics, FileStatistics, NotReadyFiles}

/**
 * A table's data files as the Parquet enumerator knows them: by path and by the table's entry of
 * the path (the snapshot or version read, or the commit that added it). A path planned again under
 * the same entry (a plan made again after a failure, or after a restart from the checkpoint) makes
 * no split; a path the table holds again under another entry (appended twice, or removed and added
 * again) makes splits of its own, named by the entry, so both are read. The files carry their rows and
 * event-time range, as a table's metadata gives them, so their splits are made without opening
 * them (no file is needed on disk).
 */
class TableEntriesSuite extends AnyFunSuite {

  private val config = ParquetConfig(
    paths = Nil,
    monitorIntervalMs = Some(0L), // every discovery plans
    ignoreMissingFiles = false,
    ignoreChangedFiles = false,
    notReadyTimeoutMs = 60000L,
    timestampColumn = Some("ts"),
    dataSchema = new StructType().add("ts", TimestampType),
    partitionSchema = new StructType(),
    partitionRoots = Nil,
    timeZoneId = "UTC",
    caseSensitive = false,
    sparkOptions = Map.empty,
    options = Map.empty)

  private def file(name: String, entry: Option[String]): DiscoveredFile =
    DiscoveredFile(
      s"/t/data/$name.parquet",
      1000L,
      1L,
      statistics = Some(FileStatistics(10L, Some((0L, 1L)))),
      entry = entry)

  /** An enumerator whose every plan gives what `plans` holds for the version planned last. */
  private def enumerator(
      state: ParquetEnumeratorState,
      plans: collection.Map[Option[Long], PlannedFiles]): ParquetEnumerator =
    new ParquetEnumerator(
      config,
      state,
      () => new Configuration(),
      () => 0L,
      Some((_, after) => plans(after)))

  private def ids(e: ParquetEnumerator): Seq[String] = e.discoverSplits().map(_.splitId)

  test(
    "a path in two entries is read under each; planned again under the same entry, not at all") {
    val (a1, b1) = (file("a", Some("snapshot=1")), file("b", Some("snapshot=1")))
    val a2 = file("a", Some("snapshot=2"))
    val plans = mutable.Map(
      Option.empty[Long] -> PlannedFiles(Seq(a1, b1), Some(1L)),
      Some(1L) -> PlannedFiles(Seq(a2), Some(2L)))
    val e = enumerator(ParquetEnumeratorState(Nil, listed = false), plans)
    // the first entry of a path keeps the path's split id, as a listed file's
    assert(ids(e) == Seq("/t/data/a.parquet", "/t/data/b.parquet"))
    assert(ids(e) == Seq("/t/data/a.parquet#snapshot=2"))
    assert(e.snapshotState().tableVersion.contains(2L))

    // a plan that gives the same entries again (made again from a version not yet recorded)
    // makes no split: the dedup by path holds for each entry
    val again = enumerator(e.snapshotState().copy(tableVersion = Some(1L)), plans)
    assert(ids(again).isEmpty)

    // two entries of one path in one plan (Iceberg's scan of a file appended twice): both read
    val (a3, a3b) = (file("a", Some("snapshot=3")), file("a", Some("snapshot=3.2")))
    plans += Some(2L) -> PlannedFiles(Seq(a3b, a3), Some(3L))
    assert(ids(e) == Seq("/t/data/a.parquet#snapshot=3", "/t/data/a.parquet#snapshot=3.2"))

    // across the offset log: the entries are kept, so a restart knows each of them
    val s = ParquetEnumeratorStateSerializer
    val restored = s.deserialize(s.version, s.serialize(e.snapshotState()))
    assert(restored.files.map(_.key).toSet == Set(a1, b1, a2, a3, a3b).map(_.key))
    plans += Some(3L) -> PlannedFiles(Seq(a3, a3b, b1, file("b", Some("snapshot=4"))), Some(4L))
    assert(ids(enumerator(restored, plans)) == Seq("/t/data/b.parquet#snapshot=4"))
    // a hybrid's next source is told each path once
    assert(e.endState(Nil).details("fileCount") == "2")
  }

  test(
    "a state that kept no entries (an earlier Sluice) reads on: a later entry of its paths is new") {
    val v2 =
      """{"listed":true,"indexed":true,"tableVersion":1,"files":[{"path":"/t/data/a.parquet",""" +
        """"length":1000,"modificationTime":1}]}"""
    val restored = ParquetEnumeratorStateSerializer.deserialize(2, v2)
    assert(restored.files == Seq(file("a", None).copy(statistics = None)))
    val plans = Map(Option(1L) -> PlannedFiles(Seq(file("a", Some("version=2"))), Some(2L)))
    assert(ids(enumerator(restored, plans)) == Seq("/t/data/a.parquet#version=2"))
  }

  test("a split names its entry in its id and keeps it in the offset log") {
    val split = RowGroups
      .wholeFile(file("a", None))
      .get
      .copy(rowGroup = 1, rowGroups = 2, entry = Some("snapshot=7.2"))
    assert(split.splitId == "/t/data/a.parquet#rowgroup=1#snapshot=7.2")
    val s = RowGroupSplitSerializer
    assert(s.version == 6)
    assert(s.deserialize(6, s.serialize(split)) == split)
  }

  test("a split keeps its table's partition values in the offset log, any text, null or empty") {
    val values = Map(
      "city" -> Some("New York: 5 & 6 = 11%"),
      "day" -> Some("2026-11-01"),
      "none" -> None,
      "empty" -> Some(""),
      "a=b&c:d" -> Some("x"))
    val split = RowGroups
      .wholeFile(file("a", None).copy(partitionValues = Some(values)))
      .get
    assert(split.partitionValues.contains(values))
    val s = RowGroupSplitSerializer
    val text = s.serialize(split)
    assert(text.endsWith(":" + split.path) && text.count(_ == ':') == 16, text)
    assert(s.deserialize(6, text) == split)
    // a table without partition columns (under column mapping) keeps its empty map
    val none = split.copy(partitionValues = Some(Map.empty))
    assert(s.deserialize(6, s.serialize(none)) == none)
    assert(
      s.deserialize(6, s.serialize(split.copy(partitionValues = None))).partitionValues.isEmpty)
    // version 5 has no constants (the field before the path)
    val v5 = text.stripSuffix("::" + split.path) + ":" + split.path
    assert(s.deserialize(5, v5) == split)
  }

  test(
    "a split keeps the values its table fixes by field id in the offset log, any text or null") {
    val constants = Map(2 -> Some("New York: 5 & 6 = 11%"), 3 -> None, 17 -> Some(""))
    val split = RowGroups.wholeFile(file("a", None).copy(constants = constants)).get
    assert(split.constants == constants)
    val s = RowGroupSplitSerializer
    val text = s.serialize(split)
    assert(text.endsWith(":" + split.path) && text.count(_ == ':') == 16, text)
    assert(s.deserialize(6, text) == split)
    // a file without constants writes an empty field, which reads as none
    val none = split.copy(constants = Map.empty)
    assert(s.serialize(none).endsWith("::" + split.path))
    assert(s.deserialize(6, s.serialize(none)) == none)
  }

  test(
    "what the plans wait for (a table's newest metadata) counts in filesNotReady beside the data files") {
    val waits = new NotReadyFiles("test", monitored = true, () => 0L)
    // a data file without statistics has its footer read: none there, it is waited for
    val unread = DiscoveredFile("/t/data/no-footer.parquet", 1000L, 1L)
    val e = new ParquetEnumerator(
      config,
      ParquetEnumeratorState(Nil, listed = false),
      () => new Configuration(),
      () => 0L,
      Some { (_, after) =>
        waits.retryLater(
          unread.copy(path = "/t/metadata/<version 2>"),
          "v2",
          "not settled",
          new Exception)
        PlannedFiles(Seq(unread), after)
      },
      Some(waits))
    assert(e.metrics == Map(FileMetrics.FilesNotReady -> "0"))
    assert(e.discoverSplits().isEmpty)
    assert(e.metrics == Map(FileMetrics.FilesNotReady -> "2"))
  }
}

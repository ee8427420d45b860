package sluice.connector.file.parquet

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ArrayNode
import org.apache.hadoop.conf.Configuration

import sluice.api._
import sluice.connector.file.{DiscoveredFile, FileListing, ListedFileReads, NotReadyFiles}

/**
 * Every file found so far, whether every row group of them has statistics of the event-time
 * column (the event-time index covers the source only then), and for a table the last snapshot
 * (Iceberg) or version (Delta) planned, so that a restart plans from the next one on: neither the
 * whole history again nor past a snapshot (None: not planned yet, or a checkpoint of a Sluice
 * that did not keep it; `PlannedFiles.EmptyTable` when the table had none), and the table's
 * identity (`sluice.connector.table.TableIdentity`: which table those positions are of; None for
 * files, or a checkpoint of a Sluice that did not keep it).
 */
final case class ParquetEnumeratorState(
    files: Seq[DiscoveredFile],
    listed: Boolean,
    indexed: Boolean = true,
    tableVersion: Option[Long] = None,
    tableId: Option[String] = None)

/**
 * A table's data files as its own library plans them after the last version planned (None: the
 * first plan), and the version they were planned up to.
 */
final case class PlannedFiles(files: Seq[DiscoveredFile], version: Option[Long])

object PlannedFiles {

  /** The version planned when the table had no snapshot or version yet: every later one is new. */
  val EmptyTable: Long = -1L
}

/**
 * Lists the paths on the driver (once, or every `monitorIntervalMs`) and turns each new file into
 * one split per row group, from its footer, in a deterministic order (path, then row group).
 * With the query's filters (`ParquetConfig.filters`), files whose partition values and row groups
 * whose statistics no row it keeps can be in make no split: they are known, never read.
 *
 * With a `timestampColumn`, the row groups' min/max statistics are an event-time index
 * (`SupportsEventTimeIndex`) at row-group granularity, so an inexact one: it cannot tell the
 * event time at a row inside a row group. `positionsBefore` reads a range whole when its row
 * group's largest event time is below the time, and not at all otherwise; `positionsThrough`
 * reads it whole as soon as its smallest is, so alignment reads a row group that straddles its
 * horizon whole rather than stopping inside it at an unknown event time. Alignment thus cuts
 * Parquet data at row-group boundaries without reading it. The index needs statistics in every
 * row group; a file without them (INT96 timestamps, writers that skip statistics) turns it off,
 * and alignment then works from watermarks, as for line files.
 *
 * A table's data file planned with statistics (`DiscoveredFile.statistics`: its rows and the
 * event-time column's range from the table's metadata) is one split of the whole file, made
 * without opening it: the index then has file granularity for that file, and planning reads no
 * footer of it (`RowGroups.wholeFile`); not with pushed filters nor under alignment
 * (`plannedWhole`).
 */
final class ParquetEnumerator(
    config: ParquetConfig,
    restored: ParquetEnumeratorState,
    hadoopConf: () => Configuration,
    clock: () => Long,
    /**
     * The files to read instead of a listing of `config.paths`: a table's data files, as its own
     * library plans them (`sluice.connector.table`), given the last version planned. Everything
     * after the listing is the same, so files a plan returns again are known and add nothing: a
     * table's file is known by its path and its entry (`DiscoveredFile.entry`), so a path the
     * table holds again under another entry is read again.
     */
    planned: Option[(Configuration, Option[Long]) => PlannedFiles] = None,
    /**
     * Files the plans wait for (a table's newest metadata file not settled yet,
     * `IcebergTables.loadLatest`), counted with the data files in `filesNotReady`.
     */
    planWaits: Option[NotReadyFiles] = None)
    extends SplitEnumerator[RowGroupSplit, ParquetEnumeratorState]
    with SupportsEventTimeIndex[RowGroupSplit] {

  // by path and, for a table's file, the entry of the table it is (`DiscoveredFile.entry`): a
  // plan made again (after a failure, before its version is recorded) finds its files known, and
  // a path a table holds again under another entry is read again
  private val known = mutable.LinkedHashMap[(String, Option[String]), DiscoveredFile]()
  restored.files.foreach(f => known(f.key) = f)
  // how many entries of each path are known: a split of a path held twice names its entry
  private val entriesOf = mutable.Map[String, Int]().withDefaultValue(0)
  restored.files.foreach(f => entriesOf(f.path) += 1)
  private var listed = restored.listed
  private var indexed = restored.indexed
  private var tableVersion = restored.tableVersion
  // set by the table source, which checked it against the table it reads (TableIdentity)
  private val tableId = restored.tableId
  private var lastListingMs = Long.MinValue
  private val notReady = new NotReadyFiles(
    ParquetConfig.Context,
    config.monitorIntervalMs.isDefined,
    clock,
    config.notReadyTimeoutMs)

  override def discoverSplits(): Seq[RowGroupSplit] = {
    val due = config.monitorIntervalMs match {
      case None => !listed
      case Some(interval) => lastListingMs == Long.MinValue || clock() - lastListingMs >= interval
    }
    if (!due) return Nil
    val conf = hadoopConf()
    val plan = planned.map(_(conf, tableVersion))
    val found = plan
      .map(_.files)
      .getOrElse(FileListing
        .list(config.paths, conf, mustExist = config.monitorIntervalMs.isEmpty, config.listing))
    lastListingMs = clock()
    listed = true
    notReady.retainFound(found)
    val fresh = found
      .filterNot(f => known.contains(f.key) || notReady.unchangedSinceFailure(f))
      .sortBy(f => (f.path, f.entry))
    // a path planned twice (two entries in this plan, or one known already) is read under each
    // entry, its splits named by it; otherwise the split ids are the path's, as for listed files
    val heldTwice = fresh
      .groupBy(_.path)
      .collect { case (path, fs) if fs.size + entriesOf(path) > 1 => path }
      .toSet
    def named(f: DiscoveredFile, splits: Seq[RowGroupSplit]): Seq[RowGroupSplit] =
      if (heldTwice(f.path)) splits.map(_.copy(entry = f.entry)) else splits
    val partitions = new PartitionDirectories(config)
    // a file outside the partition layout fails here, named; one whose partition values no row
    // the query keeps can have is known at once, with no split: its footer is never read
    val (toRead, pruned) = fresh.partition(f =>
      ParquetPruning.partitionMayMatch(
        config.filters,
        config.partitionSchema,
        partitions.valuesOf(f.path, f.partitionValues)))
    pruned.foreach(remember)
    // a table's data file whose metadata gives its rows and event-time range is one split,
    // placed by that range without opening the file; the others' footers are read
    val (fromMetadata, withFooters) = toRead.partition(plannedWhole)
    val indexedFiles = fromMetadata.flatMap(f => named(f, RowGroups.wholeFile(f).toSeq))
    fromMetadata.foreach(remember)
    val footers =
      ListedFileReads.inParallel(
        withFooters,
        ParquetEnumerator.FooterThreads,
        "sluice-parquet-footer")(f => RowGroups.splitsOf(f, conf, config))
    // A file written in place has no footer until it is complete: monitored, it is tried again at
    // the next listing (NotReadyFiles says until when).
    val ready = footers
      .filter {
        case (_, Right(_)) => true
        case (f, Left(e)) =>
          !notReady.retryLater(
            f,
            s"cannot read the Parquet footer of file '${f.path}'",
            "it is not a complete Parquet file",
            e)
      }
      .collect { case (f, Right(splits)) => f -> named(f, splits) }
    val splits = (indexedFiles ++ ready.flatMap(_._2)).sortBy(s => (s.path, s.rowGroup))
    // files are known once their splits are made: a failure or a file not ready is listed again next time
    ready.foreach { case (f, _) => remember(f); notReady.ready(f.path) }
    // only once its files are known: a plan that failed is made again from the same version
    plan.flatMap(_.version).foreach(v => tableVersion = Some(v))
    val unindexed =
      if (indexed && config.timestampColumn.isDefined) splits.find(!_.indexed) else None
    unindexed.foreach { s =>
      indexed = false
      // said once, when it turns off: alignment still works, but from watermarks
      ParquetEnumerator.log.warn(
        s"${ParquetConfig.Context}: row group ${s.rowGroup} of file '${s.path}' has no statistics " +
          s"of timestampColumn '${config.timestampColumn.get}' (INT96 timestamps, or a writer that " +
          "writes none), so this source has no event-time index: its splits are read in path " +
          "order and aligned from watermarks, not placed by event time before they are read. " +
          "Write the column as an INT64 timestamp with statistics to have them placed.")
    }
    splits
  }

  /**
   * A file is known once its splits are made (or it makes none). Its deleted rows, statistics,
   * partition values and constants are not kept: its splits carry what they need of them, the state never
   * held them, and the driver should not hold every file's bitmap for the query's life.
   */
  private def remember(f: DiscoveredFile): Unit = {
    if (!known.contains(f.key)) entriesOf(f.path) += 1
    known(f.key) =
      f.copy(deleted = None, statistics = None, partitionValues = None, constants = Map.empty)
  }

  /**
   * Whether a table's data file is planned from its metadata as one split of the whole file,
   * unopened, rather than by its footer's row groups: only when that changes nothing but the
   * cost. Not with pushed filters (the footer's row-group statistics prune row groups the
   * table's file-level ones cannot), nor under watermark alignment: alignment reads a split
   * straddling its horizon whole, so a whole file would carry the watermark past the horizon by
   * the file's event-time span where a row group carries it by the row group's, and Spark's
   * watermark would then drop a lagging member's rows as late that the row groups keep.
   */
  private def plannedWhole(f: DiscoveredFile): Boolean =
    config.timestampColumn.isDefined && config.filters.isEmpty && !aligned &&
      f.statistics.isDefined

  // told by the runtime before it discovers splits; files planned before (a checkpoint's, when a
  // restart adds alignment) keep their splits, since offsets name them
  private var aligned = false
  override def alignedWithin(maxDriftMs: Long): Unit = aligned = true

  override def availablePositions(splits: Seq[(RowGroupSplit, Long)]): Map[String, Long] =
    splits.map { case (s, _) => s.splitId -> (s.firstRow + s.rowCount) }.toMap

  override def noMoreSplits: Boolean = config.monitorIntervalMs.isEmpty && listed

  override def metrics: Map[String, String] =
    notReady.metrics.map { case (k, v) => k -> (v.toInt + planWaits.fold(0)(_.size)).toString }

  override def hasEventTimeIndex: Boolean = config.timestampColumn.isDefined && indexed

  override def positionsBefore(
      ranges: Seq[SplitRange[RowGroupSplit]],
      eventTimeMs: Long): Map[String, Long] =
    wholeOrNothing(ranges)(_.maxEventTime.exists(_ < eventTimeMs))

  /** Statistics are per row group: a row inside one has no known event time. */
  override def exactEventTimeIndex: Boolean = false

  // the row group's smallest event time bounds the range's from below, however far it was read
  override def positionsThrough(
      ranges: Seq[SplitRange[RowGroupSplit]],
      eventTimeMs: Long): Map[String, Long] =
    wholeOrNothing(ranges)(_.minEventTime.exists(_ < eventTimeMs))

  /** Each range read to its end when `whole` holds for its row group (or it has no event times), else not at all. */
  private def wholeOrNothing(ranges: Seq[SplitRange[RowGroupSplit]])(
      whole: RowGroupSplit => Boolean): Map[String, Long] =
    ranges.map { r =>
      r.split.splitId -> (if (r.split.noEventTimes || whole(r.split)) r.until else r.from)
    }.toMap

  override def latestEventTimes(ranges: Seq[SplitRange[RowGroupSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).flatMap(r => r.split.maxEventTime.map(r.split.splitId -> _)).toMap

  /** The row group's smallest event time: exact for a range from its first row, a lower bound otherwise. */
  override def firstEventTimes(ranges: Seq[SplitRange[RowGroupSplit]]): Map[String, Long] =
    ranges.filterNot(_.isEmpty).flatMap(r => r.split.minEventTime.map(r.split.splitId -> _)).toMap

  override def snapshotState(): ParquetEnumeratorState =
    ParquetEnumeratorState(known.values.toSeq, listed, indexed, tableVersion, tableId)

  /** As for line files: the files read (a JSON array of paths) and their count, for a hybrid's next source. */
  override def endState(finished: Seq[SplitProgress]): EnumeratorEndState = {
    // a path a table holds twice is one file, named once
    val paths = known.keys.map(_._1).toSeq.distinct.sorted
    val files = ParquetEnumeratorStateSerializer.mapper.createArrayNode()
    paths.foreach(p => files.add(p))
    EnumeratorEndState(
      finished,
      Map("files" -> files.toString, "fileCount" -> paths.size.toString))
  }
}

private[connector] object ParquetEnumeratorStateSerializer
    extends VersionedSerializer[ParquetEnumeratorState] {

  /**
   * 2 added `tableVersion`; a version 1 state has none (a bounded table read, or files). 3 added
   * each file's `entry` and the `tableId`; an earlier state has neither (its files are known by
   * path, its table not at all).
   */
  override val version: Int = 3
  val mapper = new ObjectMapper()

  override def serialize(state: ParquetEnumeratorState): String = {
    val root = mapper.createObjectNode()
    root.put("listed", state.listed)
    root.put("indexed", state.indexed)
    state.tableVersion.foreach(v => root.put("tableVersion", v))
    state.tableId.foreach(id => root.put("tableId", id))
    val files = root.putArray("files")
    state.files.foreach { f =>
      val file = files
        .addObject()
        .put("path", f.path)
        .put("length", f.length)
        .put("modificationTime", f.modificationTime)
      f.entry.foreach(e => file.put("entry", e))
    }
    mapper.writeValueAsString(root)
  }

  override def deserialize(version: Int, text: String): ParquetEnumeratorState = {
    if (version > this.version) {
      throw VersionedSerializer.unsupported("Parquet enumerator state", version, this.version)
    }
    val root = mapper.readTree(text)
    val files = root
      .get("files")
      .asInstanceOf[ArrayNode]
      .elements()
      .asScala
      .map { n =>
        DiscoveredFile(
          n.get("path").asText,
          n.get("length").asLong,
          n.get("modificationTime").asLong,
          entry = Option(n.get("entry")).map(_.asText))
      }
      .toSeq
    ParquetEnumeratorState(
      files,
      root.get("listed").asBoolean,
      root.get("indexed").asBoolean,
      Option(root.get("tableVersion")).map(_.asLong),
      Option(root.get("tableId")).map(_.asText))
  }
}

private object ParquetEnumerator {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[ParquetEnumerator])

  /** Footers are small reads that mostly wait for storage: more at once than there are cores. */
  val FooterThreads = 8
}

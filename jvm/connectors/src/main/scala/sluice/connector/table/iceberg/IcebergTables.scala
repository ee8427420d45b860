package sluice.connector.table.iceberg

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.{Failure, Success, Try}
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}
import org.apache.iceberg.{BaseTable, DataOperations, DeleteFile, FileContent, FileFormat, FileScanTask, HasTableOperations, Snapshot, StaticTableOperations, Table, TableProperties}
import org.apache.iceberg.expressions.Expression
import org.apache.iceberg.hadoop.{HadoopFileIO, HadoopTables}
import org.apache.iceberg.io.CloseableIterable
import org.apache.iceberg.util.SnapshotUtil
import org.apache.spark.sql.types.DataType

import sluice.connector.file.{DiscoveredFile, NotReadyFiles}
import sluice.connector.file.parquet.PlannedFiles
import sluice.connector.table.{TableChanges, TableEventTimes}
import sluice.errors.SluiceError

/**
 * An Iceberg table and a snapshot of it, through Iceberg's own library: the table by its
 * directory (a Hadoop table: `metadata/version-hint.text`), by a metadata file (any catalog's,
 * e.g. pyiceberg's `table.metadata_location`) or by its identifier in a catalog given by
 * properties (`IcebergCatalogs`), and the snapshot's data files as Iceberg's scan
 * plans them (its partition and statistics pruning applied), with a timestampColumn each with
 * its event-time range from the manifests (`IcebergEventTimes`). Sluice never reads the metadata
 * or the manifests itself.
 */
private[iceberg] object IcebergTables {
  import IcebergConfig.Context

  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  /**
   * `use` of the table a config names: by its identifier in a catalog given by properties
   * (bounded by `catalogTimeoutMs`; `later`: it loaded before, when the source was built; the
   * catalog stays open while `use` runs), else by `load(location)`.
   */
  def withTable[T](
      table: String,
      catalog: Option[IcebergCatalogs.CatalogSpec],
      catalogTimeoutMs: Long,
      conf: Configuration,
      later: Boolean)(use: Table => T): T =
    catalog.fold(use(load(table, conf)))(
      IcebergCatalogs.withTable(_, table, conf, catalogTimeoutMs, later)(use))

  /**
   * `use` of the table as last committed (`loadLatest`, waiting with `metadataWaits`); a catalog
   * is asked for its current metadata again. None: the newest metadata file beside the one given
   * is not settled yet.
   */
  def withLatest[T](
      table: String,
      catalog: Option[IcebergCatalogs.CatalogSpec],
      catalogTimeoutMs: Long,
      conf: Configuration,
      metadataWaits: NotReadyFiles)(use: Table => Option[T]): Option[T] =
    catalog.fold(loadLatest(table, conf, metadataWaits).flatMap(use))(
      IcebergCatalogs.withTable(_, table, conf, catalogTimeoutMs, later = true)(use))

  def load(location: String, conf: Configuration): Table =
    try {
      if (isMetadataFile(location)) readMetadata(location, conf)
      else new HadoopTables(conf).load(location)
    } catch {
      case NonFatal(e) =>
        throw SluiceError.config(
          s"$Context: cannot load an Iceberg table from '$location': ${e.getMessage}. Give option " +
            "'table' the table's directory (a Hadoop table, with metadata/version-hint.text) or its current " +
            "metadata file (.../metadata/<version>-<uuid>.metadata.json, as a catalog names it: pyiceberg's " +
            "table.metadata_location, Spark's `SELECT * FROM t.metadata_log_entries`)." +
            (if (!(isMetadataFile(location) && notFound(e))) ""
             else
               " A query restarted from its checkpoint goes on where it stopped when given the table's " +
                 "current metadata file: a table removes its old metadata files after commits " +
                 "(write.metadata.delete-after-commit.enabled), among them the one a query was started with."),
          e)
    }

  /** Whether `e` says a file is not there (Iceberg's or Hadoop's way), not that it cannot be read. */
  private def notFound(e: Throwable): Boolean =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .take(10)
      .exists(c =>
        c.isInstanceOf[java.io.FileNotFoundException] ||
          c.isInstanceOf[org.apache.iceberg.exceptions.NotFoundException])

  /**
   * The table as last committed, for an unbounded read's later plans. A directory is loaded again
   * (Iceberg follows its version hint). A metadata file is one commit's: the newest beside it is
   * taken instead, by the version number that begins a catalog's metadata file names
   * (`<version>-<uuid>.metadata.json`; Hadoop tables' `v<version>.metadata.json`); Sluice asks
   * no catalog which one is current. A catalog records a metadata file as current only once it
   * is written whole and no other writer took its version first, but every writer's file is
   * visible beside the others (pyiceberg writes it in place on a local or network file system):
   * the newest version is settled when one file holds it and that file reads whole. Until then
   * the table is not taken (None: the plan plans nothing new, a later plan looks again) and
   * `waits` (`metadataWaits`, one per enumerator) waits for the version as a folder's files are
   * waited for: while any of its files changes, and `MetadataWriteGraceMs` by the driver's clock
   * once none changed (or once the newest was written that long before, beyond an allowance for
   * the clocks' difference, which a wait started afresh by a restart or by each `AvailableNow`
   * run needs); then the plan fails, naming each of its files.
   */
  def loadLatest(location: String, conf: Configuration, waits: NotReadyFiles): Option[Table] = {
    val named = new Path(location)
    val beside =
      if (versionOf(named.getName).isEmpty) Nil
      else
        named
          .getFileSystem(conf)
          .listStatus(named.getParent)
          .toSeq
          .flatMap(s => versionOf(s.getPath.getName).map(_ -> s))
    if (beside.isEmpty) {
      waits.retainFound(Nil)
      Some(load(location, conf))
    } else {
      val version = beside.map(_._1).max
      val newest = beside.collect { case (`version`, file) => file }.sortBy(_.getPath.getName)
      // the version is what is waited for: changed when any of its files changed
      val waited = DiscoveredFile(
        s"${named.getParent}/<version $version>",
        newest.map(_.getLen).sum,
        newest.map(_.getModificationTime).max)
      waits.retainFound(Seq(waited))
      val read = newest.map(file => file -> Try(readMetadata(file.getPath.toString, conf)))
      read match {
        case Seq((_, Success(table))) =>
          waits.ready(waited.path)
          Some(table)
        case _ =>
          val what =
            s"the newest metadata of table '$location' (version $version) does not settle " +
              s"which file is current: ${unsettled(read)}"
          val (why, cause) = read.collectFirst { case (_, Failure(e)) => e } match {
            case Some(e) => ("a file of it cannot be read (written in part, or unreadable)", e)
            case None =>
              (
                s"${read.size} files hold it, where a commit that lost its version to another writer's leaves one",
                new IllegalStateException(s"${read.size} metadata files of version $version"))
          }
          waits.retryLater(waited, what, why, cause)
          None
      }
    }
  }

  /** The files of one version, each whole or what reading it raised. */
  private def unsettled(read: Seq[(FileStatus, Try[Table])]): String =
    read
      .map {
        case (file, Success(_)) => s"'${file.getPath}' reads whole"
        case (file, Failure(e)) => s"'${file.getPath}' cannot be read (${e.getMessage})"
      }
      .mkString(", ")

  /**
   * How long the newest metadata's files may stay unsettled and unchanged (`loadLatest`): a
   * writer writes a few kilobytes of JSON, and a writer that lost its version to another writes
   * the next one, in far less.
   */
  val MetadataWriteGraceMs: Long = 60000L

  /** An enumerator's wait for the newest metadata of a table given by a metadata file to settle (`loadLatest`). */
  def metadataWaits(clock: () => Long): NotReadyFiles =
    new NotReadyFiles(
      Context,
      monitored = true,
      clock,
      MetadataWriteGraceMs,
      advice =
        "Sluice follows a table given by a metadata file by the one file that holds the newest " +
          "version, and asks no catalog which is current: a commit that failed (another writer took its " +
          "version) or was cut off leaves a file there that no catalog records. Remove the files no " +
          "catalog records, or give the table by its catalog (options catalog.<property>), which says " +
          "which metadata file is current, and restart the query with the table's current metadata " +
          "file or its catalog (it goes on from its checkpoint)",
      limitOption = None,
      writeClockSlackMs = Some(MetadataWriteGraceMs))

  /** The table as the metadata file at `location` records it, read now (Iceberg reads it lazily). */
  private def readMetadata(location: String, conf: Configuration): Table = {
    val operations = new StaticTableOperations(location, new HadoopFileIO(conf))
    operations.current()
    new BaseTable(operations, location)
  }

  // `<version>-<uuid>` or `v<version>`, with the codec of compressed metadata (`.gz`) before the
  // suffix or, as Iceberg named it before, after it; not a Hadoop table's commit in progress,
  // `<uuid>.metadata.json` (renamed once whole), whose uuid may begin with eight digits
  private val Uuid = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
  private val MetadataFileName =
    raw"(?:(\d+)-$Uuid|v(\d+))(?:\.[a-z0-9]+)?\.metadata\.json(?:\.gz)?".r

  /**
   * Whether `loadLatest` can follow the table at `location` to later commits: a directory, or a
   * metadata file whose name gives its version.
   */
  def followable(location: String): Boolean =
    !isMetadataFile(location) || versionOf(new Path(location).getName).isDefined

  /** A metadata file's name, also compressed: `.gz.metadata.json`, and the older `.metadata.json.gz`. */
  private def isMetadataFile(location: String): Boolean =
    location.endsWith(".metadata.json") || location.endsWith(".metadata.json.gz")

  private def versionOf(name: String): Option[Long] = name match {
    case MetadataFileName(catalogs, hadoop) => Option(catalogs).getOrElse(hadoop).toLongOption
    case _ => None
  }

  /** The snapshot a read of `config` reads: the one named, the one current at a time, or the current one (None: the table has none). */
  def snapshotOf(table: Table, config: IcebergConfig): Option[Snapshot] =
    (config.snapshotId, config.asOfTimestampMs) match {
      case (Some(id), _) =>
        Some(Option(table.snapshot(id)).getOrElse(throw SluiceError.config(
          s"$Context: table '${config.table}' has no snapshot $id (a query restarted from its " +
            "checkpoint reads the snapshot it started with; it may have expired since); its snapshots " +
            s"are ${table.snapshots.asScala.map(_.snapshotId).mkString(", ")}. Keep snapshots a " +
            "running query reads (expire_snapshots retain_last / older_than), or start the query on a " +
            "new checkpoint.")))
      case (None, Some(ms)) =>
        val id =
          try SnapshotUtil.snapshotIdAsOfTime(table, ms)
          catch {
            case e: IllegalArgumentException =>
              throw SluiceError.config(
                s"$Context: table '${config.table}' has no snapshot at or before $ms ms " +
                  s"(option '${IcebergConfig.AsOfTimestamp.name}'): ${e.getMessage}.",
                e)
          }
        Some(table.snapshot(id))
      case (None, None) => Option(table.currentSnapshot)
    }

  /** The table's `table-uuid` (`TableIdentity`), as its current metadata records it. */
  def uuidOf(table: Table): Option[String] = table match {
    case t: HasTableOperations => Option(t.operations.current.uuid)
    case t => Try(t.uuid.toString).toOption
  }

  def formatVersion(table: Table): Int = table match {
    case t: HasTableOperations => t.operations.current.formatVersion
    case _ => 1
  }

  /**
   * The snapshot's data files that rows passing `filter` (its columns named as the table's current
   * schema names them) may be in, by path, each with the rows
   * its position delete files delete (`IcebergPositionDeletes`, read now, on the driver) and,
   * given `eventTimes`, the event-time column's range its manifest entry records. A file Sluice
   * would read wrong is refused, naming the table feature (`refuseUnread`).
   */
  def dataFiles(
      table: Table,
      snapshot: Snapshot,
      filter: Expression,
      caseSensitive: Boolean,
      columns: Map[Int, DataType],
      eventTimes: Option[IcebergEventTimes] = None): Seq[DiscoveredFile] = {
    // the snapshot first: a scan resolves the names includeColumnStats takes in its schema, the
    // current table's until useSnapshot gives it the snapshot's (a column dropped since would not
    // be found). Its filter is bound otherwise: by name in the table's current schema (that of
    // the partition specs the manifests are read with), whatever the snapshot, then evaluated by
    // the field ids bound; so `filter` names columns as the current schema does
    // (IcebergSource.icebergFilter)
    val scan = table.newScan().useSnapshot(snapshot.snapshotId)
    // a scan drops the manifests' column statistics unless asked to keep them (of this column
    // only: a wide table's statistics of every file would take the driver's memory)
    val tasks = eventTimes
      .fold(scan)(e => scan.includeColumnStats(java.util.Collections.singletonList(e.column)))
      .filter(filter)
      .caseSensitive(caseSensitive)
      .planFiles()
    filesOf(
      table,
      s"snapshot ${snapshot.snapshotId}",
      Seq(snapshot.snapshotId -> tasks),
      columns,
      eventTimes)
  }

  /**
   * The table's snapshots committed after `after` (`PlannedFiles.EmptyTable`: after none) up
   * to its current one, checked one by one in commit order: an `append` is read, a `replace`
   * (compaction: the same rows in other files) skipped, an `overwrite` or `delete` fails the
   * query naming it unless `skipChanges` (`TableChanges`). The data files each append added are
   * planned as `dataFiles` plans a snapshot's, by iceberg-core's incremental append scan of that
   * snapshot alone (it reads the append's manifests only), each the entry of the append that
   * added it: an append of a path an earlier snapshot appended too is read again, as Iceberg's
   * scans read both entries. None when nothing was committed since.
   */
  def appendedSince(
      table: Table,
      location: String,
      after: Long,
      filter: Expression,
      caseSensitive: Boolean,
      skipChanges: Boolean,
      columns: Map[Int, DataType],
      eventTimes: Option[IcebergEventTimes]): Option[(Seq[DiscoveredFile], Long)] =
    Option(table.currentSnapshot).filter(_.snapshotId != after).map { current =>
      val from = Option(after).filter(_ != PlannedFiles.EmptyTable)
      from.foreach { id =>
        if (!SnapshotUtil.isAncestorOf(table, current.snapshotId, id))
          throw SluiceError.sourceFault(
            s"$Context: snapshot $id of table '$location', the last this query planned, is not an " +
              s"ancestor of the table's current snapshot ${current.snapshotId}: the table was rolled " +
              "back or its snapshots expired, or (a table given by a metadata file) the snapshot came from " +
              "a metadata file whose commit failed, another writer's taking its version; so what was " +
              "committed after it cannot be told. Keep the snapshots a running query reads " +
              "(expire_snapshots retain_last / older_than), give a table that concurrent writers commit " +
              "to by its catalog, and read the table again on a new checkpoint.")
      }
      val committed = SnapshotUtil
        .ancestorsBetween(table, current.snapshotId, from.map(Long.box).orNull)
        .asScala
        .toSeq
        .reverse
      // started on an empty table, the history must reach back to the first snapshot: snapshots
      // expired before the first plan appended files the incremental scan no longer sees
      if (from.isEmpty) committed.headOption.filter(_.parentId != null).foreach { oldest =>
        throw SluiceError.sourceFault(
          s"$Context: this query started on table '$location' while it had no snapshot, and the " +
            s"oldest snapshot the table keeps (${oldest.snapshotId}) follows snapshots expired since: " +
            "the files they appended cannot be told from the others. Read the table again on a new " +
            "checkpoint (its start is then the current snapshot, read whole).")
      }
      val appends = committed.filter { s =>
        s.operation match {
          case DataOperations.APPEND => true
          case DataOperations.REPLACE => false
          case op @ (DataOperations.OVERWRITE | DataOperations.DELETE) =>
            if (!skipChanges)
              throw TableChanges.refused(Context, location, s"snapshot ${s.snapshotId}", op)
            log.warn(
              s"$Context: snapshot ${s.snapshotId} of table '$location' ($op) skipped with its " +
                s"added rows ('${TableChanges.SkipChanges.name}'); rows it deletes that were read stay read.")
            false
          case op =>
            throw SluiceError.sourceFault(
              s"$Context: snapshot ${s.snapshotId} of table '$location' has operation '$op', which " +
                "Sluice does not know: it cannot tell whether it only appends. Read the table bounded " +
                "from a snapshot after it, on a new checkpoint.")
        }
      }
      val files =
        if (appends.isEmpty) Nil
        else {
          // one scan per append, so that each file is known by the snapshot that appended it;
          // planning reads the append's manifest list, so a later one may fail: the plans made
          // before it are closed (filesOf closes them all once they are made)
          val tasks = mutable.ArrayBuffer[(Long, CloseableIterable[FileScanTask])]()
          try
            appends.foreach { s =>
              val scan = table
                .newIncrementalAppendScan()
                .fromSnapshotInclusive(s.snapshotId)
                .toSnapshot(s.snapshotId)
              tasks += s.snapshotId -> eventTimes
                .fold(scan)(e =>
                  scan.includeColumnStats(java.util.Collections.singletonList(e.column)))
                .filter(filter)
                .caseSensitive(caseSensitive)
                .planFiles()
            }
          catch {
            case e: Throwable =>
              tasks.foreach { case (_, planned) =>
                try planned.close()
                catch { case NonFatal(c) => e.addSuppressed(c) }
              }
              throw e
          }
          val label =
            s"snapshots ${appends.map(_.snapshotId).mkString(", ")}"
          filesOf(table, label, tasks.toSeq, columns, eventTimes)
        }
      (files, current.snapshotId)
    }

  /**
   * The planned tasks' data files (`dataFiles`), `which` naming the snapshots they are of, each
   * with its entry (`DiscoveredFile.entry`): `snapshot=<id>` of the snapshot whose plan `tasks`
   * are (the one read, or the append that added it), and `snapshot=<id>.<n>` for the n-th entry
   * of a path that plan holds more than once (Iceberg's scan gives a file appended twice twice).
   */
  private def filesOf(
      table: Table,
      which: String,
      tasks: Seq[(Long, CloseableIterable[FileScanTask])],
      columns: Map[Int, DataType],
      eventTimes: Option[IcebergEventTimes]): Seq[DiscoveredFile] = {
    // files imported from outside Iceberg (add_files, migrate, snapshot of a Hive table) carry no
    // field ids, which Sluice finds columns by (Iceberg maps names to ids through the mapping)
    Option(table.properties.get(TableProperties.DEFAULT_NAME_MAPPING)).foreach { _ =>
      tasks.foreach(_._2.close())
      throw SluiceError.config(
        s"$Context: table '${table.name}' has a name mapping (${TableProperties.DEFAULT_NAME_MAPPING}): " +
          "some of its data files were imported without Iceberg's field ids (add_files, migrate), which " +
          "Sluice finds a file's columns by (it does not map names to ids through the mapping yet). " +
          "Rewrite the table's data files (rewrite_data_files, which writes them with " +
          s"field ids), then remove the table property ${TableProperties.DEFAULT_NAME_MAPPING}, which Sluice " +
          "refuses while it is set.")
    }
    val planned =
      try
        tasks.flatMap { case (snapshot, of) =>
          val entries = of.asScala.toSeq.map { task =>
            val deletes = task.deletes.asScala.toSeq
            refuseUnread(table, which, task.file, deletes)
            (
              task.file,
              deletes,
              eventTimes.flatMap(_.of(task.file)),
              IcebergConstants.of(table, task, columns))
          }
          // a path's entries in the order they were committed (the plan's order is its threads')
          entries
            .groupBy(_._1.location)
            .values
            .flatMap { same =>
              same.sortBy(e => entryOrder(e._1)).zipWithIndex.map { case (e, n) =>
                val entry = s"snapshot=$snapshot" + (if (n == 0) "" else s".${n + 1}")
                (entry, e)
              }
            }
            .toSeq
            .sortBy(e => (e._2._1.location, e._1))
        }
      finally tasks.foreach(_._2.close())
    val deleted = IcebergPositionDeletes.of(
      planned.map { case (entry, (file, deletes, _, _)) =>
        (file.location, entry) -> (file.location, file.recordCount, deletes)
      }.toMap,
      table.io)
    val files = planned.map { case (entry, (file, _, statistics, constants)) =>
      // the modification time is the file system's: the Parquet reader checks the file is unchanged
      DiscoveredFile(
        file.location,
        file.fileSizeInBytes,
        -1L,
        deleted.get((file.location, entry)),
        statistics,
        Some(entry),
        constants = constants)
    }
    eventTimes.foreach { e =>
      TableEventTimes.warnWithoutStatistics(
        Context,
        table.name,
        which,
        e.column,
        files.filter(_.statistics.isEmpty).map(_.path),
        IcebergEventTimes.advice(e.column))
    }
    files
  }

  /**
   * Orders the entries of one path in a plan as they were committed: by the sequence numbers of
   * the commits that added them (format v2 on), then where the manifests hold them (v1 has no
   * sequence numbers; a snapshot's manifests do not change), so the same plan names them alike.
   */
  private def entryOrder(f: org.apache.iceberg.DataFile): (Long, Long, String, Long) =
    (
      Option(f.dataSequenceNumber).fold(0L)(_.longValue),
      Option(f.fileSequenceNumber).fold(0L)(_.longValue),
      Option(f.manifestLocation).getOrElse(""),
      Option(f.pos).fold(0L)(_.longValue))

  /**
   * Refuses a data file Sluice would read wrong, naming the table feature: one not in Parquet,
   * or with delete files Sluice does not apply (equality deletes, position deletes in Avro or
   * ORC), whose deleted rows it must never read silently.
   */
  private def refuseUnread(
      table: Table,
      which: String,
      file: org.apache.iceberg.DataFile,
      deletes: Seq[DeleteFile]): Unit = {
    if (file.format != FileFormat.PARQUET)
      throw SluiceError.config(
        s"$Context: data file '${file.location}' of $which is ${file.format}: " +
          "Sluice reads Iceberg data files in Parquet only (the format Iceberg writes by default). " +
          "Rewrite the table's data files as Parquet (write.format.default=parquet, then rewrite_data_files).")
    deletes.find(d => !IcebergPositionDeletes.applied(d)).foreach { d =>
      val feature = d.content match {
        case FileContent.EQUALITY_DELETES =>
          "equality deletes (row-level deletes by column values)"
        case _ =>
          s"position deletes in ${d.format} (Sluice reads position delete files in Parquet)"
      }
      throw SluiceError.config(
        s"$Context: $which of table '${table.name}' has $feature on data file " +
          s"'${file.location}' (delete file '${d.location}'). Sluice applies Iceberg position deletes " +
          "in Parquet and deletion vectors only, and never reads deleted rows: compact the table " +
          "(rewrite_data_files with delete files applied), write with write.delete.mode=copy-on-write " +
          "or with Parquet position deletes (write.delete.format.default=parquet), or read a snapshot " +
          s"from before the deletes (option '${IcebergConfig.SnapshotId.name}').")
    }
  }
}

package sluice.connector.table.delta

import java.net.URI

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.jdk.OptionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import io.delta.kernel.{Snapshot, Table, TableManager}
import io.delta.kernel.CommitRangeBuilder.CommitBoundary
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.engine.Engine
import io.delta.kernel.expressions.Predicate
import io.delta.kernel.internal.DeltaLogActionUtils.DeltaAction
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.internal.actions.DeletionVectorDescriptor
import io.delta.kernel.internal.deletionvectors.DeletionVectorUtils
import io.delta.kernel.internal.fs.{Path => KernelPath}
import io.delta.kernel.internal.util.VectorUtils
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils

import sluice.connector.file.{DeletedRows, DiscoveredFile, ListedFileReads}
import sluice.connector.table.{TableChanges, TableEventTimes, TableIdentity}
import sluice.errors.SluiceError

/**
 * A Delta table and a snapshot of it, through Delta Kernel (its default engine on the session's
 * Hadoop configuration): the snapshot by version, by time or the latest, and its data files as
 * Kernel's scan gives them (`add.path`, `partitionValues`, `deletionVector`, and with a
 * timestampColumn the event-time range of the log's `stats`: `DeltaEventTimes`). Sluice never
 * reads the log itself.
 */
private[delta] object DeltaTables {
  import DeltaConfig.Context
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  /** Reader features whose rows Sluice's Parquet path would read wrong: refused by name. */
  private val refusedFeatures = Map(
    "typeWidening" -> "type widening (a column's type changed after files were written)",
    "typeWidening-preview" -> "type widening (a column's type changed after files were written)")

  def engine(conf: Configuration): Engine = DefaultEngine.create(conf)

  /** The snapshot a read of `table` reads: a version, the one current at a time, or the latest. */
  def snapshot(
      engine: Engine,
      location: String,
      version: Option[Long],
      asOfMs: Option[Long]): Snapshot = {
    val table =
      try Table.forPath(engine, location)
      catch {
        case NonFatal(e) =>
          throw SluiceError.config(
            s"$Context: cannot open a Delta table at '$location': ${e.getMessage}. Give option " +
              "'table' the table's directory (the one holding _delta_log/).",
            e)
      }
    try
      (version, asOfMs) match {
        case (Some(v), _) => table.getSnapshotAsOfVersion(engine, v)
        case (None, Some(ms)) => table.getSnapshotAsOfTimestamp(engine, ms)
        case _ => table.getLatestSnapshot(engine)
      }
    catch {
      case NonFatal(e) =>
        // a version above the latest was never written, or was the version of a table deleted
        // and created again there since a definition resolved it (a DataFrame started again
        // keeps the version it resolved; its checkpoint, if any, is the old table's)
        for (v <- version; latest <- Try(table.getLatestSnapshot(engine).getVersion).toOption
          if latest < v)
          throw SluiceError.config(
            s"$Context: Delta table '$location' is at version $latest, below version $v of option " +
              s"'${DeltaConfig.VersionAsOf.name}': a Delta table's versions only grow, so the table " +
              "there was deleted and created again since the version was resolved (a DataFrame " +
              "started again keeps the version it resolved), or that version was never written. " +
              "Define the read again to read this table (a query's checkpoint of the old table " +
              "cannot go on: start it on a new checkpoint), or name a version this table has.",
            e)
        val which = version
          .map(v => s"version $v (option '${DeltaConfig.VersionAsOf.name}')")
          .orElse(asOfMs.map(ms =>
            s"the version current at $ms ms (option '${DeltaConfig.AsOfTimestamp.name}')"))
          .getOrElse("its latest version")
        throw SluiceError.config(
          s"$Context: cannot read $which of Delta table '$location': ${e.getMessage}. Give the " +
            "directory of a Delta table (with _delta_log/) and a version it still keeps.",
          e)
    }
  }

  /** The table's `metaData.id` at the snapshot (`TableIdentity`): set when the table is created. */
  def idOf(snapshot: Snapshot): Option[String] = Option(snapshot.getMetadata.getId)

  /**
   * Refuses a snapshot whose rows Sluice would read wrong, naming the table feature: type
   * widening. Deletion vectors are applied (`dataFiles`), column mapping is read
   * (`DeltaColumnMapping`).
   */
  def refuseUnsupported(snapshot: Snapshot, location: String): Unit = {
    val features = snapshot.getProtocol.getReaderAndWriterFeatures.asScala
    features.flatMap(f => refusedFeatures.get(f).map(f -> _)).headOption.foreach {
      case (f, what) =>
        throw SluiceError.config(
          s"$Context: Delta table '$location' (version ${snapshot.getVersion}) has table feature " +
            s"'$f': $what, which Sluice does not read yet. Rewrite the table's data files " +
            "(e.g. an OPTIMIZE that rewrites all of them) or read a copy of it.")
    }
  }

  /**
   * The snapshot's data files that rows passing `filter` may be in (Kernel prunes by partition
   * values and the log's column statistics, resolving a column mapping's physical names
   * itself), by absolute path. A data file's deletion vector is loaded here, on the driver, as
   * the rows its splits never give (`DiscoveredFile.deleted`, carried in the offset log as
   * Iceberg's deletes are). Partition values: `partitionValues`.
   */
  def dataFiles(
      engine: Engine,
      snapshot: Snapshot,
      location: String,
      partitionColumns: Seq[String],
      filter: Option[Predicate],
      eventTimes: Option[DeltaEventTimes] = None,
      mapping: DeltaColumnMapping = DeltaColumnMapping.Off): Seq[DiscoveredFile] = {
    def planned(p: Option[Predicate]) =
      scan(engine, snapshot, location, partitionColumns, p, eventTimes, mapping)
    val files = filter match {
      case None => planned(None)
      case Some(p) =>
        // pruning is an optimisation: a predicate Kernel cannot evaluate reads every file instead
        try planned(Some(p))
        catch {
          case NonFatal(e) if !e.isInstanceOf[SluiceError] =>
            log.warn(
              s"$Context: Delta Kernel cannot prune the files of '$location' by $p " +
                s"(${e.getMessage}); every data file is planned, and the filter applied to rows.")
            planned(None)
        }
    }
    eventTimes.foreach(warnUnindexed(location, s"version ${snapshot.getVersion}", files, _))
    files
  }

  /** One warning naming the files the log gives no usable statistics of the event-time column for. */
  private def warnUnindexed(
      location: String,
      which: String,
      files: Seq[DiscoveredFile],
      e: DeltaEventTimes): Unit =
    TableEventTimes.warnWithoutStatistics(
      Context,
      location,
      which,
      e.column,
      files
        .filter(f =>
          f.statistics.isEmpty && e.unreadableValue(f.path).isEmpty && !e.countsNoRows(f.path))
        .map(_.path),
      DeltaEventTimes.advice(e.column),
      files.flatMap(f => e.unreadableValue(f.path).map(f.path -> _)),
      files.filter(f => f.statistics.isEmpty && e.countsNoRows(f.path)).map(_.path))

  /**
   * The versions committed after `after` up to the latest, read from the log by Kernel
   * (`CommitRange`) and each checked as Delta's own streaming source checks a commit: one that
   * removes no file with a data change is an append, the files it adds with a data change read
   * (files added without one, by OPTIMIZE or a compaction, hold rows already read); one that
   * removes files with a data change (DELETE, UPDATE, MERGE, an overwrite; a deletion vector is
   * added by removing the file's entry and adding it again with the vector) fails the query
   * naming it, unless `skipChanges` skips it whole (Delta's `skipChangeCommits`). The added files
   * are planned as `dataFiles` plans a version's: partition directories checked against the log,
   * event-time ranges from their statistics. Each is known by the version that added it
   * (`DiscoveredFile.entry`): a path removed and added again later is read again, as Delta's
   * own streaming source reads every `add` with a data change. None when no version is new.
   * The table must still be the one `tableId` names (`TableIdentity`), if given.
   */
  def appendedSince(
      engine: Engine,
      location: String,
      after: Long,
      partitionColumns: Seq[String],
      skipChanges: Boolean,
      eventTimeColumn: Option[String],
      tableId: Option[String] = None,
      mapping: DeltaColumnMapping = DeltaColumnMapping.Off)
      : Option[(Seq[DiscoveredFile], Long)] = {
    val latest = snapshot(engine, location, None, None)
    // a table created again there since numbers its versions from 0 again: checked first
    TableIdentity.check(Context, location, "metaData.id", "versions", tableId, idOf(latest))
    // a live table's versions only grow: one below the version planned last was created again,
    // which a checkpoint that kept no identity (an earlier Sluice's) cannot tell by its id; read
    // on, its versions up to that one would be skipped without a word
    if (latest.getVersion < after)
      throw SluiceError.sourceFault(
        s"$Context: table '$location' is at version ${latest.getVersion}, below version $after " +
          "this query planned last: a Delta table's versions only grow, so it was deleted and " +
          "created again since. Start the query on a new checkpoint to read this table.")
    if (latest.getVersion <= after) None
    else {
      // a feature enabled since the start (type widening) is refused as at the start, and so
      // is a change of column mapping, or of a mapped column, that new files would be misread by
      refuseUnsupported(latest, location)
      DeltaColumnMapping.checkUnchanged(mapping, latest, location)
      // a column dropped since has no statistics in new files: their footers index them
      val eventTimes = eventTimeColumn
        .filter(latest.getSchema.indexOf(_) >= 0)
        .map(c => new DeltaEventTimes(latest.getSchema, c, mapping.physical(c)))
      val range =
        try
          TableManager
            .loadCommitRange(location, CommitBoundary.atVersion(after + 1))
            .withEndBoundary(CommitBoundary.atVersion(latest.getVersion))
            .build(engine)
        catch {
          case NonFatal(e) =>
            throw SluiceError.sourceFault(
              s"$Context: the commits of Delta table '$location' after version $after, the last this " +
                s"query planned, cannot be read (${e.getMessage}): its log no longer keeps them " +
                "(delta.logRetentionDuration, 30 days by default), so what they changed cannot be told. " +
                "Keep the log of versions a running query has not read yet, or read the table again on " +
                "a new checkpoint.",
              e)
        }
      val wanted = Set(DeltaAction.ADD, DeltaAction.REMOVE, DeltaAction.COMMITINFO).asJava
      val files = mutable.ArrayBuffer[DiscoveredFile]()
      val commits = range.getCommitActions(engine, wanted)
      try
        commits.asScala.foreach { commit =>
          try {
            val change = DeltaCommit.of(commit)
            if (change.removesData) {
              val which = s"version ${commit.getVersion}"
              if (!skipChanges)
                throw TableChanges.refused(Context, location, which, change.operation)
              log.warn(
                s"$Context: $which of Delta table '$location' (${change.operation}) skipped with " +
                  s"its added rows ('${TableChanges.SkipChanges.name}'); rows it deletes that were " +
                  "read stay read.")
            } else
              files ++= change.added.map { add =>
                // the log keeps a path URI-encoded (a partition value's space is %20): decoded
                // as Kernel's scan decodes it, or an escaped partition's file is not found
                val path =
                  new KernelPath(
                    new KernelPath(latest.getPath),
                    new KernelPath(URI.create(add.getPath))).toString
                val logged =
                  VectorUtils.toJavaMap[String, String](add.getPartitionValues).asScala.toMap
                DiscoveredFile(
                  path,
                  add.getSize,
                  -1L,
                  statistics = eventTimes.flatMap(_.of(path, add.getStatsJson.toScala)),
                  entry = Some(s"version=${commit.getVersion}"),
                  partitionValues =
                    partitionValues(path, partitionColumns, logged, location, mapping))
              }
          } finally commit.close()
        }
      finally commits.close()
      val which = s"versions ${after + 1} to ${latest.getVersion}"
      eventTimes.foreach(warnUnindexed(location, which, files.toSeq, _))
      Some(files.toSeq -> latest.getVersion)
    }
  }

  private def scan(
      engine: Engine,
      snapshot: Snapshot,
      location: String,
      partitionColumns: Seq[String],
      filter: Option[Predicate],
      eventTimes: Option[DeltaEventTimes],
      mapping: DeltaColumnMapping): Seq[DiscoveredFile] = {
    val files = mutable.ArrayBuffer[DiscoveredFile]()
    val vectors = mutable.HashMap[String, DeletionVectorDescriptor]()
    val builder = filter.foldLeft(snapshot.getScanBuilder)(_.withFilter(_))
    // the log's statistics come with the scan files only when asked for
    val batches = builder.build().getScanFiles(engine, eventTimes.isDefined)
    try
      batches.asScala.foreach { batch =>
        val rows = batch.getRows
        try
          rows.asScala.foreach { row =>
            val status = InternalScanFileUtils.getAddFileStatus(row)
            val logged = InternalScanFileUtils.getPartitionValues(row).asScala.toMap
            files += DiscoveredFile(
              status.getPath,
              status.getSize,
              -1L,
              statistics = eventTimes.flatMap(_.of(row)),
              entry = Some(s"version=${snapshot.getVersion}"),
              partitionValues =
                partitionValues(status.getPath, partitionColumns, logged, location, mapping))
            Option(InternalScanFileUtils.getDeletionVectorDescriptorFromRow(row)).foreach {
              vectors(status.getPath) = _
            }
          }
        finally rows.close()
      }
    finally batches.close()
    if (vectors.isEmpty) files.toSeq
    else {
      val deleted = deletedRows(engine, snapshot, location, vectors.toMap)
      files.map(f => f.copy(deleted = deleted.get(f.path))).toSeq
    }
  }

  /**
   * The rows each data file's deletion vector deletes, loaded by Delta Kernel
   * (`DeletionVectorUtils`: an inline vector from the log, one stored in a file of the table read
   * at its offset and its checksum checked), on the driver, several files at once. What they
   * hold is Kernel's count of row indexes in the data file, the positions Sluice's Parquet path
   * counts (`DeletedRows`), and must be as many as the log says the vector deletes.
   */
  private def deletedRows(
      engine: Engine,
      snapshot: Snapshot,
      location: String,
      vectors: Map[String, DeletionVectorDescriptor]): Map[String, DeletedRows] = {
    val tablePath = snapshot.getPath
    ListedFileReads
      .inParallel(
        vectors.keys.toSeq.sorted.map(DiscoveredFile(_, 0L, -1L)),
        8,
        "sluice-delta-dv") { f =>
        val dv = vectors(f.path)
        val rows = DeletionVectorUtils.loadNewDvAndBitmap(engine, tablePath, dv)._2.toArray
        if (rows.length != dv.getCardinality)
          throw new IllegalStateException(
            s"it holds ${rows.length} rows where the log says ${dv.getCardinality}")
        rows.find(r => r < 0 || r > Int.MaxValue).foreach { r =>
          throw new IllegalStateException(
            s"it deletes row $r, past the 2^31 rows Sluice counts a data file's deleted rows in")
        }
        DeletedRows.of(rows.iterator)
      }
      .map {
        case (f, Right(rows)) => f.path -> rows
        case (f, Left(e)) =>
          val dv = vectors(f.path)
          val where =
            if (dv.isInline) "inline in the log"
            else s"in '${Try(dv.getAbsolutePath(tablePath)).getOrElse(dv.getPathOrInlineDv)}'"
          throw SluiceError.sourceFault(
            s"$Context: the deletion vector of data file '${f.path}' in version ${snapshot.getVersion} " +
              s"of Delta table '$location' ($where, ${dv.getCardinality} rows) cannot be read: " +
              s"${Option(e.getCause).fold(e.getMessage)(c => s"${e.getMessage}: ${c.getMessage}")}. " +
              "The rows it deletes are part of the version: read a version whose files are all kept.",
            e)
      }
      .toMap
  }

  /**
   * A data file's partition values. Without column mapping they are read from the file's
   * `name=value` directories by the Parquet path, as every Delta writer lays files out then; each
   * is checked here against the value the log records (`logged`), and a file whose directories
   * do not say the same is refused, named (None: from the directories). Under column mapping
   * writers put files in directories that do not name them (delta-rs and Delta Spark: random
   * two-character prefixes), and Delta's protocol says a file's values are the log's, keyed by
   * physical names: those, by the source's column names (a column the log gives no value of is
   * null, as an empty value is).
   */
  private def partitionValues(
      file: String,
      columns: Seq[String],
      logged: Map[String, String],
      location: String,
      mapping: DeltaColumnMapping): Option[Map[String, Option[String]]] =
    if (columns.isEmpty) None
    else if (!mapping.enabled) {
      checkDirectories(file, columns, logged, location)
      None
    } else
      Some(columns.map { c =>
        val physical = mapping.physical(c)
        c -> logged.find(_._1.equalsIgnoreCase(physical)).flatMap(e => Option(e._2))
      }.toMap)

  /** The partition values the file's directories give (Hive-style) must be those the log records. */
  private def checkDirectories(
      file: String,
      columns: Seq[String],
      logged: Map[String, String],
      location: String): Unit = if (columns.nonEmpty) {
    val fromPath = mutable.Map[String, String]()
    var dir = new Path(file).getParent
    while (dir != null && dir.getName.contains('=')) {
      val name = dir.getName
      val eq = name.indexOf('=')
      fromPath.getOrElseUpdate(
        ExternalCatalogUtils.unescapePathName(name.substring(0, eq)).toLowerCase,
        ExternalCatalogUtils.unescapePathName(name.substring(eq + 1)))
      dir = dir.getParent
    }
    columns.foreach { c =>
      val inLog = logged.find(_._1.equalsIgnoreCase(c)).flatMap(e => Option(e._2))
      val inPath = fromPath.get(c.toLowerCase)
      val same = (inLog, inPath) match {
        case (None | Some(""), Some(ExternalCatalogUtils.DEFAULT_PARTITION_NAME)) => true
        // Delta's protocol says an empty value is null, which a `name=` directory would read as ""
        case (Some(""), _) => false
        case (Some(a), Some(b)) => a == b
        case _ => false
      }
      if (!same)
        throw SluiceError.config(
          s"$Context: data file '$file' of Delta table '$location' has partition value " +
            s"${inLog.fold("null")("'" + _ + "'")} of column '$c' in the table's log, but its directories say " +
            s"${inPath.fold("nothing")("'" + _ + "'")}. Sluice reads partition values from `name=value` " +
            "directories (as Delta writers lay files out without column mapping) and reads no file whose " +
            "directories disagree with the log: rewrite the table with its usual writer.")
    }
  }
}

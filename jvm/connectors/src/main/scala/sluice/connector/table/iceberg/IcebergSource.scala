package sluice.connector.table.iceberg

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.{DataType, StructType}

import sluice.api._
import sluice.config.RecordLayout
import sluice.connector.file.{DiscoveredFile, FileConfig, NotReadyFiles}
import sluice.connector.file.parquet._
import sluice.connector.table.{TableChanges, TableDataFiles, TableIdentity}

/**
 * A snapshot of an Iceberg table (`source` = `iceberg`), bounded, or with `monitorIntervalMs`
 * unbounded: the snapshots committed after it are planned at that interval, the data files their
 * appends added read as new splits (`IcebergTables.appendedSince`; what is not an append fails
 * the query or, with `skipChanges`, is skipped). Its data files as Iceberg's own
 * library plans them (partition and statistics pruning from the filters Spark pushes), read as the
 * Parquet source reads files: one split per row group, positions are row indexes in the file (a
 * restart resumes at the exact row), column batches where Spark would read them, only the columns
 * a query needs, row groups skipped by their statistics. With a `timestampColumn`, each data
 * file's bounds of it in the manifests are its event-time index, so planning opens no data file
 * and a file is one split (`ParquetEnumerator`); a file whose manifest entry has no bounds of the
 * column is split by row group and indexed by its footer's statistics, with a warning. Rows are the table's columns (its schema at the
 * snapshot) then `_split`, `_position` and `_timestamp` (the data file's modification time).
 *
 * Position deletes (format v2, in Parquet) and deletion vectors (v3) are applied: the rows they
 * delete are read when the snapshot is planned and never given (`IcebergPositionDeletes`,
 * `RowGroupSplit.deleted`: a row group's split carries its share, a file planned whole all of it). Other delete files (equality deletes) are refused when the source is built
 * (`IcebergTables.dataFiles`): they would read rows Iceberg says are not the table's. Columns are
 * found by field id, as Iceberg finds them: in the files when they are read
 * (`IcebergSchema.withFieldIds`: a column renamed since a file was written reads under its name
 * here, a column given a dropped column's name reads null from the files written before), in each
 * file's footer when its row groups are pruned by statistics or placed in event time
 * (`ParquetConfig.matchFieldIds`), and in the table's current schema when a plan asks Iceberg to
 * prune files or keep the event-time column's bounds (`icebergFilter`, `IcebergEventTimes.byId`).
 */
final class IcebergSource private (val config: IcebergConfig, protected val rows: ParquetRows)
    extends RowGroupSource {

  override protected def parquet: ParquetConfig = config.parquet

  override def sourceType: String = IcebergConfig.Type

  override val schema: StructType = IcebergSource.schemaOf(parquet, RecordLayout.Full)
  override def schema(layout: RecordLayout): StructType = IcebergSource.schemaOf(parquet, layout)

  override def options: Map[String, String] = config.options + ("source" -> sourceType)

  /**
   * The snapshot's data files rows passing the pushed filters may be in, planned on the driver
   * once per source value: `fromOptions` plans the unfiltered one to refuse what cannot be read
   * before a query starts, and a source with pushed filters (`withFilters`) plans its own.
   */
  @transient private lazy val planned: Seq[DiscoveredFile] = config.snapshot match {
    case None => Nil
    case Some(id) =>
      IcebergTables.withTable(
        config.table,
        config.catalog,
        config.catalogTimeoutMs,
        catalogConf(rows.hadoopConf),
        later = true) { table =>
        val snapshot = table.snapshot(id)
        // the event-time index from the manifests' bounds of the column, in the snapshot's schema
        // (the scan's, whose includeColumnStats takes its names); with pushed filters every file
        // is planned by its footer's row groups: not asked for then
        val eventTimes = eventTimeId.filter(_ => parquet.filters.isEmpty).flatMap { fieldId =>
          val schema = Option(snapshot.schemaId).map(table.schemas.get(_)).getOrElse(table.schema)
          IcebergEventTimes.byId(schema, fieldId)
        }
        IcebergTables.dataFiles(
          table,
          snapshot,
          icebergFilter(table),
          parquet.caseSensitive,
          columnTypes,
          eventTimes)
      }
  }

  /** Each data column's Iceberg field id, which its files' columns are read by. */
  private def fieldIds: Map[String, Int] = IcebergSchema.fieldIdsOf(parquet.fileDataSchema)

  /** The type of each field of the source's schema by field id (`IcebergConstants`). */
  private def columnTypes: Map[Int, DataType] = IcebergSchema.typesById(parquet.fileDataSchema)

  /** The field id of the `timestampColumn`, if any. */
  private def eventTimeId: Option[Int] = parquet.timestampColumn.flatMap(fieldIds.get)

  /**
   * The pushed filters as Iceberg's scan filter for `table`, by field id: Iceberg binds a scan's
   * filter by name in the table's current schema (its partition specs' schema: the manifests'
   * partition and metrics evaluators), whatever snapshot the scan reads, and then prunes by the
   * field ids those names are bound to. So each column is named as the current schema names its
   * field id; a filter on a column dropped since is left out (its name there is another column's
   * or none), which prunes less, never more.
   */
  private def icebergFilter(table: org.apache.iceberg.Table) =
    IcebergFilters.toIceberg(parquet.filters, IcebergSchema.namesIn(table.schema, fieldIds))

  /**
   * The Hadoop settings a catalog is built with: the reader's without the Parquet options it
   * adds (`sparkOptions`), so that a plan finds the catalog the source was built with (with the
   * session's settings) again, catalogs being kept by their Hadoop settings.
   */
  private def catalogConf(readerConf: Configuration): Configuration =
    if (config.catalog.isEmpty) readerConf
    else {
      val c = new Configuration(readerConf)
      parquet.sparkOptions.keys.foreach(c.unset)
      c
    }

  override def withColumns(required: Set[String]): IcebergSource = {
    val pruned = parquet.copy(readColumns = Some(required))
    if (pruned.requiredSchema == parquet.requiredSchema) this
    else {
      val c = config.copy(parquet = pruned)
      new IcebergSource(c, ParquetRows(IcebergSource.session(), pruned))
    }
  }

  override def schemaWithColumns(required: Set[String], layout: RecordLayout): StructType =
    IcebergSource.schemaOf(parquet.copy(readColumns = Some(required)), layout)

  /** Files are skipped by Iceberg's planning, row groups by their statistics; Spark applies the filters either way. */
  override def withFilters(filters: Seq[Filter]): IcebergSource = {
    val own = parquet.outputSchema.fieldNames.toSet
    val usable = filters.filter(_.references.forall(own.contains))
    if (usable.isEmpty) this
    else new IcebergSource(config.copy(parquet = parquet.copy(filters = usable)), rows)
  }

  override def createEnumerator(): ParquetEnumerator =
    restoreEnumerator(ParquetEnumeratorState(Nil, listed = false))

  override def restoreEnumerator(state: ParquetEnumeratorState): ParquetEnumerator = {
    // such a checkpoint (a bounded read by an earlier Sluice, state version 1) does not say
    // which snapshot its files were of, so neither what was committed after it
    if (boundedness != Boundedness.Bounded && state.listed && state.tableVersion.isEmpty)
      throw TableChanges.unrecordedStart(
        IcebergConfig.Context,
        config.table,
        "snapshot",
        IcebergConfig.SnapshotId.name)
    // the checkpoint's snapshots and files must be this table's; from now on they are recorded
    // as this table's (a checkpoint that did not record its table takes it on trust)
    TableIdentity.check(
      IcebergConfig.Context,
      config.table,
      "table-uuid",
      "snapshots",
      state.tableId,
      config.tableUuid)
    val clock = () => System.currentTimeMillis()
    val metadataWaits = IcebergTables.metadataWaits(clock)
    new ParquetEnumerator(
      parquet,
      state.copy(tableId = config.tableUuid.orElse(state.tableId)),
      () => rows.hadoopConf,
      clock,
      Some((conf, after) => plan(conf, after, metadataWaits)),
      Some(metadataWaits))
  }

  /**
   * The first plan reads the start snapshot's files; each later one (unbounded) the files
   * appended by the snapshots committed after the last one planned (`metadataWaits`: the
   * enumerator's wait for a table given by a metadata file to settle at its newest version).
   */
  private def plan(
      conf: Configuration,
      after: Option[Long],
      metadataWaits: NotReadyFiles): PlannedFiles = {
    def withTimes(files: Seq[DiscoveredFile]) =
      IcebergSource.withModificationTimes(files, conf, parquet.ignoreMissingFiles)
    after match {
      case None =>
        PlannedFiles(withTimes(planned), Some(config.snapshot.getOrElse(PlannedFiles.EmptyTable)))
      case Some(last) =>
        IcebergTables
          .withLatest(
            config.table,
            config.catalog,
            config.catalogTimeoutMs,
            catalogConf(conf),
            metadataWaits) { table =>
            // a table created again there since would not have the snapshot planned last as an
            // ancestor: told apart first, by its identity
            TableIdentity.check(
              IcebergConfig.Context,
              config.table,
              "table-uuid",
              "snapshots",
              config.tableUuid,
              IcebergTables.uuidOf(table))
            // the incremental scan's schema is the table's current one: the column is found
            // there by its field id (renamed since, under its new name); files appended after it
            // was dropped have no bounds of it (a column given its name since is another): their
            // footers index them, by field id too
            val eventTimes = eventTimeId
              .filter(_ => parquet.filters.isEmpty)
              .flatMap(IcebergEventTimes.byId(table.schema, _))
            IcebergTables
              .appendedSince(
                table,
                config.table,
                last,
                icebergFilter(table),
                parquet.caseSensitive,
                config.skipChanges,
                columnTypes,
                eventTimes)
          }
          .fold(PlannedFiles(Nil, after)) { case (files, id) =>
            PlannedFiles(withTimes(files), Some(id))
          }
    }
  }

  override def toString: String =
    s"IcebergSource(${config.table}${config.catalog.fold("")(c => s" in ${c.name}")}, snapshot ${config.snapshot.getOrElse("none")}" +
      parquet.monitorIntervalMs.fold("")(ms => s" and those after it every $ms ms") +
      parquet.readColumns.fold("")(_ =>
        s"; columns ${parquet.requiredSchema.fieldNames.mkString(", ")}") + ")"
}

object IcebergSource {

  /** On the driver, with a SparkSession: loads the table, fixes the snapshot, refuses what cannot be read. */
  def fromOptions(options: Map[String, String]): IcebergSource = {
    val config = IcebergConfig.fromOptions(options)
    val source = new IcebergSource(config, ParquetRows(session(), config.parquet))
    source.planned // delete files it cannot apply and other formats are refused now, not when the query runs
    source
  }

  private def session(): SparkSession =
    SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .get // checked by the config

  private def schemaOf(config: ParquetConfig, layout: RecordLayout): StructType =
    TableDataFiles.schemaOf(config, layout, IcebergConfig.Context)

  private def withModificationTimes(
      files: Seq[DiscoveredFile],
      conf: Configuration,
      ignoreMissing: Boolean): Seq[DiscoveredFile] =
    TableDataFiles.withModificationTimes(
      files,
      conf,
      ignoreMissing,
      IcebergConfig.Context,
      "A table's files are removed only when its snapshots expire")

  def builder(): Builder = new Builder(Map.empty)

  /** Typed setters over the option map; `build()` validates everything and names what is wrong. */
  final class Builder private[IcebergSource] (options: Map[String, String]) {
    import IcebergConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))

    /** The table's directory (a Hadoop table) or a metadata file of it. */
    def table(location: String): Builder = set(Table.name, location)

    /**
     * Reads `table` (then an identifier, `db.name`) from the Iceberg catalog `name` with these
     * properties (Iceberg's catalog properties, e.g. `type` `jdbc`, `uri`, `warehouse`), each set
     * as option `catalog.<property>`.
     */
    def catalog(name: String, properties: Map[String, String]): Builder =
      properties.foldLeft(set(CatalogName.name, name)) { case (b, (k, v)) =>
        b.set(CatalogPrefix + k, v)
      }

    /** With `catalog`: how long building it, and loading the table from it, may each take. */
    def catalogTimeoutMs(ms: Long): Builder = set(CatalogTimeoutMs.name, ms)
    def snapshotId(id: Long): Builder = set(SnapshotId.name, id)

    /** The snapshot current at this time (epoch milliseconds). */
    def asOfTimestamp(epochMs: Long): Builder = set(AsOfTimestamp.name, epochMs)
    def timestampColumn(c: String): Builder = set(FileConfig.TimestampColumn.name, c)
    def ignoreMissingFiles(ignore: Boolean): Builder =
      set(FileConfig.IgnoreMissingFiles.name, ignore)

    /** Unbounded: the snapshots committed after the start one are planned at this interval, their appended files read. */
    def monitorIntervalMs(ms: Long): Builder = set(FileConfig.MonitorIntervalMs.name, ms)

    /** Unbounded: skip snapshots that delete or rewrite rows (their added rows too) instead of failing. */
    def skipChanges(skip: Boolean): Builder = set(TableChanges.SkipChanges.name, skip)
    def option(name: String, value: String): Builder = set(name, value)

    def build(): IcebergSource = IcebergSource.fromOptions(options)
  }
}

package sluice.connector.table.delta

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import sluice.api._
import sluice.config.RecordLayout
import sluice.connector.file.{DiscoveredFile, FileConfig}
import sluice.connector.file.parquet._
import sluice.connector.table.{TableChanges, TableDataFiles, TableIdentity}

/**
 * A version of a Delta table (`source` = `delta`), bounded, or with `monitorIntervalMs`
 * unbounded: the versions committed after it are planned at that interval, the files their
 * appends added read as new splits (`DeltaTables.appendedSince`; a version that removes rows
 * fails the query or, with `skipChanges`, is skipped). Its data files as Delta Kernel's scan
 * gives them, read as the Parquet source reads files (one split per row group, positions are row
 * indexes in the file, column batches, only the columns a query needs, files skipped by partition
 * values and row groups by statistics from the pushed filters; with a `timestampColumn` each data
 * file's statistics of it in the log are its event-time index, so planning opens no data file and
 * a file is one split, and a file without them is split by row group and indexed by its footer's
 * statistics, with a warning). Rows are the table's data columns, its partition
 * columns, then `_split`, `_position` and `_timestamp` (the data file's modification time).
 *
 * Column mapping (`DeltaColumnMapping`) is read: data files by their physical names (mode
 * `name`) or Parquet field ids (mode `id`), partition values from the log. Deletion vectors are
 * applied: each data file's is loaded by Kernel when the version is planned, and the rows it
 * deletes are never given (`RowGroupSplit.deleted`, as for Iceberg's position deletes).
 *
 * Refused when the source is built, naming the table feature: type widening (`DeltaTables`),
 * timestamp partition columns (`DeltaConfig`): each would read rows other than the table's.
 */
final class DeltaSource private (val config: DeltaConfig, protected val rows: ParquetRows)
    extends RowGroupSource {

  override protected def parquet: ParquetConfig = config.parquet

  override def sourceType: String = DeltaConfig.Type

  override val schema: StructType = schema(RecordLayout.Full)
  override def schema(layout: RecordLayout): StructType =
    TableDataFiles.schemaOf(parquet, layout, DeltaConfig.Context)

  override def options: Map[String, String] = config.options + ("source" -> sourceType)

  /**
   * The version's data files rows passing the pushed filters may be in, planned by Kernel on the
   * driver once per source value: `fromOptions` plans the unfiltered one to refuse what cannot be
   * read before a query starts, and a source with pushed filters (`withFilters`) plans its own.
   */
  @transient private lazy val planned: Seq[DiscoveredFile] = {
    val engine = DeltaTables.engine(rows.hadoopConf)
    val snapshot = DeltaTables.snapshot(engine, config.table, Some(config.version), None)
    val filter = DeltaFilters.toKernel(parquet.filters, parquet.outputSchema)
    // the event-time index from the log's statistics of the column; with pushed filters every
    // file is planned by its footer's row groups, so they are neither read nor warned about
    val eventTimes = parquet.timestampColumn
      .filter(_ => parquet.filters.isEmpty)
      .map(c => new DeltaEventTimes(snapshot.getSchema, c, config.columnMapping.physical(c)))
    DeltaTables.dataFiles(
      engine,
      snapshot,
      config.table,
      config.partitionColumns,
      filter,
      eventTimes,
      config.columnMapping)
  }

  override def withColumns(required: Set[String]): DeltaSource = {
    val pruned = parquet.copy(readColumns = Some(required))
    if (pruned.requiredSchema == parquet.requiredSchema) this
    else
      new DeltaSource(config.copy(parquet = pruned), ParquetRows(DeltaSource.session(), pruned))
  }

  override def schemaWithColumns(required: Set[String], layout: RecordLayout): StructType =
    TableDataFiles.schemaOf(
      parquet.copy(readColumns = Some(required)),
      layout,
      DeltaConfig.Context)

  /** Files are skipped by Kernel's planning, row groups by statistics; Spark applies the filters either way. */
  override def withFilters(filters: Seq[Filter]): DeltaSource = {
    val own = parquet.outputSchema.fieldNames.toSet
    val usable = filters.filter(_.references.forall(own.contains))
    if (usable.isEmpty) this
    else new DeltaSource(config.copy(parquet = parquet.copy(filters = usable)), rows)
  }

  override def createEnumerator(): ParquetEnumerator =
    restoreEnumerator(ParquetEnumeratorState(Nil, listed = false))

  override def restoreEnumerator(state: ParquetEnumeratorState): ParquetEnumerator = {
    // such a checkpoint (a bounded read by an earlier Sluice, state version 1) does not say
    // which version its files were of, so neither what was committed after it
    if (boundedness != Boundedness.Bounded && state.listed && state.tableVersion.isEmpty)
      throw TableChanges.unrecordedStart(
        DeltaConfig.Context,
        config.table,
        "version",
        DeltaConfig.VersionAsOf.name)
    // the checkpoint's versions and files must be this table's; from now on they are recorded
    // as this table's (a checkpoint that did not record its table takes it on trust)
    TableIdentity.check(
      DeltaConfig.Context,
      config.table,
      "metaData.id",
      "versions",
      state.tableId,
      config.tableId)
    new ParquetEnumerator(
      parquet,
      state.copy(tableId = config.tableId.orElse(state.tableId)),
      () => rows.hadoopConf,
      () => System.currentTimeMillis(),
      Some((conf, after) => plan(conf, after)))
  }

  /**
   * The first plan reads the start version's files; each later one (unbounded) the files added
   * by the versions committed after the last one planned.
   */
  private def plan(conf: Configuration, after: Option[Long]): PlannedFiles = {
    def withTimes(files: Seq[DiscoveredFile]) =
      TableDataFiles.withModificationTimes(
        files,
        conf,
        parquet.ignoreMissingFiles,
        DeltaConfig.Context,
        "A Delta table's files are removed only by VACUUM, once no kept version needs them")
    after match {
      case None => PlannedFiles(withTimes(planned), Some(config.version))
      case Some(last) =>
        DeltaTables
          .appendedSince(
            DeltaTables.engine(conf),
            config.table,
            last,
            config.partitionColumns,
            config.skipChanges,
            // statistics as for the start version: not with pushed filters (footers then)
            parquet.timestampColumn.filter(_ => parquet.filters.isEmpty),
            config.tableId,
            config.columnMapping)
          .fold(PlannedFiles(Nil, after)) { case (files, version) =>
            PlannedFiles(withTimes(files), Some(version))
          }
    }
  }

  override def toString: String =
    s"DeltaSource(${config.table}, version ${config.version}" +
      parquet.monitorIntervalMs.fold("")(ms => s" and those after it every $ms ms") +
      parquet.readColumns.fold("")(_ =>
        s"; columns ${parquet.requiredSchema.fieldNames.mkString(", ")}") + ")"
}

object DeltaSource {

  /** On the driver, with a SparkSession: opens the table, fixes the version, refuses what cannot be read. */
  def fromOptions(options: Map[String, String]): DeltaSource = {
    val config = DeltaConfig.fromOptions(options)
    val source = new DeltaSource(config, ParquetRows(session(), config.parquet))
    source.planned // what cannot be read is refused now, not when the query runs
    source
  }

  private def session(): SparkSession =
    SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .get // checked by the config

  def builder(): Builder = new Builder(Map.empty)

  /** Typed setters over the option map; `build()` validates everything and names what is wrong. */
  final class Builder private[DeltaSource] (options: Map[String, String]) {
    import DeltaConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))

    /** The table's directory (the one holding `_delta_log/`). */
    def table(location: String): Builder = set(Table.name, location)
    def versionAsOf(version: Long): Builder = set(VersionAsOf.name, version)

    /** The version current at this time (epoch milliseconds). */
    def asOfTimestamp(epochMs: Long): Builder = set(AsOfTimestamp.name, epochMs)
    def timestampColumn(c: String): Builder = set(FileConfig.TimestampColumn.name, c)
    def ignoreMissingFiles(ignore: Boolean): Builder =
      set(FileConfig.IgnoreMissingFiles.name, ignore)

    /** Unbounded: the versions committed after the start one are planned at this interval, their added files read. */
    def monitorIntervalMs(ms: Long): Builder = set(FileConfig.MonitorIntervalMs.name, ms)

    /** Unbounded: skip versions that delete or rewrite rows (their added rows too) instead of failing. */
    def skipChanges(skip: Boolean): Builder = set(TableChanges.SkipChanges.name, skip)
    def option(name: String, value: String): Builder = set(name, value)

    def build(): DeltaSource = DeltaSource.fromOptions(options)
  }
}

package sluice.connector.table.iceberg

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.config.{ConfigOption, Options}
import sluice.connector.file.FileConfig
import sluice.connector.file.parquet.ParquetConfig
import sluice.connector.format.Provenance
import sluice.connector.table.TableChanges
import sluice.errors.SluiceError

/**
 * The settings of an Iceberg source, resolved on the driver: the table, the snapshot read (its id
 * fixed when the source is built, so every plan of it reads the same files) and its schema as
 * Spark types. `parquet` is the Parquet source's config its data files are read with.
 */
final case class IcebergConfig(
    /** A table directory or metadata file; with `catalog`, the table's identifier in it. */
    table: String,
    /** The catalog `table` names a table of (`catalog.<property>` options), if any. */
    catalog: Option[IcebergCatalogs.CatalogSpec],
    /** How long building `catalog` and loading the table from it may take, each. */
    catalogTimeoutMs: Long,
    snapshotId: Option[Long],
    asOfTimestampMs: Option[Long],
    /** The snapshot read, resolved from the options when built: None for a table without one. */
    snapshot: Option[Long],
    formatVersion: Int,
    /** With `parquet.monitorIntervalMs` (unbounded): skip snapshots that are not appends rather than fail. */
    skipChanges: Boolean,
    parquet: ParquetConfig,
    /** The options this config was read from, which rebuild it. */
    options: Map[String, String],
    /**
     * The table's `table-uuid` when the source was built (`TableIdentity`): a restart, and each
     * later plan, must find the same table. None for metadata without one.
     */
    tableUuid: Option[String] = None) {

  /** For messages and logs: the catalog's properties (declared secret) never appear. */
  override def toString: String =
    s"IcebergConfig(table=$table${catalog.fold("")(c => s", $c")}, snapshot=${snapshot.getOrElse("none")})"
}

object IcebergConfig {
  val Context = "IcebergSource"
  val Type = "iceberg"

  val Table: ConfigOption[String] = ConfigOption
    .string(
      "table",
      "the Iceberg table: its directory (a Hadoop table, with metadata/version-hint.text) or a metadata " +
        "file (`.../metadata/<version>-<uuid>.metadata.json`, as a catalog names the table's current one); " +
        "with `catalog.<property>` options, its identifier in that catalog (`namespace.name`, e.g. `db.events`)")
    .nonBlank("a table directory, metadata file or identifier")
  val CatalogPrefix = "catalog."

  /** Secret: catalog properties carry credentials (a JDBC password, a REST token or credential). */
  val CatalogProperty: ConfigOption[String] = ConfigOption
    .string(
      "catalog.<property>",
      "a property of the Iceberg catalog `table` names a table of, as Iceberg's `CatalogUtil.buildIcebergCatalog` " +
        "takes them (Spark's `spark.sql.catalog.<name>.<property>`): `catalog.type` or `catalog.catalog-impl`, " +
        "`catalog.uri`, `catalog.warehouse`, `catalog.jdbc.user`, ...; the catalog's own jars (a JDBC driver) " +
        "go on the class path with --packages. Values are never shown")
    .asSecret
  val CatalogName: ConfigOption[String] = ConfigOption
    .string(
      "catalogName",
      "the name of the catalog the `catalog.<property>` options describe, as it was created with (a JDBC " +
        "catalog keys its tables by it: pyiceberg's catalog name, Spark's `spark.sql.catalog.<name>`)")
    .nonBlank("a catalog name")
  val CatalogTimeoutMs: ConfigOption[Long] = ConfigOption
    .long(
      "catalogTimeoutMs",
      "with `catalog.<property>` options: how long building the catalog, and loading the table from it, " +
        "may each take, in milliseconds, when the source is built and at every plan; past it the read fails, " +
        "naming the catalog, the table and this option (the library's own time-outs may be longer or none)")
    .withDefault(60000L)
    .atLeast(1)
  val SnapshotId: ConfigOption[Long] = ConfigOption.long(
    "snapshotId",
    "the snapshot to read (default: the table's current snapshot when the source is built)")
  val AsOfTimestamp: ConfigOption[Long] = ConfigOption.long(
    "asOfTimestamp",
    "read the snapshot that was current at this time, in epoch milliseconds (Iceberg's `as-of-timestamp`)")

  val all: Seq[ConfigOption[_]] =
    Seq(
      Table,
      CatalogName,
      CatalogProperty,
      CatalogTimeoutMs,
      SnapshotId,
      AsOfTimestamp,
      FileConfig.TimestampColumn,
      FileConfig.IgnoreMissingFiles,
      FileConfig.MonitorIntervalMs,
      TableChanges.SkipChanges)

  def fromOptions(raw: Map[String, String]): IcebergConfig = {
    val (catalogRaw, own) = raw.partition(_._1.toLowerCase.startsWith(CatalogPrefix))
    val o = new Options(own, all, Context)
    val location = o.required(Table)
    val catalog = catalogOf(catalogRaw, o.get(CatalogName))
    if (catalog.isEmpty && o.contains(CatalogTimeoutMs))
      throw SluiceError.config(
        s"$Context: option '${CatalogTimeoutMs.name}' bounds the calls to a catalog, but no " +
          s"'${CatalogProperty.name}' option describes one: give the catalog's properties (and " +
          s"'${CatalogName.name}'), or leave the option out to read the table by its directory or metadata file.")
    val snapshotId = o.get(SnapshotId)
    val asOf = o.get(AsOfTimestamp)
    if (snapshotId.isDefined && asOf.isDefined)
      throw SluiceError.config(
        s"$Context: options '${SnapshotId.name}' and '${AsOfTimestamp.name}' both name a snapshot; give one.")
    val session = SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .getOrElse(throw new IllegalStateException(
        s"$Context: an Iceberg source is defined on the Spark driver, with a SparkSession: it reads the " +
          "table's metadata and the session's Parquet settings there."))
    val catalogTimeoutMs = o.get(CatalogTimeoutMs).get // declared with a default
    val (monitorIntervalMs, skipChanges) = TableChanges.unboundedOptions(o, Context, "snapshots")
    if (monitorIntervalMs.isDefined && catalog.isEmpty && !IcebergTables.followable(location))
      throw SluiceError.config(
        s"$Context: an unbounded read ('${FileConfig.MonitorIntervalMs.name}') follows a table given by a metadata " +
          s"file by the newest one beside it, by the version its name begins with, and '$location' names " +
          "none (a catalog's are <version>-<uuid>.metadata.json, a Hadoop table's v<version>.metadata.json). " +
          "Give the table's current metadata file as its catalog names it, its directory (a Hadoop table), " +
          s"or its identifier with '${CatalogProperty.name}' options.")
    val unresolved =
      IcebergConfig(
        location,
        catalog,
        catalogTimeoutMs,
        snapshotId,
        asOf,
        None,
        0,
        skipChanges,
        null,
        raw)
    // what the source keeps of the table, read while it is loaded (its catalog not closed)
    val (snapshot, schema, formatVersion, tableUuid, tableLocation) = IcebergTables.withTable(
      location,
      catalog,
      catalogTimeoutMs,
      session.sessionState.newHadoopConf(),
      later = false) { table =>
      val snapshot = IcebergTables.snapshotOf(table, unresolved)
      // the snapshot's own schema (time travel's), also for the current snapshot: a source rebuilt
      // from its options (a restart, a hybrid's history member) names the snapshot it read and must
      // give the same columns, whatever was added to the table since
      val schema = snapshot
        .flatMap(s => Option(s.schemaId).map(id => table.schemas.get(id)))
        .getOrElse(table.schema)
      (
        snapshot.map(_.snapshotId),
        schema,
        IcebergTables.formatVersion(table),
        IcebergTables.uuidOf(table),
        table.location)
    }
    val data = IcebergSchema.toSpark(schema)
    Provenance.appendTo(data, Context) // refuses a column named as a provenance column
    val ts = o.get(FileConfig.TimestampColumn)
    ts.foreach { c =>
      if (!data
          .find(_.name == c)
          .exists(f => f.dataType == TimestampType || f.dataType == LongType))
        throw ConfigOption.invalid(
          Context,
          FileConfig.TimestampColumn.name,
          c,
          "a timestamptz (TIMESTAMP) or epoch-milliseconds long column of the table: " + data.fields
            .filter(f => f.dataType == TimestampType || f.dataType == LongType)
            .map(_.name)
            .mkString(", "))
    }
    val conf = SQLConf.get
    // Iceberg writes proleptic dates and timestamps only: nothing to rebase
    val sparkOptions = Map(
      ParquetConfig.DatetimeRebaseMode.name -> "CORRECTED",
      ParquetConfig.Int96RebaseMode.name -> "CORRECTED")
    val parquet = ParquetConfig(
      // a catalog's table by where it is (its identifier names no path)
      paths = Seq(if (catalog.isEmpty) location else tableLocation),
      // unbounded: the snapshots committed after the start one are planned at this interval
      monitorIntervalMs = monitorIntervalMs,
      ignoreMissingFiles = o.get(FileConfig.IgnoreMissingFiles).getOrElse(false),
      ignoreChangedFiles = false,
      notReadyTimeoutMs = 0L,
      timestampColumn = ts,
      dataSchema = data,
      partitionSchema = new StructType(),
      partitionRoots = Nil,
      timeZoneId = conf.sessionLocalTimeZone,
      caseSensitive = conf.caseSensitiveAnalysis,
      sparkOptions = sparkOptions,
      options = raw,
      rowGroupFilters = conf.parquetFilterPushDown,
      datetimeRebaseMode = "CORRECTED",
      // columns found in the files by field id, as Iceberg finds them (renames, reused names)
      fileSchema = Some(IcebergSchema.withFieldIds(schema)),
      matchFieldIds = true)
    // the snapshot resolved now is the one every rebuild reads: a restart or a hybrid's history
    // member must not read the table's newer current snapshot (other files, another schema)
    val pinned =
      snapshot.fold(raw)(id => raw - AsOfTimestamp.name + (SnapshotId.name -> id.toString))
    unresolved.copy(
      snapshot = snapshot,
      formatVersion = formatVersion,
      // the reader's config travels to executors and may be printed: no catalog property there
      parquet = parquet.copy(options = pinned -- catalogRaw.keys),
      options = pinned,
      tableUuid = tableUuid)
  }

  /** The catalog the `catalog.` options describe (None without any), its name required with them. */
  private def catalogOf(
      raw: Map[String, String],
      name: Option[String]): Option[IcebergCatalogs.CatalogSpec] =
    (raw.isEmpty, name) match {
      case (true, None) => None
      case (true, Some(_)) =>
        throw SluiceError.config(
          s"$Context: option '${CatalogName.name}' names a catalog, but no '${CatalogProperty.name}' " +
            "option describes it: give its properties (catalog.type or catalog.catalog-impl, catalog.uri, " +
            "catalog.warehouse, ...), or leave the name out to read the table by its directory or metadata file.")
      case (false, None) =>
        throw SluiceError.config(
          s"$Context: '${CatalogProperty.name}' options describe a catalog, but option '${CatalogName.name}' " +
            "does not name it: give the name the catalog was created with (a JDBC catalog keys its tables by " +
            "it: pyiceberg's catalog name, Spark's spark.sql.catalog.<name>).")
      case (false, Some(n)) =>
        val properties = raw.map { case (k, v) => k.substring(CatalogPrefix.length) -> v }
        properties.keys.filter(_.trim.isEmpty).foreach { _ =>
          throw SluiceError.config(
            s"$Context: an option '$CatalogPrefix' names no property: write catalog.<property>, e.g. catalog.uri.")
        }
        Some(IcebergCatalogs.CatalogSpec(n, properties))
    }
}

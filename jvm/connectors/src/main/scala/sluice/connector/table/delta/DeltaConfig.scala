package sluice.connector.table.delta

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType, TimestampNTZType, TimestampType}

import sluice.config.{ConfigOption, Options}
import sluice.connector.file.FileConfig
import sluice.connector.file.parquet.ParquetConfig
import sluice.connector.format.Provenance
import sluice.connector.table.TableChanges
import sluice.errors.SluiceError

/**
 * The settings of a Delta source, resolved on the driver: the table, the version read (fixed when
 * the source is built, so every plan of it reads the same files), its schema as Spark types and
 * its partition columns. `parquet` is the Parquet source's config its data files are read with.
 */
final case class DeltaConfig(
    table: String,
    /** The version read, resolved from the options when built. */
    version: Long,
    partitionColumns: Seq[String],
    /** With `parquet.monitorIntervalMs` (unbounded): skip versions that are not appends rather than fail. */
    skipChanges: Boolean,
    parquet: ParquetConfig,
    /** The options this config was read from, which rebuild it. */
    options: Map[String, String],
    /**
     * The table's `metaData.id` at the version read (`TableIdentity`): a restart, and each later
     * plan, must find the same table.
     */
    tableId: Option[String] = None,
    /**
     * The table's column mapping at the version read: the physical names its data files, their
     * partition values and statistics in the log name columns by (`parquet.fileSchema` reads
     * them); `DeltaColumnMapping.Off` without.
     */
    columnMapping: DeltaColumnMapping = DeltaColumnMapping.Off)

object DeltaConfig {
  val Context = "DeltaSource"
  val Type = "delta"

  val Table: ConfigOption[String] = ConfigOption
    .string("table", "the Delta table: its directory (the one holding `_delta_log/`)")
    .nonBlank("a table directory")
  val VersionAsOf: ConfigOption[Long] = ConfigOption.long(
    "versionAsOf",
    "the table version to read (default: the latest when the source is built)")
  val AsOfTimestamp: ConfigOption[Long] = ConfigOption.long(
    "asOfTimestamp",
    "read the version that was current at this time, in epoch milliseconds (Delta's `timestampAsOf`)")

  val all: Seq[ConfigOption[_]] =
    Seq(
      Table,
      VersionAsOf,
      AsOfTimestamp,
      FileConfig.TimestampColumn,
      FileConfig.IgnoreMissingFiles,
      FileConfig.MonitorIntervalMs,
      TableChanges.SkipChanges)

  def fromOptions(raw: Map[String, String]): DeltaConfig = {
    val o = new Options(raw, all, Context)
    val tableDir = o.required(Table)
    val version = o.get(VersionAsOf)
    val asOf = o.get(AsOfTimestamp)
    if (version.isDefined && asOf.isDefined)
      throw SluiceError.config(
        s"$Context: options '${VersionAsOf.name}' and '${AsOfTimestamp.name}' both name a version; give one.")
    val (monitorIntervalMs, skipChanges) = TableChanges.unboundedOptions(o, Context, "versions")
    val session = SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .getOrElse(throw new IllegalStateException(
        s"$Context: a Delta source is defined on the Spark driver, with a SparkSession: it reads the " +
          "table's log and the session's Parquet settings there."))
    val hadoopConf = session.sessionState.newHadoopConf()
    val root = new Path(tableDir)
    val location = root.getFileSystem(hadoopConf).makeQualified(root).toString
    val snapshot =
      DeltaTables.snapshot(DeltaTables.engine(hadoopConf), location, version, asOf)
    // the version resolved now is the one every rebuild reads: a restart or a hybrid's history
    // member must not read a newer version of the table (other files, another schema)
    val pinned =
      raw - AsOfTimestamp.name + (VersionAsOf.name -> snapshot.getVersion.toString)
    DeltaTables.refuseUnsupported(snapshot, location)
    val schema = DeltaSchema.toSpark(snapshot.getSchema)
    val partitionNames = snapshot.getPartitionColumnNames.asScala.toSeq
    def isPartition(f: StructField) = partitionNames.exists(_.equalsIgnoreCase(f.name))
    val (partitions, data) = schema.fields.partition(isPartition)
    val mapping = DeltaColumnMapping.of(snapshot)
    // under column mapping the data columns as the files name them, in the same order
    val fileSchema = Option.when(mapping.enabled) {
      val physical = DeltaSchema.physical(snapshot.getSchema, byId = mapping.byId)
      StructType(schema.fields.indices.filterNot(i => isPartition(schema(i))).map(physical(_)))
    }
    partitions.find(f => f.dataType == TimestampType || f.dataType == TimestampNTZType).foreach {
      f =>
        throw SluiceError.config(
          s"$Context: Delta table '$location' is partitioned by timestamp column '${f.name}', whose partition " +
            "values Sluice does not read yet (their time zone depends on the writer). Read a table partitioned " +
            "by other columns (a date, for one).")
    }
    // a directory holds a binary value as escaped text, which Spark's partition parsing reads as
    // that text's bytes, not the value's
    partitions.find(_.dataType == BinaryType).foreach { f =>
      throw SluiceError.config(
        s"$Context: Delta table '$location' is partitioned by binary column '${f.name}', whose partition " +
          "values Sluice does not read yet. Read a table partitioned by other columns.")
    }
    val output = StructType(data ++ partitions)
    Provenance.appendTo(output, Context) // refuses a column named as a provenance column
    val ts = o.get(FileConfig.TimestampColumn)
    ts.foreach { c =>
      if (!data
          .find(_.name == c)
          .exists(f => f.dataType == TimestampType || f.dataType == LongType))
        throw ConfigOption.invalid(
          Context,
          FileConfig.TimestampColumn.name,
          c,
          "a timestamp or epoch-milliseconds long column of the table (not a partition column): " + data
            .filter(f => f.dataType == TimestampType || f.dataType == LongType)
            .map(_.name)
            .mkString(", "))
    }
    val conf = SQLConf.get
    // Delta writers write proleptic dates and timestamps: nothing to rebase
    val sparkOptions = Map(
      ParquetConfig.DatetimeRebaseMode.name -> "CORRECTED",
      ParquetConfig.Int96RebaseMode.name -> "CORRECTED")
    val parquet = ParquetConfig(
      paths = Seq(location),
      // unbounded: the versions committed after the start one are planned at this interval
      monitorIntervalMs = monitorIntervalMs,
      ignoreMissingFiles = o.get(FileConfig.IgnoreMissingFiles).getOrElse(false),
      ignoreChangedFiles = false,
      notReadyTimeoutMs = 0L,
      timestampColumn = ts,
      dataSchema = StructType(data),
      // partition values come from the files' directories, checked against the log when
      // planned; under column mapping from the log (`DiscoveredFile.partitionValues`)
      partitionSchema = StructType(partitions),
      partitionRoots = Seq(location),
      timeZoneId = conf.sessionLocalTimeZone,
      caseSensitive = conf.caseSensitiveAnalysis,
      sparkOptions = sparkOptions,
      options = pinned,
      rowGroupFilters = conf.parquetFilterPushDown,
      datetimeRebaseMode = "CORRECTED",
      fileSchema = fileSchema,
      matchFieldIds = mapping.byId)
    DeltaConfig(
      location,
      snapshot.getVersion,
      partitions.map(_.name).toSeq,
      skipChanges,
      parquet,
      pinned,
      DeltaTables.idOf(snapshot),
      mapping)
  }
}

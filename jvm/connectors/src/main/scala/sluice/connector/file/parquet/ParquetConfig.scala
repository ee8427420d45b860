package sluice.connector.file.parquet

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.parquet.schema.MessageType
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.util.QuotingUtils
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.config.{ConfigOption, Options}
import sluice.connector.file.{FileConfig, FileListingFilter, FileListingOptions}
import sluice.connector.format.{PayloadFormat, Provenance}
import sluice.errors.SluiceError

/**
 * The settings of a file source of Parquet files, resolved on the driver as `spark.read.parquet`
 * resolves them: the data columns (given, or read from the files' footers, merged with
 * `mergeSchema`), the partition columns of Hive-style directories (`date=2026-11-01/`, typed as
 * Spark infers them) and the session settings the reader needs. Executors have no session: what
 * they need is here, serialisable.
 */
final case class ParquetConfig(
    paths: Seq[String],
    monitorIntervalMs: Option[Long],
    ignoreMissingFiles: Boolean,
    ignoreChangedFiles: Boolean,
    /** Monitored: how long a file without a readable footer may stay unchanged before it fails the query. */
    notReadyTimeoutMs: Long,
    timestampColumn: Option[String],
    /** Columns read from the files, as Spark reads them (nullable). */
    dataSchema: StructType,
    /** Columns of the partition directories, as Spark types them. */
    partitionSchema: StructType,
    /** The directories partition directories are found under (Spark's root paths of the listing). */
    partitionRoots: Seq[String],
    /** The session time zone, which partition values of timestamps are read in. */
    timeZoneId: String,
    caseSensitive: Boolean,
    /** Spark's Parquet reader options given (`mergeSchema`, rebase modes), handed to Spark's reader. */
    sparkOptions: Map[String, String],
    /** The options this config was read from, which rebuild it. */
    options: Map[String, String],
    /**
     * The data columns a query reads (`SupportsColumnPruning`), or None: all. The source's own
     * `timestampColumn` is read either way (it gives records their event time).
     */
    readColumns: Option[Set[String]] = None,
    /**
     * Filters every row the query keeps passes (`SupportsFilterPushdown`), on the data and
     * partition columns: files whose partition values and row groups whose statistics no row of
     * can pass are not read. Spark applies them to the rows read either way.
     */
    filters: Seq[Filter] = Nil,
    /** Spark's `spark.sql.parquet.filterPushdown`: row groups are skipped by statistics only when on. */
    rowGroupFilters: Boolean = true,
    /** How dates and timestamps of legacy files are read (option, else the session's): filters are rebased alike. */
    datetimeRebaseMode: String = "EXCEPTION",
    /** Which listed files are read (Spark's `pathGlobFilter`, `modifiedBefore`, `modifiedAfter`). */
    listing: FileListingFilter = FileListingFilter(Map.empty),
    /**
     * The data columns as the files name them, when they are not `dataSchema`'s names (a Delta
     * table's column mapping: physical names): `dataSchema`'s columns in its order, each with
     * the files' name at every level of nesting and, with `matchFieldIds`, its Parquet field id
     * (`parquet.field.id` in its metadata). Spark's reader reads them under these names (or ids);
     * rows are positional, so the rows keep `dataSchema`'s names.
     */
    fileSchema: Option[StructType] = None,
    /** Columns are found in a file by their Parquet field ids (`fileSchema`'s), not by name. */
    matchFieldIds: Boolean = false) {
  fileSchema.foreach { f =>
    require(
      f.length == dataSchema.length,
      s"the files' schema has ${f.length} columns, the data schema ${dataSchema.length}")
  }

  /** The data columns read, in the files' order: Parquet's requested schema. */
  val requiredSchema: StructType = readColumns.fold(dataSchema)(keep =>
    StructType(dataSchema.filter(f => keep(f.name) || timestampColumn.contains(f.name))))

  /**
   * The rows' data: the file columns read, then the partition columns, as `spark.read.parquet`
   * returns them.
   */
  val outputSchema: StructType = StructType(requiredSchema.fields ++ partitionSchema.fields)

  /** `dataSchema` as the files name its columns (`fileSchema`), which Spark's reader is given. */
  def fileDataSchema: StructType = fileSchema.getOrElse(dataSchema)

  /** `requiredSchema` as the files name its columns, in its order. */
  def fileRequiredSchema: StructType = fileSchema.fold(requiredSchema) { files =>
    StructType(requiredSchema.fields.map(f => files(dataSchema.fieldIndex(f.name))))
  }

  /** The files' name of data column `column` (a top-level column of `dataSchema`). */
  def fileColumnName(column: String): String = fileSchema.fold(column) { files =>
    Some(dataSchema.fieldNames.indexOf(column))
      .filter(_ >= 0)
      .map(files(_).name)
      .getOrElse(column)
  }

  /**
   * The name the file whose Parquet schema is `file` gives each top-level data column it holds:
   * with `matchFieldIds`, that of its top-level field with the column's field id (`fileSchema`'s),
   * as the reader finds the column there; a column whose id the file does not hold (or holds
   * twice) has none, whatever the file names its other columns (an Iceberg table's file written
   * before a column was renamed, or before its name was given to a new column, names it otherwise,
   * or names another column so). Otherwise `fileColumnName` of each: the same in every file.
   */
  def fileColumnNames(file: MessageType): Map[String, String] =
    fileSchema match {
      case Some(files) if matchFieldIds =>
        val byId = file.getFields.asScala.toSeq
          .filter(_.getId != null)
          .groupBy(_.getId.intValue)
          .collect { case (id, Seq(only)) => id -> only.getName }
        dataSchema.fieldNames
          .zip(files.fields)
          .flatMap { case (column, f) =>
            Option
              .when(ParquetUtils.hasFieldId(f))(ParquetUtils.getFieldId(f))
              .flatMap(byId.get)
              .map(column -> _)
          }
          .toMap
      case _ => dataSchema.fieldNames.map(n => n -> fileColumnName(n)).toMap
    }

  /**
   * `filters` on the names the file whose Parquet schema is `file` gives their data columns
   * (`fileColumnNames`), for its row-group statistics (`ParquetPruning.rowGroupPredicates`): a
   * filter on a partition column, or on a column the file does not hold by `fileColumnNames`, or
   * one this cannot rename, is left out (it prunes no row group; an `And` keeps its other side).
   */
  def fileFilters(file: MessageType): Seq[Filter] =
    if (fileSchema.isEmpty) filters
    else {
      val names = fileColumnNames(file).map { case (c, n) => c -> QuotingUtils.quoteIfNeeded(n) }
      filters.flatMap(ParquetPruning.renamed(_, names))
    }

  def timestampIndex: Int = timestampColumn.map(outputSchema.fieldIndex).getOrElse(-1)
  def timestampIsMillis: Boolean =
    timestampColumn.exists(c => outputSchema(c).dataType == LongType)
}

object ParquetConfig {
  val Context = "FileSource (parquet)"
  val Parquet = "parquet"

  val Format: ConfigOption[String] = ConfigOption
    .string(
      "format",
      "`parquet`: Parquet files read by Spark's own Parquet reader, split by row group")
    .oneOf("parquet", Seq(Parquet), ignoreCase = true)
  val Schema: ConfigOption[StructType] = PayloadFormat.SchemaOption.copy(doc =
    "the columns to read; when not given, read from the files' footers as `spark.read.parquet` does " +
      "(partition columns of `name=value` directories are added either way)")
  val MergeSchema: ConfigOption[Boolean] = ConfigOption.boolean(
    "mergeSchema",
    "Spark's Parquet option: the schema is merged from every file's footer rather than taken from " +
      "one (default: the session's spark.sql.parquet.mergeSchema)")
  private val rebaseModes = Seq("EXCEPTION", "CORRECTED", "LEGACY")
  val DatetimeRebaseMode: ConfigOption[String] = ConfigOption
    .string(
      "datetimeRebaseMode",
      "Spark's Parquet option: how dates and timestamps written in the legacy hybrid calendar are " +
        "read (default: the session's spark.sql.parquet.datetimeRebaseModeInRead)")
    .oneOf("EXCEPTION, CORRECTED or LEGACY", rebaseModes, ignoreCase = true)
  val Int96RebaseMode: ConfigOption[String] = ConfigOption
    .string(
      "int96RebaseMode",
      "Spark's Parquet option: as datetimeRebaseMode, for INT96 timestamps " +
        "(default: the session's spark.sql.parquet.int96RebaseModeInRead)")
    .oneOf("EXCEPTION, CORRECTED or LEGACY", rebaseModes, ignoreCase = true)

  val BasePath: ConfigOption[String] = ConfigOption.string(
    "basePath",
    "Spark's option: the directory partition directories are found under (a path inside it reads only that " +
      "part, its partition values still columns)")
  val RecursiveFileLookup: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "recursiveFileLookup",
      "Spark's option: files are read from any nested directories and no partition columns are inferred")
    .withDefault(false)

  /** Options of this format only (the rest are the file source's). */
  val own: Seq[ConfigOption[_]] = Seq(MergeSchema, DatetimeRebaseMode, Int96RebaseMode)

  /** Spark's options that decide partition columns: handed to the schema resolution, not the reader. */
  private val partitioning: Seq[ConfigOption[_]] = Seq(BasePath, RecursiveFileLookup)
  val all: Seq[ConfigOption[_]] = Seq(
    FileConfig.Path,
    FileConfig.MonitorIntervalMs,
    FileConfig.IgnoreMissingFiles,
    FileConfig.IgnoreChangedFiles,
    FileConfig.NotReadyTimeoutMs,
    FileConfig.TimestampColumn,
    Format,
    Schema) ++ own ++ partitioning ++ FileListingOptions.all

  /** True when `options` ask for Parquet files (`format` = parquet, any case). */
  def isParquet(options: Map[String, String]): Boolean =
    options.exists { case (k, v) =>
      k.equalsIgnoreCase(Format.name) && v.trim.equalsIgnoreCase(Parquet)
    }

  def fromOptions(raw: Map[String, String]): ParquetConfig = {
    val o = new Options(raw, all, Context)
    val paths = o.required(FileConfig.Path)
    val monitor = o.get(FileConfig.MonitorIntervalMs)
    def named(options: Seq[ConfigOption[_]]) = options
      .flatMap(opt =>
        raw.collectFirst { case (k, v) if k.equalsIgnoreCase(opt.name) => opt.name -> v.trim })
      .toMap
    val sparkOptions = named(own)
    val listing = FileListingOptions.filter(raw, Context)
    val session = SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .getOrElse(
        throw new IllegalStateException(
          s"$Context: a Parquet source is defined on the Spark driver, with a " +
            "SparkSession: it reads the files' schema and the session's Parquet settings there."))
    val userSchema = o.get(Schema).map(PayloadFormat.asNullable)
    val (data, partitions, roots) =
      resolve(
        session,
        paths,
        userSchema,
        sparkOptions ++ named(partitioning) ++ listing.options,
        monitor.isDefined)
    val output = StructType(data.fields ++ partitions.fields)
    Provenance.appendTo(output, Context) // refuses a column named as a provenance column
    val ts = o.get(FileConfig.TimestampColumn)
    ts.foreach { c =>
      val ok = output
        .find(_.name == c)
        .exists(f => f.dataType == TimestampType || f.dataType == LongType)
      if (!ok) {
        val candidates = output.fields
          .filter(f => f.dataType == TimestampType || f.dataType == LongType)
          .map(_.name)
        throw ConfigOption.invalid(
          Context,
          FileConfig.TimestampColumn.name,
          c,
          "a TIMESTAMP or BIGINT column " +
            "of the schema: " + (if (candidates.isEmpty) "the schema has none"
                                 else candidates.mkString(", ")))
      }
    }
    val conf = SQLConf.get
    ParquetConfig(
      paths,
      monitor,
      o.get(FileConfig.IgnoreMissingFiles).get,
      o.get(FileConfig.IgnoreChangedFiles).get,
      o.get(FileConfig.NotReadyTimeoutMs).get,
      ts,
      data,
      partitions,
      roots,
      conf.sessionLocalTimeZone,
      conf.caseSensitiveAnalysis,
      sparkOptions,
      raw,
      rowGroupFilters = conf.parquetFilterPushDown,
      datetimeRebaseMode = sparkOptions.getOrElse(
        DatetimeRebaseMode.name,
        conf.getConfString(SQLConf.PARQUET_REBASE_MODE_IN_READ.key)),
      listing = listing)
  }

  /**
   * Data columns, partition columns and partition roots, from Spark's own resolution of
   * `spark.read.parquet(paths)` (with the schema when given): the listing, footer reading and
   * partition inference `spark.read` does (with `basePath`, `recursiveFileLookup` and the listing
   * filters: `options`). A monitored source whose paths do not exist yet has no partition columns
   * and needs `schema`. With `basePath`, partition directories are found under it.
   */
  private def resolve(
      session: SparkSession,
      paths: Seq[String],
      userSchema: Option[StructType],
      sparkOptions: Map[String, String],
      monitored: Boolean): (StructType, StructType, Seq[String]) = {
    val relation =
      try {
        val reader =
          userSchema.foldLeft(session.read.format(Parquet).options(sparkOptions))(_.schema(_))
        reader.load(paths: _*).queryExecution.analyzed.collectFirst {
          case l: LogicalRelation if l.relation.isInstanceOf[HadoopFsRelation] =>
            l.relation.asInstanceOf[HadoopFsRelation]
        }
      } catch {
        case NonFatal(_)
            if monitored && userSchema.isDefined && Try(missing(session, paths)).getOrElse(
              false) =>
          None
        case NonFatal(e) =>
          throw SluiceError.config(
            s"$Context: cannot resolve the schema of '${paths.mkString(",")}' as " +
              s"spark.read.parquet does: ${e.getMessage}" +
              (if (userSchema.isEmpty)
                 " Give option 'schema' to read files whose schema cannot be inferred yet."
               else ""),
            e)
      }
    relation match {
      case None => (userSchema.get, new StructType(), Nil)
      case Some(r) =>
        val data = PayloadFormat.asNullable(r.dataSchema)
        val parts = PayloadFormat.asNullable(r.partitionSchema)
        if (r.schema.map(_.name) != (data.fields ++ parts.fields).map(_.name).toSeq) {
          val overlap =
            parts.fieldNames.filter(p => data.fieldNames.exists(_.equalsIgnoreCase(p)))
          throw SluiceError.config(
            s"$Context: partition column(s) ${overlap.mkString(", ")} are also " +
              "columns of the files; reading such data is not supported: rename the directories or the columns.")
        }
        val roots = sparkOptions
          .get(BasePath.name)
          .map { base =>
            val p = new org.apache.hadoop.fs.Path(base)
            p.getFileSystem(session.sessionState.newHadoopConf()).makeQualified(p).toString
          }
          .map(Seq(_))
          .getOrElse(r.location.rootPaths.map(_.toString))
        (data, parts, roots)
    }
  }

  private def missing(session: SparkSession, paths: Seq[String]): Boolean = paths.forall { p =>
    val path = new org.apache.hadoop.fs.Path(p)
    val fs = path.getFileSystem(session.sessionState.newHadoopConf())
    Option(fs.globStatus(path)).forall(_.isEmpty)
  }
}

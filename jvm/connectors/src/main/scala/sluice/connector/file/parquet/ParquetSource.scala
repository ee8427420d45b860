package sluice.connector.file.parquet

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

import sluice.api._
import sluice.config.RecordLayout
import sluice.connector.file.{FileConfig, FileSource}
import sluice.connector.format.Provenance
import sluice.errors.SluiceError

/**
 * Parquet files (`source` = `file`, `format` = `parquet`): one split per row group, positions
 * are row indexes in the file, rows are read by Spark's own Parquet reader. Bounded (the files
 * found at the start) or, with `monitorIntervalMs`, unbounded. Rows are the files' columns, the
 * partition columns of `name=value` directories, then the provenance columns `_split` (the file,
 * or the file and its row group), `_position` (the row index in the file) and `_timestamp` (the
 * file's modification time). Where Spark would read the columns as batches, they are handed to
 * Spark as the column batches of its vectorized reader (`ParquetBatchReader`), otherwise as rows
 * (`ParquetReader`, which real-time mode and continuous processing always use). A query that uses
 * some of the files' columns reads only those (`withColumns`: Parquet's requested schema).
 */
final class ParquetSource private[parquet] (
    val config: ParquetConfig,
    protected val rows: ParquetRows)
    extends RowGroupSource {

  override protected def parquet: ParquetConfig = config

  override def sourceType: String = FileSource.Type

  override val schema: StructType = ParquetSource.schemaOf(config, RecordLayout.Full)

  /** Full rows: data, partition columns, provenance. Compact rows: data and partition columns. */
  override def schema(layout: RecordLayout): StructType = ParquetSource.schemaOf(config, layout)

  override def options: Map[String, String] =
    config.options + (ParquetSource.TypeOption -> sourceType)

  /**
   * This source reading only the files' columns `required` names, and the `timestampColumn`;
   * partition and provenance columns stay (they cost no reading). Itself when that is every column.
   */
  override def withColumns(required: Set[String]): ParquetSource = {
    val pruned = config.copy(readColumns = Some(required))
    if (pruned.requiredSchema == config.requiredSchema) this
    else new ParquetSource(pruned, ParquetRows(ParquetSource.session(), pruned))
  }

  /** `withColumns(required)`'s schema from the config alone: no reader built, nothing broadcast. */
  override def schemaWithColumns(required: Set[String], layout: RecordLayout): StructType =
    ParquetSource.schemaOf(config.copy(readColumns = Some(required)), layout)

  /**
   * This source skipping, when it lists files, those whose partition values and row groups whose
   * statistics no row passing `filters` can come from (`ParquetPruning`); filters on other
   * columns are ignored. Itself when none is on its columns.
   */
  override def withFilters(filters: Seq[Filter]): ParquetSource = {
    val own = config.outputSchema.fieldNames.toSet
    val usable = filters.filter(_.references.forall(own.contains))
    if (usable.isEmpty) this else new ParquetSource(config.copy(filters = usable), rows)
  }

  override def createEnumerator(): ParquetEnumerator =
    restoreEnumerator(ParquetEnumeratorState(Nil, listed = false))

  override def restoreEnumerator(state: ParquetEnumeratorState): ParquetEnumerator =
    new ParquetEnumerator(config, state, () => rows.hadoopConf, () => System.currentTimeMillis())

  override def toString: String =
    s"FileSource(${config.options.toSeq.sorted.mkString(", ")}" +
      config.readColumns.fold("")(_ =>
        s"; columns ${config.requiredSchema.fieldNames.mkString(", ")}") + ")"
}

object ParquetSource {
  private val TypeOption = "source"

  private def schemaOf(config: ParquetConfig, layout: RecordLayout): StructType = layout match {
    case RecordLayout.Full => Provenance.appendTo(config.outputSchema, ParquetConfig.Context)
    case RecordLayout.Compact if config.timestampColumn.isDefined =>
      throw SluiceError.config(
        s"${ParquetConfig.Context}: option '${FileConfig.TimestampColumn.name}' " +
          "gives records an event time, but compact rows (forceTimestampSupport=false) carry none; remove it or set " +
          "forceTimestampSupport=true.")
    case RecordLayout.Compact => config.outputSchema
  }

  def builder(): Builder = new Builder(Map(ParquetConfig.Format.name -> ParquetConfig.Parquet))

  /** On the driver, with a SparkSession: resolves the schema and builds Spark's reader. */
  def fromOptions(options: Map[String, String]): ParquetSource = {
    val config = ParquetConfig.fromOptions(options)
    new ParquetSource(config, ParquetRows(session(), config))
  }

  private def session(): SparkSession =
    SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .get // checked by the config

  /** Typed setters over the option map; `build()` validates everything and names what is wrong. */
  final class Builder private[ParquetSource] (options: Map[String, String]) {
    import FileConfig.{IgnoreChangedFiles, IgnoreMissingFiles, MonitorIntervalMs, Path, TimestampColumn}
    import ParquetConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))

    /** Adds a file, directory or glob (this may be called several times). */
    def path(p: String): Builder = paths(p)
    def paths(ps: String*): Builder =
      set(Path.name, (options.get(Path.name).toSeq.filter(_.nonEmpty) ++ ps).mkString(","))

    /** The columns to read; without it, they are read from the files as `spark.read.parquet` does. */
    def schema(ddl: String): Builder = set(Schema.name, ddl)
    def schema(s: StructType): Builder = set(Schema.name, s.json)
    def timestampColumn(c: String): Builder = set(TimestampColumn.name, c)
    def monitorIntervalMs(ms: Long): Builder = set(MonitorIntervalMs.name, ms)
    def ignoreMissingFiles(ignore: Boolean): Builder = set(IgnoreMissingFiles.name, ignore)
    def ignoreChangedFiles(ignore: Boolean): Builder = set(IgnoreChangedFiles.name, ignore)
    def mergeSchema(merge: Boolean): Builder = set(MergeSchema.name, merge)

    /** Any option by name (`datetimeRebaseMode`, `int96RebaseMode`, ...). */
    def option(name: String, value: String): Builder = set(name, value)

    def build(): ParquetSource = ParquetSource.fromOptions(options)
  }
}

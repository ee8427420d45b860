package sluice.connector.file

import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkEnv
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

import sluice.api._
import sluice.config.RecordLayout
import sluice.connector.format.{PayloadFormat, Provenance}
import sluice.errors.SluiceError

/**
 * Files of JSON lines, CSV lines or text lines, parsed as `spark.read.json/csv/text` parse them,
 * bounded (the files found at the start) or, with `monitorIntervalMs`, unbounded (new files are
 * picked up). Rows are the data columns followed by the provenance columns `_split` (the file,
 * or its byte range), `_position` (the line's byte offset) and `_timestamp` (the file's
 * modification time).
 */
final class FileSource private[file] (val config: FileConfig)
    extends Source[FileSplit, FileEnumeratorState]
    with SupportsSplitPausing[FileSplit]
    with SupportsColumnPruning[FileSplit, FileEnumeratorState] {

  override def sourceType: String = FileSource.Type

  override def boundedness: Boundedness =
    if (config.monitorIntervalMs.isEmpty) Boundedness.Bounded else Boundedness.ContinuousUnbounded

  override val schema: StructType =
    Provenance.appendTo(config.payload.outputSchema, FileConfig.Context)

  /** Full rows: data then provenance. Compact rows: the data only, no file times read. */
  override def schema(layout: RecordLayout): StructType = layout match {
    case RecordLayout.Full => schema
    case RecordLayout.Compact if config.timestampColumn.isDefined =>
      throw SluiceError.config(
        s"${FileConfig.Context}: option '${FileConfig.TimestampColumn.name}' gives " +
          "records an event time, but compact rows (forceTimestampSupport=false) carry none; remove it or set " +
          "forceTimestampSupport=true.")
    case RecordLayout.Compact => config.payload.outputSchema
  }

  override def options: Map[String, String] =
    config.options + (FileSource.TypeOption -> sourceType)

  /**
   * This source parsing only the columns `required` names and the `timestampColumn` (JSON and
   * CSV, as Spark's readers parse a query's required schema; `PayloadFormat.pruned` says when it
   * parses every column). Positions are byte offsets of lines, whatever is parsed of them.
   */
  override def withColumns(required: Set[String]): FileSource = {
    val payload = config.payload.pruned(required ++ config.timestampColumn)
    if (payload eq config.payload) this else new FileSource(config.copy(payload = payload))
  }

  override def pruningKeepsRecords: Boolean = config.payload.mode == "PERMISSIVE"

  override def createEnumerator(): FileEnumerator = restoreEnumerator(
    FileEnumeratorState(Nil, listed = false))

  override def restoreEnumerator(state: FileEnumeratorState): FileEnumerator =
    new FileEnumerator(
      config,
      state,
      () => FileSource.driverHadoopConf(),
      () => System.currentTimeMillis())

  override def createReader(context: ReaderContext): FileReader =
    new FileReader(config, context, () => FileSource.executorHadoopConf())

  override def splitSerializer: VersionedSerializer[FileSplit] = FileSplitSerializer
  override def enumeratorStateSerializer: VersionedSerializer[FileEnumeratorState] =
    FileEnumeratorStateSerializer

  override def toString: String = s"FileSource(${config.options.toSeq.sorted.mkString(", ")})"
}

object FileSource {
  val Type = "file"
  private val TypeOption = "source"

  def builder(): Builder = new Builder(Map.empty)

  def fromOptions(options: Map[String, String]): FileSource = {
    if (parquet.ParquetConfig.isParquet(options)) {
      throw SluiceError.config(
        s"${FileConfig.Context}: Parquet files are read by ParquetSource (row-group " +
          "splits): build it with ParquetSource.builder(), or give the options to Sluice (source=file, format=parquet).")
    }
    new FileSource(FileConfig.fromOptions(options))
  }

  /** On the driver: the session's Hadoop configuration (with its `spark.hadoop.*` settings). */
  private def driverHadoopConf(): Configuration =
    SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .map(_.sessionState.newHadoopConf())
      .getOrElse(new Configuration())

  /**
   * Hadoop's defaults (core-default.xml, core-site.xml), parsed once per JVM: parsing took 2-4 ms
   * of CPU per reader, which in a task of many small files was most of its time. Each reader gets
   * a copy (0.1 ms). The resources are looked up through Hadoop's own class loader, the JVM's
   * class path (HADOOP_CONF_DIR's, with spark-submit), never a task's: a copy kept for the JVM's
   * life must not hold the loader of the session whose task happened to come first.
   */
  private lazy val hadoopDefaults: Configuration = {
    val defaults = new Configuration()
    defaults.setClassLoader(classOf[Configuration].getClassLoader)
    defaults.size() // parses the resources now, before any copy is taken
    defaults
  }

  /** On executors: Hadoop defaults plus the application's `spark.hadoop.*` settings. */
  private[file] def executorHadoopConf(): Configuration = {
    val conf = new Configuration(hadoopDefaults)
    // classes it names (file systems, codecs) load as from a new Configuration: through the task's
    // loader, which sees the session's jars
    conf.setClassLoader(
      Option(Thread.currentThread.getContextClassLoader)
        .getOrElse(classOf[Configuration].getClassLoader))
    Option(SparkEnv.get).foreach(_.conf.getAllWithPrefix("spark.hadoop.").foreach { case (k, v) =>
      conf.set(k, v)
    })
    conf
  }

  /** Typed setters over the option map; `build()` validates everything and names what is wrong. */
  final class Builder private[FileSource] (options: Map[String, String]) {
    import FileConfig._
    private def set(name: String, value: Any) = new Builder(options + (name -> value.toString))

    /** Adds a file, directory or glob (this may be called several times). */
    def path(p: String): Builder = paths(p)
    def paths(ps: String*): Builder =
      set(Path.name, (options.get(Path.name).toSeq.filter(_.nonEmpty) ++ ps).mkString(","))
    def format(f: String): Builder = set(PayloadFormat.FormatOption.name, f)
    def schema(ddl: String): Builder = set(PayloadFormat.SchemaOption.name, ddl)
    def schema(s: StructType): Builder = set(PayloadFormat.SchemaOption.name, s.json)
    def timestampColumn(c: String): Builder = set(TimestampColumn.name, c)
    def monitorIntervalMs(ms: Long): Builder = set(MonitorIntervalMs.name, ms)
    def ignoreMissingFiles(ignore: Boolean): Builder = set(IgnoreMissingFiles.name, ignore)
    def ignoreChangedFiles(ignore: Boolean): Builder = set(IgnoreChangedFiles.name, ignore)
    def maxSplitBytes(n: Long): Builder = set(MaxSplitBytes.name, n)

    /** Per executor, how many compressed files a batch that stopped inside them leaves open for the next one. */
    def maxOpenCompressedFiles(n: Int): Builder = set(MaxOpenCompressedFiles.name, n)

    /** How long a compressed file left open waits for the next batch before it is closed. */
    def openCompressedFileIdleMs(ms: Long): Builder = set(OpenCompressedFileIdleMs.name, ms)

    /** Monitored: how long a file that cannot be read yet may stay unchanged before it fails the query. */
    def notReadyTimeoutMs(ms: Long): Builder = set(NotReadyTimeoutMs.name, ms)

    /** A Spark reader option (`mode`, `sep`, `header`, `timestampFormat`, ...) or any option by name. */
    def option(name: String, value: String): Builder = set(name, value)

    def build(): FileSource = FileSource.fromOptions(options)
  }
}

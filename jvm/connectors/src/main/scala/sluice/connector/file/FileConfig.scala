package sluice.connector.file

import scala.collection.mutable

import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.config.{ConfigOption, Options}
import sluice.connector.format.PayloadFormat

/** The file source's settings: where the files are, how to split and follow them, how to parse them. */
final case class FileConfig(
    paths: Seq[String],
    payload: PayloadFormat,
    monitorIntervalMs: Option[Long],
    ignoreMissingFiles: Boolean,
    ignoreChangedFiles: Boolean,
    maxSplitBytes: Long,
    timestampColumn: Option[String],
    /** Per executor JVM: how many compressed files are left open between batches, and for how long. */
    maxOpenCompressedFiles: Int,
    openCompressedFileIdleMs: Long,
    /** Monitored: how long a file that cannot be read yet may stay unchanged before it fails the query. */
    notReadyTimeoutMs: Long,
    /** The options this config was read from, which rebuild it. */
    options: Map[String, String],
    /** Which listed files are read (Spark's `pathGlobFilter`, `modifiedBefore`, `modifiedAfter`). */
    listing: FileListingFilter = FileListingFilter(Map.empty)) {

  /** Index and type of the event-time column in the data row, if one is configured. */
  def timestampIndex: Int = timestampColumn.map(payload.outputSchema.fieldIndex).getOrElse(-1)
  def timestampIsMillis: Boolean =
    timestampColumn.exists(c => payload.outputSchema(c).dataType == LongType)
}

object FileConfig {
  val Context = "FileSource"

  val Path: ConfigOption[Seq[String]] = ConfigOption[Seq[String]](
    "path",
    "files, directories (read recursively, hidden files skipped) or globs, comma-separated; " +
      "commas inside `{a,b}` belong to the glob",
    None,
    "one or more comma-separated paths or globs",
    s => Some(splitPaths(s)).filter(_.nonEmpty))
  val MonitorIntervalMs: ConfigOption[Long] = ConfigOption
    .long(
      "monitorIntervalMs",
      "when set, the paths are listed again at this interval and new files are read (a table: the " +
        "snapshots or versions committed since are planned): the source is unbounded; when not set, the " +
        "files found at the start are read and the source ends")
    .atLeast(1)
  val IgnoreMissingFiles: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "ignoreMissingFiles",
      "a file that vanishes between listing and reading is skipped and counted as " +
        "`missingFilesSkipped`, instead of failing the query")
    .withDefault(false)
  val IgnoreChangedFiles: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "ignoreChangedFiles",
      "a file whose length or modification time changed after it was listed (files must be complete " +
        "when they appear: write them elsewhere, then rename them in) fails the query; with this option " +
        "its unread part is skipped and counted as `changedFilesSkipped`")
    .withDefault(false)
  val MaxSplitBytes: ConfigOption[Long] = ConfigOption
    .long(
      "maxSplitBytes",
      "files larger than this are read as several splits of byte ranges, in parallel (not compressed files: " +
        "one split each)")
    .withDefault(128L * 1024 * 1024)
    .atLeast(1)
  val MaxOpenCompressedFiles: ConfigOption[Int] = ConfigOption
    .int(
      "maxOpenCompressedFiles",
      "per executor, how many compressed files a batch that stopped inside them leaves open for the next batch " +
        "(which then reads on instead of decompressing each from its start again); each holds a decompressor " +
        "(from about 100 KiB for gzip to several MiB for zstd or bzip2); 0 keeps none open")
    .withDefault(16)
    .atLeast(0)
  val OpenCompressedFileIdleMs: ConfigOption[Long] = ConfigOption
    .long(
      "openCompressedFileIdleMs",
      "how long a compressed file left open for the next batch waits for it before it is closed; keep it above " +
        "the trigger interval")
    .withDefault(10L * 60 * 1000)
    .atLeast(1)
  val NotReadyTimeoutMs: ConfigOption[Long] = ConfigOption
    .long(
      "notReadyTimeoutMs",
      "monitored: a file found but not readable yet (a compressed file or a Parquet file still being written in " +
        "place) is left out and tried again while it changes; unchanged for this long, it is taken for corrupt and " +
        "fails the query, naming it")
    .withDefault(NotReadyFiles.LimitMs)
    .atLeast(1)
  val TimestampColumn: ConfigOption[String] = ConfigOption.string(
    "timestampColumn",
    "a TIMESTAMP or epoch-milliseconds BIGINT column of the schema whose value is each record's " +
      "event time (max event time in progress and in the end state)")

  val own: Seq[ConfigOption[_]] =
    Seq(
      Path,
      MonitorIntervalMs,
      IgnoreMissingFiles,
      IgnoreChangedFiles,
      MaxSplitBytes,
      TimestampColumn,
      MaxOpenCompressedFiles,
      OpenCompressedFileIdleMs,
      NotReadyTimeoutMs) ++ FileListingOptions.all
  val all: Seq[ConfigOption[_]] = own ++ PayloadFormat.all

  def fromOptions(raw: Map[String, String]): FileConfig = {
    val o = new Options(raw, all, Context)
    val payload = PayloadFormat.fromOptions(o, raw, Context)
    val ts = o.get(TimestampColumn)
    ts.foreach { c =>
      val field = payload.outputSchema.find(_.name == c)
      val ok = field.exists(f => f.dataType == TimestampType || f.dataType == LongType)
      if (!ok) {
        throw ConfigOption.invalid(
          Context,
          TimestampColumn.name,
          c,
          "a TIMESTAMP or BIGINT column of the schema: " + describe(payload.outputSchema))
      }
    }
    FileConfig(
      o.required(Path),
      payload,
      o.get(MonitorIntervalMs),
      o.get(IgnoreMissingFiles).get,
      o.get(IgnoreChangedFiles).get,
      o.get(MaxSplitBytes).get,
      ts,
      o.get(MaxOpenCompressedFiles).get,
      o.get(OpenCompressedFileIdleMs).get,
      o.get(NotReadyTimeoutMs).get,
      raw,
      FileListingOptions.filter(raw, Context))
  }

  private def describe(s: StructType): String = {
    val candidates = s.fields.filter(f => f.dataType == TimestampType || f.dataType == LongType)
    if (candidates.isEmpty) "the schema has none" else candidates.map(_.name).mkString(", ")
  }

  /** Splits at commas outside `{...}`, so a glob alternative is not taken for a second path. */
  def splitPaths(s: String): Seq[String] = {
    val out = mutable.ArrayBuffer[String]()
    val cur = new StringBuilder
    var depth = 0
    s.foreach {
      case '{' => depth += 1; cur += '{'
      case '}' => depth = math.max(0, depth - 1); cur += '}'
      case ',' if depth == 0 => out += cur.result(); cur.clear()
      case c => cur += c
    }
    out += cur.result()
    out.map(_.trim).filter(_.nonEmpty).toSeq
  }
}

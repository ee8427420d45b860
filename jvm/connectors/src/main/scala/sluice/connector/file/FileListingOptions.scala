package sluice.connector.file

import scala.util.control.NonFatal

import org.apache.hadoop.fs.FileStatus
import org.apache.spark.sql.catalyst.util.CaseInsensitiveMap
import org.apache.spark.sql.execution.datasources.{PathFilterFactory, PathFilterStrategy}
import org.apache.spark.sql.internal.SQLConf

import sluice.config.ConfigOption
import sluice.errors.SluiceError

/**
 * Spark's file options that choose which files are read, with Spark's meaning, declared once for
 * line and Parquet files: `pathGlobFilter` (a glob on file names), `modifiedBefore` and
 * `modifiedAfter` (file modification times, in the `timeZone` option's zone or the session's). The
 * filters are Spark's own (`PathFilterFactory`, what `spark.read` builds from the same options),
 * applied to every file listed, at every listing. Parquet adds `basePath` and
 * `recursiveFileLookup`, which decide partition columns (`ParquetConfig`).
 */
final case class FileListingFilter(options: Map[String, String]) {

  /** Spark's filters, built where files are listed (the driver); none when no option is given. */
  @transient private lazy val strategies: Seq[PathFilterStrategy] =
    if (options.isEmpty) Nil else PathFilterFactory.create(CaseInsensitiveMap(options))

  def accepts(file: FileStatus): Boolean = strategies.forall(_.accept(file))
}

object FileListingOptions {
  val PathGlobFilter: ConfigOption[String] = ConfigOption.string(
    "pathGlobFilter",
    "Spark's option: only files whose name matches this glob (e.g. `*.parquet`) are read; directories are " +
      "not filtered")
  val ModifiedBefore: ConfigOption[String] = ConfigOption.string(
    "modifiedBefore",
    "Spark's option: only files modified before this time (`YYYY-MM-DDTHH:mm:ss`, in the `timeZone` option's (line files) " +
      "zone or the session's) are read")
  val ModifiedAfter: ConfigOption[String] = ConfigOption.string(
    "modifiedAfter",
    "Spark's option: only files modified after this time (`YYYY-MM-DDTHH:mm:ss`, in the `timeZone` option's (line files) " +
      "zone or the session's) are read; a monitored source still finds later files")

  val all: Seq[ConfigOption[_]] = Seq(PathGlobFilter, ModifiedBefore, ModifiedAfter)

  private val TimeZone = "timeZone"

  /**
   * The filter `raw` asks for, checked now as Spark checks it (a time it cannot parse is refused
   * here, in Spark's words), its times in the zone fixed now (the option's, else the session's).
   */
  def filter(raw: Map[String, String], context: String): FileListingFilter = {
    def option(name: String) = raw.collectFirst { case (k, v) if k.equalsIgnoreCase(name) => v }
    val options = all.flatMap(o => option(o.name).map(o.name -> _)).toMap
    if (options.isEmpty) return FileListingFilter(Map.empty)
    val zone = TimeZone -> option(TimeZone).getOrElse(SQLConf.get.sessionLocalTimeZone)
    val filter = FileListingFilter(options + zone)
    try PathFilterFactory.create(CaseInsensitiveMap(filter.options))
    catch {
      case NonFatal(e) =>
        throw SluiceError.config(
          s"$context: ${options.keys.toSeq.sorted.mkString(", ")}: ${e.getMessage}",
          e)
    }
    filter
  }
}

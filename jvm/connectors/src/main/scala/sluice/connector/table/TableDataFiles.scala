package sluice.connector.table

import java.io.FileNotFoundException

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.types.StructType

import sluice.config.RecordLayout
import sluice.connector.file.{DiscoveredFile, FileConfig, ListedFileReads}
import sluice.connector.file.parquet.ParquetConfig
import sluice.connector.format.Provenance
import sluice.errors.SluiceError

/**
 * What the table sources (Iceberg, Delta) share: a table's data files are planned by the format's
 * own library and read by Sluice's Parquet path (`ParquetEnumerator` with planned files), so the
 * rows they give, and how a planned file becomes a file the Parquet reader checks, are the same.
 */
private[connector] object TableDataFiles {

  /** The rows of a table source: its columns (and partition columns), then the provenance columns when full. */
  def schemaOf(config: ParquetConfig, layout: RecordLayout, context: String): StructType =
    layout match {
      case RecordLayout.Full => Provenance.appendTo(config.outputSchema, context)
      case RecordLayout.Compact if config.timestampColumn.isDefined =>
        throw SluiceError.config(
          s"$context: option '${FileConfig.TimestampColumn.name}' gives records an event " +
            "time, but compact rows (forceTimestampSupport=false) carry none; remove it or set " +
            "forceTimestampSupport=true.")
      case RecordLayout.Compact => config.outputSchema
    }

  /**
   * The planned files with the file system's length and modification time, which the Parquet
   * reader checks again before it reads (a data file of a table is never rewritten in place).
   * A missing file fails, naming it, unless `ignoreMissing`.
   */
  def withModificationTimes(
      files: Seq[DiscoveredFile],
      conf: Configuration,
      ignoreMissing: Boolean,
      context: String,
      whenRemoved: String): Seq[DiscoveredFile] =
    ListedFileReads
      .inParallel(files, 8, "sluice-table-stat") { f =>
        val p = new Path(f.path)
        val status = p.getFileSystem(conf).getFileStatus(p)
        f.copy(length = status.getLen, modificationTime = status.getModificationTime)
      }
      .flatMap {
        case (_, Right(f)) => Some(f)
        case (_, Left(_: FileNotFoundException)) if ignoreMissing => None
        case (f, Left(e)) =>
          throw SluiceError.sourceFault(
            s"$context: data file '${f.path}' of the table's snapshot cannot be read: " +
              s"${e.getMessage}. $whenRemoved: read a snapshot that is still kept, or set option " +
              s"'${FileConfig.IgnoreMissingFiles.name}' to skip missing files.",
            e)
      }
}

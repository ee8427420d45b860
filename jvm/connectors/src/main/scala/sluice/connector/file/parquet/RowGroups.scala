package sluice.connector.file.parquet

import java.io.{ByteArrayInputStream, IOException}
import java.nio.{ByteBuffer, ByteOrder}
import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.format.{FileMetaData, Util}
import org.apache.parquet.format.converter.ParquetMetadataConverter
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.BlockMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.schema.LogicalTypeAnnotation.{TimeUnit, TimestampLogicalTypeAnnotation}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import sluice.connector.file.DiscoveredFile
import sluice.errors.SluiceError

/**
 * Reads a Parquet file's footer on the driver and turns its row groups into splits: where each
 * row group's rows and bytes are, and its min/max statistics of the event-time column. Row groups
 * whose statistics no row passing the source's filters fits are left out (`ParquetPruning`).
 */
private[parquet] object RowGroups {

  def splitsOf(
      file: DiscoveredFile,
      conf: Configuration,
      config: ParquetConfig): Seq[RowGroupSplit] = {
    val path = new Path(file.path)
    val (metadata, mids, exactMidpoints) = footer(path, file.length, conf) match {
      case Some(raw) =>
        (new ParquetMetadataConverter().fromParquetMetadata(raw), midpoints(raw), true)
      case None => // an encrypted footer: parquet-mr decrypts it; the converted footer's offsets are used
        val reader = ParquetFileReader.open(HadoopInputFile.fromPath(path, conf))
        val m =
          try reader.getFooter
          finally reader.close()
        // close to parquet-mr's rule on the raw footer, but not the same in every case (a
        // dictionary offset of 0, encrypted column metadata): no row group counts as alone at its
        // midpoint, so their rows are read as rows, each row's index checked
        (
          m,
          m.getBlocks.asScala.toIndexedSeq.map(b => b.getStartingPos + b.getCompressedSize / 2),
          false)
    }
    val blocks = metadata.getBlocks.asScala.toIndexedSeq
    val firstRows = blocks.scanLeft(0L)(_ + _.getRowCount)
    val atMidpoint = mids.groupBy(identity).view.mapValues(_.size).toMap
    // row groups no row passing the query's filters can be in make no split: positions are row
    // indexes in the file, so the other row groups' are unchanged
    // on the file's own names of the columns (by field id where the reader finds them so)
    val fileSchema = metadata.getFileMetaData.getSchema
    val predicates =
      ParquetPruning.rowGroupPredicates(
        config.fileFilters(fileSchema),
        metadata.getFileMetaData,
        config)
    val eventTimeColumn =
      config.timestampColumn.map(c => c -> config.fileColumnNames(fileSchema).get(c))
    // a row group whose every row its table deleted makes no split either
    blocks.indices
      .filter { i =>
        blocks(i).getRowCount > 0 && ParquetPruning.rowGroupMayMatch(predicates, blocks(i)) &&
        !file.deleted.exists(_.coversAll(firstRows(i), firstRows(i + 1)))
      }
      .map { i =>
        val b = blocks(i)
        val times = eventTimeColumn.flatMap { case (c, inFile) =>
          eventTimes(file.path, b, c, inFile, config)
        }
        RowGroupSplit(
          file.path,
          i,
          blocks.size,
          firstRows(i),
          b.getRowCount,
          mids(i),
          1L,
          file.length,
          file.modificationTime,
          times.flatMap(_._1),
          times.flatMap(_._2),
          times.exists(_._1.isEmpty),
          aloneAtMidpoint = exactMidpoints && atMidpoint(mids(i)) == 1,
          deleted = file.deleted.flatMap(_.within(firstRows(i), firstRows(i + 1))),
          partitionValues = file.partitionValues,
          constants = file.constants)
      }
  }

  /**
   * A table's data file as one split, from the rows and event-time range its table's metadata
   * records (`DiscoveredFile.statistics`), without opening it: rows `[0, rows)` over the file's
   * whole byte range, which selects every row group, in order, so the readers number rows by
   * counting from 0 as they do for a row group alone at its midpoint (a range starting inside the
   * file starts at the row group holding its first row: `RowGroupFile.startOf`). It carries the
   * file's deleted rows, as a row group's split carries its share. None for a file without rows, or whose every
   * row its table deleted (as for a row group).
   */
  def wholeFile(file: DiscoveredFile): Option[RowGroupSplit] =
    file.statistics
      .filter(s => s.rows > 0 && !file.deleted.exists(_.coversAll(0L, s.rows)))
      .map { stats =>
        RowGroupSplit(
          file.path,
          0,
          1,
          0L,
          stats.rows,
          0L,
          file.length,
          file.length,
          file.modificationTime,
          stats.eventTimes.map(_._1),
          stats.eventTimes.map(_._2),
          noEventTimes = stats.eventTimes.isEmpty,
          aloneAtMidpoint = true,
          deleted = file.deleted.flatMap(_.within(0L, stats.rows)),
          partitionValues = file.partitionValues,
          constants = file.constants)
      }

  /** The file's footer as stored (Thrift), or None for an encrypted footer ("PARE"). */
  private[parquet] def footer(
      path: Path,
      length: Long,
      conf: Configuration): Option[FileMetaData] = {
    val in = path.getFileSystem(conf).open(path)
    try {
      if (length < 12)
        throw new IOException(s"'$path' is $length bytes long: too short for a Parquet file")
      val tail = new Array[Byte](8)
      in.readFully(length - 8, tail)
      val magic = new String(tail, 4, 4, StandardCharsets.US_ASCII)
      if (magic == "PARE") None
      else if (magic != "PAR1")
        throw new IOException(s"'$path' does not end with Parquet's magic bytes (found '$magic')")
      else {
        val size = ByteBuffer.wrap(tail, 0, 4).order(ByteOrder.LITTLE_ENDIAN).getInt
        if (size <= 0 || size > length - 12)
          throw new IOException(s"'$path' has a footer length $size out of the file")
        val bytes = new Array[Byte](size)
        in.readFully(length - 8 - size, bytes)
        Some(Util.readFileMetaData(new ByteArrayInputStream(bytes)))
      }
    } finally in.close()
  }

  /**
   * Each row group's midpoint as parquet-mr's reader computes it to select the row groups of a
   * byte range (`ParquetMetadataConverter`'s midpoint filter, which Spark's Parquet readers use):
   * the first column chunk's offset (its data page offset, or its dictionary page offset when that
   * is set and smaller, even 0, as old writers left it: PARQUET-1402), plus half the row group's
   * `total_compressed_size` when set, else half the sum of its column chunks' compressed sizes.
   * Without column metadata in the footer (encrypted columns) the row group's `file_offset`,
   * corrected as parquet-mr corrects it (PARQUET-2078).
   */
  private[parquet] def midpoints(meta: FileMetaData): IndexedSeq[Long] = {
    val groups = meta.getRow_groups.asScala.toIndexedSeq
    val withMetadata = groups.isEmpty || groups.head.getColumns.get(0).isSetMeta_data
    var previousStart = 0L
    var previousSize = 0L
    groups.map { g =>
      val start =
        if (withMetadata) {
          val md = g.getColumns.get(0).getMeta_data
          val data = md.getData_page_offset
          if (md.isSetDictionary_page_offset && data > md.getDictionary_page_offset)
            md.getDictionary_page_offset
          else data
        } else {
          var s = g.getFile_offset
          val invalid = if (previousStart == 0L) s != 4L else s < previousStart + previousSize
          if (invalid) s = if (previousStart == 0L) 4L else previousStart + previousSize
          previousStart = s
          previousSize = g.getTotal_compressed_size
          s
        }
      val total =
        if (g.isSetTotal_compressed_size) g.getTotal_compressed_size
        else g.getColumns.asScala.map(_.getMeta_data.getTotal_compressed_size).sum
      start + total / 2
    }
  }

  /**
   * The row group's smallest and largest event time in epoch milliseconds from its statistics;
   * (None, None) when statistics say every value is null; None when they cannot tell (no
   * statistics, INT96 timestamps, a partition column, a column the file does not hold).
   * `inFile`: the column as this file names it (`ParquetConfig.fileColumnNames`: a Delta table's
   * physical name under column mapping, an Iceberg table's file's name of its field id).
   */
  private def eventTimes(
      path: String,
      b: BlockMetaData,
      column: String,
      inFile: Option[String],
      config: ParquetConfig): Option[(Option[Long], Option[Long])] = {
    val chunk = inFile.flatMap { name =>
      b.getColumns.asScala.find { c =>
        val p = c.getPath.toArray
        // found by field id, `name` is the file's own: another column may differ from it in case only
        p.length == 1 && (if (config.caseSensitive || config.matchFieldIds) p(0) == name
                          else p(0).equalsIgnoreCase(name))
      }
    }
    chunk.foreach { c =>
      c.getPrimitiveType.getLogicalTypeAnnotation match {
        case ts: TimestampLogicalTypeAnnotation if config.timestampIsMillis =>
          throw SluiceError.config(
            s"${ParquetConfig.Context}: timestampColumn '$column' is read by Spark " +
              s"as BIGINT, which this source takes as epoch milliseconds, but in '$path' it is a Parquet TIMESTAMP(" +
              s"${ts.getUnit}) (a BIGINT schema over a timestamp column, or spark.sql.legacy.parquet.nanosAsLong): " +
              "its event times would be wrong. Read the column as TIMESTAMP, or use a BIGINT column of epoch milliseconds.")
        case _ =>
      }
    }
    chunk.flatMap { c =>
      val stats: Statistics[_] = c.getStatistics
      val toMillis = millis(c.getPrimitiveType)
      if (stats == null || toMillis.isEmpty || stats.isEmpty) None
      else if (!stats.hasNonNullValue) {
        if (stats.isNumNullsSet && stats.getNumNulls == b.getRowCount) Some((None, None))
        else None
      } else {
        val f = toMillis.get
        Some(
          (
            Some(f(stats.genericGetMin.asInstanceOf[java.lang.Long])),
            Some(f(stats.genericGetMax.asInstanceOf[java.lang.Long]))))
      }
    }
  }

  /** How a stored INT64 becomes epoch milliseconds, as the reader computes a row's event time. */
  private def millis(t: org.apache.parquet.schema.PrimitiveType): Option[Long => Long] =
    if (t.getPrimitiveTypeName != PrimitiveTypeName.INT64) None
    else
      t.getLogicalTypeAnnotation match {
        case ts: TimestampLogicalTypeAnnotation =>
          ts.getUnit match {
            case TimeUnit.MILLIS => Some(v => v)
            case TimeUnit.MICROS => Some(v => Math.floorDiv(v, 1000L))
            case TimeUnit.NANOS => Some(v => Math.floorDiv(v, 1000000L))
          }
        case null => Some(v => v) // a BIGINT of epoch milliseconds
        case _ => None
      }
}

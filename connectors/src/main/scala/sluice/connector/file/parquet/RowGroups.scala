package sluice.connector.file.parquet

import scala.jdk.CollectionConverters._

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.column.statistics.Statistics
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.BlockMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.schema.LogicalTypeAnnotation.{TimeUnit, TimestampLogicalTypeAnnotation}
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName

import sluice.connector.file.DiscoveredFile

/**
 * Reads a Parquet file's footer on the driver and turns its row groups into splits: where each
 * row group's rows and bytes are, and its min/max statistics of the event-time column.
 */
private[parquet] object RowGroups {

  def splitsOf(file: DiscoveredFile, conf: Configuration, config: ParquetConfig): Seq[RowGroupSplit] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(file.path), conf))
    val blocks = try reader.getFooter.getBlocks.asScala.toIndexedSeq finally reader.close()
    val firstRows = blocks.scanLeft(0L)(_ + _.getRowCount)
    blocks.indices.filter(i => blocks(i).getRowCount > 0).map { i =>
      val b = blocks(i)
      val times = config.timestampColumn.flatMap(c => eventTimes(b, c, config))
      RowGroupSplit(file.path, i, blocks.size, firstRows(i), b.getRowCount, b.getStartingPos, b.getCompressedSize,
        file.length, file.modificationTime, times.flatMap(_._1), times.flatMap(_._2), times.exists(_._1.isEmpty))
    }
  }

  /**
   * The row group's smallest and largest event time in epoch milliseconds from its statistics;
   * (None, None) when statistics say every value is null; None when they cannot tell (no
   * statistics, INT96 timestamps, a partition column).
   */
  private def eventTimes(b: BlockMetaData, column: String, config: ParquetConfig): Option[(Option[Long], Option[Long])] = {
    val chunk = b.getColumns.asScala.find { c =>
      val p = c.getPath.toArray
      p.length == 1 && (if (config.caseSensitive) p(0) == column else p(0).equalsIgnoreCase(column))
    }
    chunk.flatMap { c =>
      val stats: Statistics[_] = c.getStatistics
      val toMillis = millis(c.getPrimitiveType)
      if (stats == null || toMillis.isEmpty || stats.isEmpty) None
      else if (!stats.hasNonNullValue) {
        if (stats.isNumNullsSet && stats.getNumNulls == b.getRowCount) Some((None, None)) else None
      } else {
        val f = toMillis.get
        Some((Some(f(stats.genericGetMin.asInstanceOf[java.lang.Long])), Some(f(stats.genericGetMax.asInstanceOf[java.lang.Long]))))
      }
    }
  }

  /** How a stored INT64 becomes epoch milliseconds, as the reader computes a row's event time. */
  private def millis(t: org.apache.parquet.schema.PrimitiveType): Option[Long => Long] =
    if (t.getPrimitiveTypeName != PrimitiveTypeName.INT64) None
    else t.getLogicalTypeAnnotation match {
      case ts: TimestampLogicalTypeAnnotation => ts.getUnit match {
        case TimeUnit.MILLIS => Some(v => v)
        case TimeUnit.MICROS => Some(v => Math.floorDiv(v, 1000L))
        case TimeUnit.NANOS => Some(v => Math.floorDiv(v, 1000000L))
      }
      case null => Some(v => v) // a BIGINT of epoch milliseconds
      case _ => None
    }
}

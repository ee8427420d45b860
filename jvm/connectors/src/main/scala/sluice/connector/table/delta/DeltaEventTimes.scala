package sluice.connector.table.delta

import scala.util.control.NonFatal

import io.delta.kernel.data.Row
import io.delta.kernel.expressions.Column
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.statistics.DataFileStatistics
import io.delta.kernel.types.{StructType, TimestampNTZType, TimestampType}

import sluice.connector.file.FileStatistics

/**
 * A data file's event-time range from the statistics the Delta log records with its `add`
 * action (`numRecords`, `minValues`, `maxValues`, `nullCount`), as Kernel's scan files hand them
 * (`getScanFiles(engine, includeStats = true)`) and Kernel's own parser reads them. Delta writers
 * truncate timestamps in statistics to milliseconds, so a recorded maximum can lie up to 999 µs
 * below the file's true one: the maximum is widened by that much before it becomes epoch
 * milliseconds (rounded down, as the readers compute a row's event time), so the index never
 * claims less than a row holds. A minimum truncated down is below the true one already. A long
 * column holds epoch milliseconds, recorded exactly.
 */
private[delta] final class DeltaEventTimes(tableSchema: StructType, val column: String) {
  private val field = tableSchema.get(column)
  private val statsSchema = new StructType().add(field)
  private val key = new Column(column)
  private val (minOf, maxOf): (Long => Long, Long => Long) = field.getDataType match {
    case _: TimestampType | _: TimestampNTZType =>
      (
        Math.floorDiv(_, 1000L),
        micros => Math.floorDiv(micros + DeltaEventTimes.TruncatedMicros, 1000L))
    case _ => (identity, identity)
  }

  /** The file's rows and event-time range; None when the log records no statistics of the column. */
  def of(scanFile: Row): Option[FileStatistics] = {
    val add = scanFile.getStruct(InternalScanFileUtils.ADD_FILE_ORDINAL)
    val at = InternalScanFileUtils.ADD_FILE_STATS_ORDINAL
    val json = if (add.isNullAt(at)) None else Option(add.getString(at))
    val stats =
      try json.flatMap(j => toOption(DataFileStatistics.deserializeFromJson(j, statsSchema)))
      catch { case NonFatal(_) => None } // unreadable statistics: the footers tell instead
    stats.flatMap { s =>
      def value(m: java.util.Map[Column, io.delta.kernel.expressions.Literal]) =
        Option(m.get(key)).flatMap(l => Option(l.getValue)).map(_.asInstanceOf[Number].longValue)
      (value(s.getMinValues), value(s.getMaxValues)) match {
        case (Some(min), Some(max)) =>
          Some(FileStatistics(s.getNumRecords, Some((minOf(min), maxOf(max)))))
        case _ =>
          // no bounds: a column of nulls only (the null count says so) has no event times at all
          Option(s.getNullCount.get(key))
            .filter(_ == s.getNumRecords)
            .map(_ => FileStatistics(s.getNumRecords, None))
      }
    }
  }

  private def toOption[T](o: java.util.Optional[T]): Option[T] =
    if (o.isPresent) Some(o.get) else None
}

private[delta] object DeltaEventTimes {

  /** How far below the truth a maximum truncated to milliseconds can be. */
  val TruncatedMicros = 999L

  /** What to set so that new data files record the column's statistics. */
  def advice(column: String): String =
    s"Delta writes statistics of the first 32 columns by default: set table property " +
      s"'delta.dataSkippingStatsColumns' to include '$column' (or raise " +
      "'delta.dataSkippingNumIndexedCols' past its position); files written after that carry them."
}

package sluice.connector.table.delta

import java.time.{Instant, OffsetDateTime}
import java.time.format.DateTimeFormatter
import java.util.concurrent.ConcurrentHashMap

import scala.util.Try

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.delta.kernel.data.Row
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.types.{StructType, TimestampType}

import sluice.connector.file.FileStatistics

/**
 * A data file's event-time range from the statistics the Delta log records with its `add`
 * action (`numRecords`, `minValues`, `maxValues`, `nullCount`), as Kernel's scan files hand them
 * (`getScanFiles(engine, includeStats = true)`). The JSON is read here, a timestamp with
 * java.time's ISO_OFFSET_DATE_TIME: writers record them with or without fractions of a second,
 * in milliseconds or microseconds, in UTC or at an offset, and Kernel's own parser takes only
 * milliseconds in UTC. Both bounds become epoch milliseconds rounded down, as the readers compute
 * a row's event time (microseconds rounded down). Delta writers may truncate timestamps in
 * statistics to milliseconds, so a recorded maximum can lie up to 999 µs below the file's true
 * one, but never in another millisecond: rounded down, it is the largest row's event time all
 * the same, and no widening is needed. A long column holds epoch milliseconds, recorded exactly.
 * Under column mapping the statistics are keyed by the column's physical name (`statsKey`).
 */
private[delta] final class DeltaEventTimes(
    tableSchema: StructType,
    val column: String,
    /** The column's key in the statistics: its physical name under column mapping. */
    statsKey: String) {
  def this(tableSchema: StructType, column: String) = this(tableSchema, column, column)

  private val isTimestamp = tableSchema.get(column).getDataType.isInstanceOf[TimestampType]

  /** Files whose statistics of the column are there but unreadable, with the value (for the warning). */
  private val unreadable = new ConcurrentHashMap[String, String]()

  def unreadableValue(path: String): Option[String] = Option(unreadable.get(path))

  /**
   * Files whose statistics count no rows (`numRecords` 0 or absent): planned by their footers,
   * which no table property changes (the warning does not advise one for them).
   */
  private val uncounted = ConcurrentHashMap.newKeySet[String]()

  def countsNoRows(path: String): Boolean = uncounted.contains(path)

  /**
   * The file's rows and event-time range; None when the log records no statistics of the column,
   * when they cannot be read (`unreadableValue` then says which), or when they count no rows
   * (a count of 0 is not trusted to skip a file unread: its footer tells).
   */
  def of(scanFile: Row): Option[FileStatistics] = {
    val add = scanFile.getStruct(InternalScanFileUtils.ADD_FILE_ORDINAL)
    val at = InternalScanFileUtils.ADD_FILE_STATS_ORDINAL
    of(
      InternalScanFileUtils.getAddFileStatus(scanFile).getPath,
      if (add.isNullAt(at)) None else Option(add.getString(at)))
  }

  /** As `of(scanFile)`, for the file at `path` whose `add` action records `json` as its statistics. */
  def of(path: String, json: Option[String]): Option[FileStatistics] =
    json.flatMap(j => Try(DeltaEventTimes.Json.readTree(j)).toOption).flatMap { stats =>
      val rows = Option(stats.get("numRecords")).filter(_.canConvertToLong).map(_.asLong)
      if (!rows.exists(_ > 0)) uncounted.add(path)
      def node(kind: String) =
        Option(stats.get(kind)).flatMap(m => Option(m.get(statsKey))).filterNot(_.isNull)
      def value(kind: String): Option[Either[String, Long]] =
        node(kind).map(n => toMicrosOrMillis(n).toRight(n.toString))
      (rows, value("minValues"), value("maxValues")) match {
        case (Some(n), Some(Right(min)), Some(Right(max))) if n > 0 =>
          Some(FileStatistics(n, Some((millis(min), millis(max)))))
        case (_, Some(Left(bad)), _) => unreadable.put(path, bad); None
        case (_, _, Some(Left(bad))) => unreadable.put(path, bad); None
        case (Some(n), None, None) if n > 0 =>
          // no bounds: a column of nulls only (the null count says so) has no event times at all
          node("nullCount")
            .filter(c => c.canConvertToLong && c.asLong == n)
            .map(_ => FileStatistics(n, None))
        case _ => None
      }
    }

  /** A timestamp's epoch microseconds (any ISO-8601 form with an offset), a long's value. */
  private def toMicrosOrMillis(n: JsonNode): Option[Long] =
    if (!isTimestamp) Option(n).filter(_.canConvertToLong).map(_.asLong)
    else if (!n.isTextual) None
    else DeltaEventTimes.micros(n.asText)

  private def millis(v: Long): Long = if (isTimestamp) Math.floorDiv(v, 1000L) else v
}

private[delta] object DeltaEventTimes {
  private val Json = new ObjectMapper()

  /** Epoch microseconds of an ISO-8601 timestamp with an offset (`Z`, `+01:00`), any fraction. */
  def micros(text: String): Option[Long] =
    Try {
      val i: Instant =
        OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant
      Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)
    }.toOption

  /** What to set so that new data files record the column's statistics. */
  def advice(column: String): String =
    s"Delta writes statistics of the first 32 columns by default: set table property " +
      s"'delta.dataSkippingStatsColumns' to include '$column' (or raise " +
      "'delta.dataSkippingNumIndexedCols' past its position); files written after that carry them."
}

package sluice.connector.table

import java.util.concurrent.ConcurrentHashMap

/**
 * The warning both table sources give when their metadata lacks statistics of the event-time
 * column for some data files: those files' splits come from their Parquet footers instead (each
 * file opened at planning, as the Parquet source does), which is slower but reads the same rows.
 * Said once per table, column and snapshot in a driver: a source value is planned again for each
 * set of pushed filters and on every restart.
 */
private[connector] object TableEventTimes {
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)
  private val warned = new ConcurrentHashMap[String, String]()

  private def key(table: String, snapshot: String, column: String) =
    s"$table\u0000$snapshot\u0000$column"

  /** The warning given for this table, snapshot and column, if one was (tests ask). */
  def warning(table: String, snapshot: String, column: String): Option[String] =
    Option(warned.get(key(table, snapshot, column)))

  def warnWithoutStatistics(
      context: String,
      table: String,
      snapshot: String,
      column: String,
      files: Seq[String],
      toSet: String): Unit =
    if (files.nonEmpty) {
      val message =
        s"$context: the metadata of table '$table' ($snapshot) records no minimum and maximum of " +
          s"timestampColumn '$column' for ${files.size} data file(s) (e.g. '${files.head}'), so " +
          "those files are placed in event time by their Parquet footers' row-group statistics, " +
          s"each file opened when the query plans, instead of by the table's statistics. $toSet"
      if (warned.putIfAbsent(key(table, snapshot, column), message) == null) log.warn(message)
    }
}

package sluice.connector.table

/**
 * The warning both table sources give when their metadata gives no event-time range of the
 * event-time column for some data files: those files' splits come from their Parquet footers
 * instead (each file opened at planning, as the Parquet source does), which is slower but reads
 * the same rows. The statistics may be absent (the writer kept none of the column) or present
 * but unreadable (a value that is no timestamp): the warning says which, since only the first
 * is cured by a table property. Said once per table, column and snapshot in a driver (a source
 * value is planned again for each set of pushed filters and on every restart); the last
 * `Remembered` of them are kept, so that a long-lived driver reading many snapshots does not
 * keep them all.
 */
private[connector] object TableEventTimes {
  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  /** How many warnings given are remembered (tables x snapshots x columns). */
  val Remembered = 1000

  private val warned = new java.util.LinkedHashMap[String, String]() {
    override def removeEldestEntry(e: java.util.Map.Entry[String, String]): Boolean =
      size > Remembered
  }

  private def key(table: String, snapshot: String, column: String) =
    s"$table\u0000$snapshot\u0000$column"

  /** The warning given for this table, snapshot and column, if one was (tests ask). */
  def warning(table: String, snapshot: String, column: String): Option[String] =
    warned.synchronized(Option(warned.get(key(table, snapshot, column))))

  /**
   * `absent`: files whose metadata records no range of the column; `unreadable`: files whose
   * recorded range cannot be read, each with the value; `uncounted`: files whose metadata
   * counts no rows (a count of 0 is not trusted to leave a file unread), which no property
   * changes either.
   */
  def warnWithoutStatistics(
      context: String,
      table: String,
      snapshot: String,
      column: String,
      absent: Seq[String],
      toSet: String,
      unreadable: Seq[(String, String)] = Nil,
      uncounted: Seq[String] = Nil): Unit =
    if (absent.nonEmpty || unreadable.nonEmpty || uncounted.nonEmpty) {
      val missing = absent.headOption.map { example =>
        s"the metadata of table '$table' ($snapshot) records no minimum and maximum of " +
          s"timestampColumn '$column' for ${absent.size} data file(s) (e.g. '$example'). $toSet " +
          "A file written before the column was added to the table records none whatever is set " +
          "(it holds no value of the column): only rewriting it gives it statistics."
      }
      val bad = unreadable.headOption.map { case (example, value) =>
        s"the metadata of table '$table' ($snapshot) records statistics of timestampColumn " +
          s"'$column' that are no timestamp Sluice can read for ${unreadable.size} data file(s) " +
          s"(e.g. '$example': $value); no table property changes that: report it to the writer " +
          "that wrote them."
      }
      val empty = uncounted.headOption.map { example =>
        s"the metadata of table '$table' ($snapshot) counts no rows for ${uncounted.size} data " +
          s"file(s) (e.g. '$example'), which is not trusted to leave a file unread; no table " +
          "property changes that."
      }
      val message =
        s"$context: ${(missing ++ bad ++ empty).mkString("; ")} Those files are placed in event time by " +
          "their Parquet footers' row-group statistics, each file opened when the query plans, " +
          "instead of by the table's statistics."
      val first = warned.synchronized {
        val k = key(table, snapshot, column)
        if (warned.containsKey(k)) false else { warned.put(k, message); true }
      }
      if (first) log.warn(message)
    }
}

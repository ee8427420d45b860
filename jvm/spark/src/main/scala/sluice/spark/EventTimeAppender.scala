package sluice.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, SpecificInternalRow}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types.{LongType, StructType, TimestampType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarBatch}

import sluice.api.{ColumnarFetch, RecordsWithSplitIds}
import sluice.eventtime.EventTimeSettings

/**
 * Executor side of event time: takes each record's event time — from the strategy's timestamp
 * column, or the connector's own record time — and appends it to the row as the event-time column (`event_time` unless
 * `watermark.eventTimeColumn` names another),
 * without copying the row (one reused joined row per task). Column batches get it as one more
 * vector (one per task, refilled for each batch).
 */
final class EventTimeAppender(settings: EventTimeSettings, sourceSchema: StructType) {
  private val columnIndex = settings.timestampColumn.map(sourceSchema.fieldIndex).getOrElse(-1)
  private val columnIsMillis = columnIndex >= 0 && sourceSchema(columnIndex).dataType == LongType
  private val eventTimeRow = new SpecificInternalRow(Seq(TimestampType))
  private val joined = new JoinedRow

  /** The event time in epoch ms of `row`, whose connector record time is `recordTimeMs`. */
  def eventTimeMs(row: InternalRow, recordTimeMs: Long): Long =
    if (columnIndex < 0) recordTimeMs
    else if (row.isNullAt(columnIndex)) RecordsWithSplitIds.NoTimestamp
    else columnValueMs(row.getLong(columnIndex))

  /** A value of the event-time column (epoch ms, or a timestamp in µs) in epoch ms. */
  private def columnValueMs(value: Long): Long =
    if (columnIsMillis) value else Math.floorDiv(value, 1000L)

  /** `row` followed by the event-time column (null when the record has none). */
  def append(row: InternalRow, eventTimeMs: Long): InternalRow = {
    if (eventTimeMs == RecordsWithSplitIds.NoTimestamp) eventTimeRow.setNullAt(0)
    else eventTimeRow.setLong(0, eventTimeMs * 1000L)
    joined(row, eventTimeRow)
  }

  private var column: OnHeapColumnVector = _

  /**
   * `fetched`'s batch with the event-time column appended, and the batch's largest event time
   * (`NoTimestamp` when no row has one). The vector is reused: valid until the next call.
   */
  def appendColumn(fetched: ColumnarFetch): (ColumnarBatch, Long) = {
    val batch = fetched.batch
    val n = batch.numRows()
    if (column == null) column = new OnHeapColumnVector(math.max(n, 4096), TimestampType)
    column.reset()
    column.reserve(n)
    val source = if (columnIndex < 0) null else batch.column(columnIndex)
    var max = RecordsWithSplitIds.NoTimestamp
    var i = 0
    while (i < n) {
      val t =
        if (source == null) fetched.recordTime(i)
        else if (source.isNullAt(i)) RecordsWithSplitIds.NoTimestamp
        else columnValueMs(source.getLong(i))
      if (t == RecordsWithSplitIds.NoTimestamp) column.putNull(i)
      else {
        column.putLong(i, t * 1000L)
        if (t > max) max = t
      }
      i += 1
    }
    val columns = Array.tabulate[ColumnVector](batch.numCols() + 1)(c =>
      if (c < batch.numCols()) batch.column(c) else column)
    (new ColumnarBatch(columns, n), max)
  }
}

package sluice.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, SpecificInternalRow}
import org.apache.spark.sql.types.{LongType, StructType, TimestampType}

import sluice.api.RecordsWithSplitIds
import sluice.eventtime.EventTimeSettings

/**
 * Executor side of event time: takes each record's event time — from the strategy's timestamp
 * column, or the connector's own record time — and appends it to the row as the event-time column (`event_time` unless
 * `watermark.eventTimeColumn` names another),
 * without copying the row (one reused joined row per task).
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
    else if (columnIsMillis) row.getLong(columnIndex)
    else Math.floorDiv(row.getLong(columnIndex), 1000L)

  /** `row` followed by the event-time column (null when the record has none). */
  def append(row: InternalRow, eventTimeMs: Long): InternalRow = {
    if (eventTimeMs == RecordsWithSplitIds.NoTimestamp) eventTimeRow.setNullAt(0)
    else eventTimeRow.setLong(0, eventTimeMs * 1000L)
    joined(row, eventTimeRow)
  }
}

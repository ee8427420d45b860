package sluice.connector.generator

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.unsafe.types.UTF8String

import sluice.api.{RecordEmitter, RecordsWithSplitIds}
import sluice.config.RecordLayout

/**
 * A generated record as the reader fetches it: which split, which record of it. One per reader,
 * moved from record to record (Flink's file source reuses its `RecordAndPosition` the same way),
 * so fetching allocates nothing per record.
 */
private[generator] final class GeneratedRecord {
  var split: GeneratorSplit = _
  var index: Long = 0L
}

/**
 * Turns a generated record into its row (Flink's `RecordEmitter`): id, split, event time and
 * payload, or id and payload only for compact rows, which carry no event time. The values are
 * `GeneratorConfig`'s pure functions of the split and the record's index; `GeneratorReader` only
 * says which records exist now.
 */
private[generator] final class GeneratorRecordEmitter(
    config: GeneratorConfig,
    layout: RecordLayout)
    extends RecordEmitter[GeneratedRecord] {
  private val compact = layout == RecordLayout.Compact
  private val values = new Array[Any](if (compact) 2 else 4)
  private val theRow = new GenericInternalRow(values)
  private var record: GeneratedRecord = _

  override def emit(r: GeneratedRecord, splitId: String): Boolean = {
    record = r
    val s = r.split.index
    val i = r.index
    if (compact) {
      values(0) = config.recordId(s, i)
      values(1) = UTF8String.fromString(config.payload(s, i))
    } else {
      values(0) = config.recordId(s, i)
      values(1) = s
      values(2) = config.eventTimeMs(s, i) * 1000L
      values(3) = UTF8String.fromString(config.payload(s, i))
    }
    true
  }

  override def nextRow(): Boolean = false
  override def row: InternalRow = theRow
  override def eventTime: Long =
    if (compact) RecordsWithSplitIds.NoTimestamp
    else config.eventTimeMs(record.split.index, record.index)

  /** As the records' default: when a generated record "arrived" is its event time. */
  override def arrivalTime: Long = eventTime
  override def position: Long = record.index + 1
  override def hasMoreRows: Boolean = false
}

package sluice.api

import org.apache.spark.sql.catalyst.InternalRow

/**
 * The raw records of one fetch, grouped by split (Flink's `RecordsWithSplitIds<E>`): what a
 * split reader that only fetches returns. `nextSplit()` moves to the next split (null when
 * done), `nextRecord()` returns its next record, or null once the split has none in this fetch
 * (records are references: a Kafka `ConsumerRecord`, never null themselves).
 */
trait SplitRecords[E <: AnyRef] {
  def nextSplit(): String
  def nextRecord(): E

  /** Splits whose range is fully read as of this fetch. */
  def finishedSplits: Set[String]
}

/**
 * Turns one raw record into the rows the engine gets (Flink's `RecordEmitter`): zero, one or
 * several rows of the source's schema in the reader's layout, and where the record leaves its
 * split. Kept apart from fetching so that a split reader has one job, fetching, and an emitter
 * one, turning records into rows. A reader pairs the two with `EmittedRecords`; Kafka's reader
 * and the generator's are built this way; the file readers still build rows where they fetch
 * (the emitter would need the split's state, which `emit` is not given).
 */
trait RecordEmitter[E <: AnyRef] {

  /** Starts on `record` of split `splitId`: true when it gives a row (now `row`), false when none. */
  def emit(record: E, splitId: String): Boolean

  /** Moves to the current record's next row: false when it has no more. */
  def nextRow(): Boolean

  /** The current row; valid until the next `emit` or `nextRow`. */
  def row: InternalRow

  /** As `RecordsWithSplitIds`: of the current record. */
  def eventTime: Long
  def arrivalTime: Long
  def position: Long
  def hasMoreRows: Boolean
}

/**
 * The rows of one fetch: `records` turned into rows by `emitter`, as the engine reads them. One
 * per fetch; a record costs the emitter's work and nothing here.
 */
final class EmittedRecords[E <: AnyRef](records: SplitRecords[E], emitter: RecordEmitter[E])
    extends RecordsWithSplitIds {
  private var splitId: String = _

  override def nextSplit(): String = {
    splitId = records.nextSplit()
    splitId
  }

  override def nextRecord(): Boolean = {
    if (emitter.nextRow()) return true
    var record = records.nextRecord()
    while (record != null) {
      if (emitter.emit(record, splitId)) return true
      record = records.nextRecord()
    }
    false
  }

  override def row: InternalRow = emitter.row
  override def eventTime: Long = emitter.eventTime
  override def arrivalTime: Long = emitter.arrivalTime
  override def position: Long = emitter.position
  override def finishedSplits: Set[String] = records.finishedSplits
  override def recordHasMoreRows: Boolean = emitter.hasMoreRows
}

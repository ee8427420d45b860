package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.spark.sql.catalyst.InternalRow

import sluice.api.{ReaderContext, ReaderCounters, RecordEmitter, RecordsWithSplitIds}

/**
 * Turns one Kafka record into rows, as its decoder says (Flink's `KafkaRecordEmitter`): full
 * (Spark's Kafka schema), compact (the value, and the key when asked) or parsed (the value's
 * payload, zero or more rows). Counts what the scan's figures need: each record's serialized
 * size (`bytesRead`) and, per split, the records a payload format dropped as malformed or
 * skipped as null values. `KafkaSplitReader` fetches; this only emits.
 */
private[kafka] sealed abstract class KafkaRecordEmitter(context: ReaderContext)
    extends RecordEmitter[ConsumerRecord[Array[Byte], Array[Byte]]] {
  protected var record: ConsumerRecord[Array[Byte], Array[Byte]] = _
  protected var theRow: InternalRow = _

  /** Makes `r` the current record and counts what it weighs on the wire (a null key or value is -1). */
  protected final def start(r: ConsumerRecord[Array[Byte], Array[Byte]]): Unit = {
    record = r
    context.addBytesRead(math.max(0, r.serializedKeySize) + math.max(0, r.serializedValueSize))
  }

  override final def row: InternalRow = theRow
  override def eventTime: Long = record.timestamp
  override final def arrivalTime: Long = record.timestamp
  override final def position: Long = record.offset + 1
  override def nextRow(): Boolean = false
  override def hasMoreRows: Boolean = false
}

private[kafka] object KafkaRecordEmitter {

  def apply(decoder: KafkaRecordDecoder, context: ReaderContext): KafkaRecordEmitter =
    decoder match {
      case KafkaRecordDecoder.Raw(headers) => new Full(new KafkaRowConverter(headers), context)
      case KafkaRecordDecoder.RawCompact(key) =>
        new Compact(new CompactKafkaRowConverter(key), context, readsTimes = false)
      // a query using only the payload gets exactly the compact rows' converter
      case KafkaRecordDecoder.RawColumns(Seq("value")) =>
        new Compact(new CompactKafkaRowConverter(false), context, readsTimes = true)
      case KafkaRecordDecoder.RawColumns(Seq("key", "value")) =>
        new Compact(new CompactKafkaRowConverter(true), context, readsTimes = true)
      case KafkaRecordDecoder.RawColumns(columns) =>
        new Pruned(new PrunedKafkaRowConverter(columns), context)
      case d @ KafkaRecordDecoder.Parsed(format, provenance, _) =>
        new Parsed(new ParsedRecords(format, provenance), d.readsTimestamps, context)
    }

  // Full, Compact and Pruned share their two-line `emit` on purpose: one class per converter
  // keeps each `converter.convert` call site monomorphic, so the JIT inlines the row building
  // into the hot loop whatever other layouts other queries of the same executor JVM use (one
  // shared emitter over a converter interface would see them all at one call site).

  /** One row per record, the columns of Spark's Kafka source. */
  final class Full(converter: KafkaRowConverter, context: ReaderContext)
      extends KafkaRecordEmitter(context) {
    override def emit(r: ConsumerRecord[Array[Byte], Array[Byte]], splitId: String): Boolean = {
      start(r)
      theRow = converter.convert(r)
      true
    }
  }

  /**
   * One row per record, the payload only; the record time is read only when the layout has
   * record times (a full-layout query that uses only the payload).
   */
  final class Compact(
      converter: CompactKafkaRowConverter,
      context: ReaderContext,
      readsTimes: Boolean)
      extends KafkaRecordEmitter(context) {
    override def emit(r: ConsumerRecord[Array[Byte], Array[Byte]], splitId: String): Boolean = {
      start(r)
      theRow = converter.convert(r)
      true
    }
    override def eventTime: Long =
      if (readsTimes) record.timestamp else RecordsWithSplitIds.NoTimestamp
  }

  /** One row per record, the Kafka columns a query uses. */
  final class Pruned(converter: PrunedKafkaRowConverter, context: ReaderContext)
      extends KafkaRecordEmitter(context) {
    override def emit(r: ConsumerRecord[Array[Byte], Array[Byte]], splitId: String): Boolean = {
      start(r)
      theRow = converter.convert(r)
      true
    }
  }

  /** The value parsed by a payload format: zero or more rows per record. */
  final class Parsed(parsed: ParsedRecords, readsTimestamps: Boolean, context: ReaderContext)
      extends KafkaRecordEmitter(context) {
    override def emit(r: ConsumerRecord[Array[Byte], Array[Byte]], splitId: String): Boolean = {
      start(r)
      val dropped = parsed.malformedDropped
      val nulls = parsed.nullValuesSkipped
      parsed.start(r, splitId)
      val hasRows = parsed.hasNext // parsing is lazy: counters move once it ran
      // parser counters are per reader: attribute what this record moved to its split
      if (parsed.malformedDropped > dropped)
        context.count(splitId, ReaderCounters.MalformedRecordsDropped, 1)
      if (parsed.nullValuesSkipped > nulls)
        context.count(splitId, ReaderCounters.NullValuesSkipped, 1)
      if (hasRows) theRow = parsed.next()
      hasRows
    }

    override def nextRow(): Boolean = parsed.hasNext && { theRow = parsed.next(); true }

    override def hasMoreRows: Boolean = parsed.hasNext
    override def eventTime: Long =
      if (readsTimestamps) record.timestamp else RecordsWithSplitIds.NoTimestamp
  }
}

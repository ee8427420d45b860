package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

import sluice.connector.format.{PayloadFormat, Provenance}

/**
 * Turns Kafka records into rows: raw (Spark's Kafka schema, one row per record), raw with only
 * the columns a query uses (the same columns, fewer of them), raw compact (the value, and the
 * key when asked: nothing else is read from the record), or parsed (the value parsed by the
 * shared payload parsers — the very code the file source uses — followed by the provenance
 * columns unless compact or unused; zero or more rows per record).
 */
sealed trait KafkaRecordDecoder extends Serializable {
  def schema: StructType

  /** Whether rows carry record times (the full layout); compact readers never read them. */
  def readsTimestamps: Boolean = true
}

object KafkaRecordDecoder {
  final case class Raw(includeHeaders: Boolean) extends KafkaRecordDecoder {
    override def schema: StructType = KafkaRowConverter.schema(includeHeaders)
  }

  /**
   * Spark's Kafka columns named by `columns` (in that order, a subset of Spark's), record times
   * read: what a query that uses only those gets without asking for compact rows.
   */
  final case class RawColumns(columns: Seq[String]) extends KafkaRecordDecoder {
    override def schema: StructType =
      StructType(columns.map(KafkaRowConverter.schema(includeHeaders = true)(_)))
  }

  final case class RawCompact(includeKey: Boolean) extends KafkaRecordDecoder {
    override def schema: StructType = CompactKafkaRowConverter.schema(includeKey)
    override def readsTimestamps: Boolean = false
  }

  final case class Parsed(
      format: PayloadFormat,
      withProvenance: Boolean = true,
      override val readsTimestamps: Boolean = true)
      extends KafkaRecordDecoder {
    override def schema: StructType =
      if (withProvenance) Provenance.appendTo(format.outputSchema, "KafkaSource")
      else format.outputSchema
  }
}

/** The executor side of a parsed decoder: reused parser and provenance row. */
private[kafka] final class ParsedRecords(format: PayloadFormat, withProvenance: Boolean) {
  private val parser = format.newParser()
  private val appender = new Provenance.Appender
  private var split: String = _
  private var rows: Iterator[InternalRow] = Iterator.empty
  private var record: ConsumerRecord[Array[Byte], Array[Byte]] = _
  private var nullValues = 0L

  def malformedDropped: Long = parser.malformedDropped
  def nullValuesSkipped: Long = nullValues

  /** Starts the rows of `record`; false when it has none (a tombstone, or dropped as malformed). */
  def start(record: ConsumerRecord[Array[Byte], Array[Byte]], splitId: String): Unit = {
    this.record = record
    if (withProvenance && (splitId ne split)) {
      split = splitId
      appender.split(UTF8String.fromString(splitId))
    }
    val value = record.value
    rows = if (value == null) { nullValues += 1; Iterator.empty }
    else parser.parse(value, 0, value.length, splitId, record.offset)
  }

  def hasNext: Boolean = rows.hasNext

  def next(): InternalRow =
    if (withProvenance)
      appender(rows.next(), record.offset, record.timestamp * 1000L, hasTimestamp = true)
    else rows.next()
}

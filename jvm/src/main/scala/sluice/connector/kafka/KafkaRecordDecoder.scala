package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

import sluice.connector.format.{PayloadFormat, Provenance}

/**
 * Turns Kafka records into rows: raw (Spark's Kafka schema, one row per record) or parsed (the
 * value parsed by the shared payload parsers — the very code the file source uses — followed by
 * the provenance columns; zero or more rows per record).
 */
sealed trait KafkaRecordDecoder extends Serializable {
  def schema: StructType
}

object KafkaRecordDecoder {
  final case class Raw(includeHeaders: Boolean) extends KafkaRecordDecoder {
    override def schema: StructType = KafkaRowConverter.schema(includeHeaders)
  }

  final case class Parsed(format: PayloadFormat) extends KafkaRecordDecoder {
    override def schema: StructType = Provenance.appendTo(format.outputSchema, "KafkaSource")
  }
}

/** The executor side of a parsed decoder: reused parser and provenance row. */
private[kafka] final class ParsedRecords(format: PayloadFormat) {
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
    if (splitId ne split) {
      split = splitId
      appender.split(UTF8String.fromString(splitId))
    }
    val value = record.value
    rows =
      if (value == null) { nullValues += 1; Iterator.empty }
      else parser.parse(value, 0, value.length, splitId, record.offset)
  }

  def hasNext: Boolean = rows.hasNext

  def next(): InternalRow = appender(rows.next(), record.offset, record.timestamp * 1000L, hasTimestamp = true)
}

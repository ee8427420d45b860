package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarBatch, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * Spark's Kafka columns as column vectors over the records of one poll of one partition: each
 * vector reads its field from the record itself (a key or value is handed on as the consumer's
 * own array, never copied here), so a batch costs nothing per row until Spark reads it. Spark's
 * `ColumnarToRow` then copies each value once, into the row it hands on; a row-based scan costs
 * the row the emitter builds and then Spark's `Project` copying that row into another (Spark
 * keeps that `Project` above every row-based DSv2 scan, `RemoveRedundantProjects`).
 *
 * One instance per reader: `batchOf` points the same vectors and batch at the next records, so
 * a batch is valid until the reader's next fetch, as `ColumnarFetch` requires.
 */
private[kafka] final class KafkaRecordVectors(columns: Seq[String]) {
  import KafkaRecordVectors._

  private val vectors: Array[RecordVector] = columns.map(vectorOf).toArray
  private val batch = new ColumnarBatch(vectors.toArray[ColumnVector])

  /** The first `rows` of `records` as a batch of `columns`. */
  def batchOf(records: java.util.List[Record], rows: Int): ColumnarBatch = {
    vectors.foreach(_.show(records, rows))
    batch.setNumRows(rows)
    batch
  }
}

private[kafka] object KafkaRecordVectors {
  type Record = ConsumerRecord[Array[Byte], Array[Byte]]

  /**
   * The columns of `decoder`'s rows, when each is a field of the record (Spark's raw columns);
   * None for headers (an array of structs per row) and for parsed payloads (zero or more rows per
   * record), which are read as rows.
   */
  def columnsOf(decoder: KafkaRecordDecoder): Option[Seq[String]] = decoder match {
    case KafkaRecordDecoder.Raw(false) =>
      Some(KafkaRowConverter.schema(includeHeaders = false).fieldNames.toSeq)
    case d: KafkaRecordDecoder.RawCompact => Some(d.schema.fieldNames.toSeq)
    case KafkaRecordDecoder.RawColumns(columns) if !columns.contains("headers") => Some(columns)
    case _ => None
  }

  private def vectorOf(column: String): RecordVector = column match {
    case "key" => new KeyVector
    case "value" => new ValueVector
    case "topic" => new TopicVector
    case "partition" => new PartitionVector
    case "offset" => new OffsetVector
    case "timestamp" => new TimestampVector
    case "timestampType" => new TimestampTypeVector
    case other => throw new IllegalArgumentException(s"not a raw Kafka column: $other")
  }

  /**
   * A read-only vector of one record field. One class per field, so that each call site of
   * Spark's generated code sees one class and the JIT inlines the field read.
   */
  abstract class RecordVector(dataType: DataType) extends ColumnVector(dataType) {
    protected var records: java.util.List[Record] = _
    protected var rows = 0

    def show(records: java.util.List[Record], rows: Int): Unit = {
      this.records = records
      this.rows = rows
    }

    // the records belong to the consumer's poll, not to the vector: nothing to free
    override def close(): Unit = ()
    override def closeIfFreeable(): Unit = ()
    override def hasNull: Boolean = false
    override def numNulls: Int = 0
    override def isNullAt(rowId: Int): Boolean = false
    private def unsupported: Nothing = throw new UnsupportedOperationException(
      s"Sluice: a Kafka column of type $dataType is read only by that type's getter")
    override def getBoolean(rowId: Int): Boolean = unsupported
    override def getByte(rowId: Int): Byte = unsupported
    override def getShort(rowId: Int): Short = unsupported
    override def getInt(rowId: Int): Int = unsupported
    override def getLong(rowId: Int): Long = unsupported
    override def getFloat(rowId: Int): Float = unsupported
    override def getDouble(rowId: Int): Double = unsupported
    override def getArray(rowId: Int): ColumnarArray = unsupported
    override def getMap(ordinal: Int): ColumnarMap = unsupported
    override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = unsupported
    override def getUTF8String(rowId: Int): UTF8String = unsupported
    override def getBinary(rowId: Int): Array[Byte] = unsupported
    override def getChild(ordinal: Int): ColumnVector = unsupported
  }

  /** A key or value: null where the record's is (a record without key, a tombstone). */
  abstract class BytesVector extends RecordVector(BinaryType) {
    protected def bytes(record: Record): Array[Byte]
    override def hasNull: Boolean = {
      var i = 0
      while (i < rows && bytes(records.get(i)) != null) i += 1
      i < rows
    }
    override def numNulls: Int = {
      var nulls = 0
      var i = 0
      while (i < rows) { if (bytes(records.get(i)) == null) nulls += 1; i += 1 }
      nulls
    }
    override def isNullAt(rowId: Int): Boolean = bytes(records.get(rowId)) == null
    override def getBinary(rowId: Int): Array[Byte] = bytes(records.get(rowId))
  }

  final class KeyVector extends BytesVector {
    override protected def bytes(record: Record): Array[Byte] = record.key
  }

  final class ValueVector extends BytesVector {
    override protected def bytes(record: Record): Array[Byte] = record.value
  }

  /** The partition's topic: one string for every row of a batch. */
  final class TopicVector extends RecordVector(StringType) {
    private var topic: String = _
    private var utf8: UTF8String = _
    override def show(records: java.util.List[Record], rows: Int): Unit = {
      super.show(records, rows)
      if (rows > 0 && (records.get(0).topic ne topic)) { // the consumer interns topic names
        topic = records.get(0).topic
        utf8 = UTF8String.fromString(topic)
      }
    }
    override def getUTF8String(rowId: Int): UTF8String = utf8
  }

  final class PartitionVector extends RecordVector(IntegerType) {
    override def getInt(rowId: Int): Int = records.get(rowId).partition
  }

  final class OffsetVector extends RecordVector(LongType) {
    override def getLong(rowId: Int): Long = records.get(rowId).offset
  }

  /** Spark timestamps are microseconds; Kafka's are milliseconds. */
  final class TimestampVector extends RecordVector(TimestampType) {
    override def getLong(rowId: Int): Long = records.get(rowId).timestamp * 1000L
  }

  final class TimestampTypeVector extends RecordVector(IntegerType) {
    override def getInt(rowId: Int): Int = records.get(rowId).timestampType.id
  }
}

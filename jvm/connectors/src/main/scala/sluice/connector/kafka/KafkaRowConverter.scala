package sluice.connector.kafka

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Builds raw rows, column for column what Spark's Kafka source emits (key, value, topic,
 * partition, offset, timestamp, timestampType, and headers when asked). Without headers it writes
 * straight into one reused UnsafeRow, so a record costs no intermediate objects.
 */
final class KafkaRowConverter(includeHeaders: Boolean) {
  private val writer = new UnsafeRowWriter(7)
  private var topic: String = _
  private var topicUtf8: UTF8String = _
  private lazy val withHeaders =
    UnsafeProjection.create(KafkaRowConverter.schema(includeHeaders = true))
  private lazy val generic = new GenericInternalRow(8)

  def convert(record: ConsumerRecord[Array[Byte], Array[Byte]]): InternalRow = {
    if (record.topic ne topic) { // topics are interned by the consumer; compare references first
      topic = record.topic
      topicUtf8 = UTF8String.fromString(topic)
    }
    if (includeHeaders) convertWithHeaders(record)
    else {
      writer.reset()
      writer.zeroOutNullBytes()
      if (record.key == null) writer.setNullAt(0) else writer.write(0, record.key)
      if (record.value == null) writer.setNullAt(1) else writer.write(1, record.value)
      writer.write(2, topicUtf8)
      writer.write(3, record.partition)
      writer.write(4, record.offset)
      writer.write(5, record.timestamp * 1000L) // Spark timestamps are microseconds
      writer.write(6, record.timestampType.id)
      writer.getRow
    }
  }

  private def convertWithHeaders(
      record: ConsumerRecord[Array[Byte], Array[Byte]]): InternalRow = {
    generic.update(0, record.key)
    generic.update(1, record.value)
    generic.update(2, topicUtf8)
    generic.update(3, record.partition)
    generic.update(4, record.offset)
    generic.update(5, record.timestamp * 1000L)
    generic.update(6, record.timestampType.id)
    generic.update(7, KafkaRowConverter.headers(record))
    withHeaders(generic)
  }
}

object KafkaRowConverter {

  /** A record's headers as Spark's Kafka source gives them: null when there are none. */
  def headers(record: ConsumerRecord[Array[Byte], Array[Byte]]): GenericArrayData = {
    val headers = record.headers.toArray
    if (headers.isEmpty) null
    else
      new GenericArrayData(headers.map { h =>
        new GenericInternalRow(Array[Any](UTF8String.fromString(h.key), h.value))
      })
  }

  val HeadersType: DataType = ArrayType(
    StructType(Seq(StructField("key", StringType), StructField("value", BinaryType))))

  /** Spark's Kafka source schema. */
  def schema(includeHeaders: Boolean): StructType = {
    val base = StructType(
      Seq(
        StructField("key", BinaryType),
        StructField("value", BinaryType),
        StructField("topic", StringType),
        StructField("partition", IntegerType),
        StructField("offset", LongType),
        StructField("timestamp", TimestampType),
        StructField("timestampType", IntegerType)))
    if (includeHeaders) base.add(StructField("headers", HeadersType)) else base
  }
}

/**
 * The compact layout: the value (and the key when asked) written straight into a reused
 * UnsafeRow of one or two columns. Topic, partition, offset and timestamps are never touched.
 */
final class CompactKafkaRowConverter(includeKey: Boolean) {
  private val writer = new UnsafeRowWriter(if (includeKey) 2 else 1)

  def convert(record: ConsumerRecord[Array[Byte], Array[Byte]]): InternalRow = {
    writer.reset()
    writer.zeroOutNullBytes()
    if (includeKey) {
      if (record.key == null) writer.setNullAt(0) else writer.write(0, record.key)
      if (record.value == null) writer.setNullAt(1) else writer.write(1, record.value)
    } else {
      if (record.value == null) writer.setNullAt(0) else writer.write(0, record.value)
    }
    writer.getRow
  }
}

object CompactKafkaRowConverter {
  def schema(includeKey: Boolean): StructType = {
    val full = KafkaRowConverter.schema(includeHeaders = false)
    StructType((if (includeKey) Seq(full("key")) else Nil) :+ full("value"))
  }
}

/**
 * Rows of the Kafka columns a query uses (`columns`, a subset of Spark's in its order), each
 * written as `KafkaRowConverter` writes it, straight into a reused UnsafeRow (headers through a
 * projection, as there). A column no query uses is never built; `count()` gets rows of none.
 */
final class PrunedKafkaRowConverter(columns: Seq[String]) {
  private val all = KafkaRowConverter.schema(includeHeaders = true).fieldNames
  private val codes: Array[Int] = columns.map { c =>
    val i = all.indexOf(c)
    require(i >= 0, s"not a Kafka column: $c")
    i
  }.toArray
  private val hasHeaders = codes.contains(7)
  private val writer = new UnsafeRowWriter(codes.length)
  private lazy val generic = new GenericInternalRow(codes.length)
  private lazy val withHeaders = UnsafeProjection.create(
    StructType(columns.map(KafkaRowConverter.schema(includeHeaders = true)(_))))
  private var topic: String = _
  private var topicUtf8: UTF8String = _

  def convert(record: ConsumerRecord[Array[Byte], Array[Byte]]): InternalRow = {
    if (record.topic ne topic) {
      topic = record.topic
      topicUtf8 = UTF8String.fromString(topic)
    }
    if (hasHeaders) {
      var i = 0
      while (i < codes.length) {
        generic.update(i, value(codes(i), record))
        i += 1
      }
      withHeaders(generic)
    } else {
      writer.reset()
      writer.zeroOutNullBytes()
      var i = 0
      while (i < codes.length) {
        codes(i) match {
          case 0 => if (record.key == null) writer.setNullAt(i) else writer.write(i, record.key)
          case 1 =>
            if (record.value == null) writer.setNullAt(i) else writer.write(i, record.value)
          case 2 => writer.write(i, topicUtf8)
          case 3 => writer.write(i, record.partition)
          case 4 => writer.write(i, record.offset)
          case 5 => writer.write(i, record.timestamp * 1000L)
          case _ => writer.write(i, record.timestampType.id)
        }
        i += 1
      }
      writer.getRow
    }
  }

  /** Column `code`'s value as Spark's Kafka source gives it (for the generic row). */
  private def value(code: Int, record: ConsumerRecord[Array[Byte], Array[Byte]]): Any =
    code match {
      case 0 => record.key
      case 1 => record.value
      case 2 => topicUtf8
      case 3 => record.partition
      case 4 => record.offset
      case 5 => record.timestamp * 1000L
      case 6 => record.timestampType.id
      case _ => KafkaRowConverter.headers(record)
    }
}

package sluice.connector.kafka

import java.nio.charset.StandardCharsets.UTF_8
import java.util.Optional

import org.apache.kafka.clients.consumer.ConsumerRecord
import org.apache.kafka.common.header.internals.RecordHeaders
import org.apache.kafka.common.record.TimestampType
import org.apache.spark.sql.types.{IntegerType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import sluice.api.{ReaderContext, ReaderCounters, RecordsWithSplitIds}
import sluice.connector.format.PayloadFormat

/** The emitter alone: records built by hand, no broker, no Spark session. */
class KafkaRecordEmitterSuite extends AnyFunSuite {

  private def record(offset: Long, value: String, key: String = null, timestamp: Long = 1000L) = {
    val k = Option(key).map(_.getBytes(UTF_8)).orNull
    val v = Option(value).map(_.getBytes(UTF_8)).orNull
    new ConsumerRecord[Array[Byte], Array[Byte]](
      "t",
      3,
      offset,
      timestamp,
      TimestampType.CREATE_TIME,
      if (k == null) -1 else k.length,
      if (v == null) -1 else v.length,
      k,
      v,
      new RecordHeaders(),
      Optional.empty[Integer]())
  }

  test("full rows: Spark's Kafka columns, the record time, the position after it, its size") {
    val context = ReaderContext()
    val emitter = KafkaRecordEmitter(KafkaRecordDecoder.Raw(includeHeaders = false), context)
    assert(emitter.emit(record(41L, "hello", key = "k", timestamp = 5000L), "t-3"))
    val row = emitter.row
    assert(new String(row.getBinary(0), UTF_8) == "k")
    assert(new String(row.getBinary(1), UTF_8) == "hello")
    assert(row.getUTF8String(2).toString == "t" && row.getInt(3) == 3 && row.getLong(4) == 41L)
    assert(row.getLong(5) == 5000L * 1000L, "Spark timestamps are microseconds")
    assert(emitter.eventTime == 5000L && emitter.arrivalTime == 5000L)
    assert(emitter.position == 42L)
    assert(!emitter.nextRow() && !emitter.hasMoreRows, "one row per record")
    assert(context.bytesRead == 1 + 5)
    assert(emitter.emit(record(42L, null), "t-3"))
    assert(emitter.row.isNullAt(0) && emitter.row.isNullAt(1), "a tombstone: a row of nulls")
    assert(context.bytesRead == 6, "a null key or value weighs nothing")
  }

  test("compact rows: the value only, and no record time") {
    val context = ReaderContext()
    val emitter = KafkaRecordEmitter(KafkaRecordDecoder.RawCompact(includeKey = false), context)
    assert(emitter.emit(record(7L, "v", timestamp = 9000L), "t-3"))
    assert(emitter.row.numFields == 1 && new String(emitter.row.getBinary(0), UTF_8) == "v")
    assert(emitter.eventTime == RecordsWithSplitIds.NoTimestamp)
    assert(emitter.arrivalTime == 9000L, "latency markers still read when a record arrived")
    assert(emitter.position == 8L)
  }

  test("pruned raw rows: only the columns used, in Spark's order, and still the record time") {
    val context = ReaderContext()
    val valueOnly = KafkaRecordEmitter(KafkaRecordDecoder.RawColumns(Seq("value")), context)
    assert(valueOnly.emit(record(7L, "v", timestamp = 9000L), "t-3"))
    assert(valueOnly.row.numFields == 1 && new String(valueOnly.row.getBinary(0), UTF_8) == "v")
    assert(valueOnly.eventTime == 9000L, "the layout still reads record times")

    val some = KafkaRecordEmitter(
      KafkaRecordDecoder.RawColumns(Seq("topic", "offset", "timestamp")),
      ReaderContext())
    assert(some.emit(record(41L, "hello", key = "k", timestamp = 5000L), "t-3"))
    assert(some.row.numFields == 3)
    assert(some.row.getUTF8String(0).toString == "t" && some.row.getLong(1) == 41L)
    assert(some.row.getLong(2) == 5000L * 1000L && some.eventTime == 5000L)
    assert(some.position == 42L)

    val headers = new RecordHeaders()
    headers.add("h", "x".getBytes(UTF_8))
    val withHeaders = new ConsumerRecord[Array[Byte], Array[Byte]](
      "t",
      3,
      8L,
      1000L,
      TimestampType.CREATE_TIME,
      -1,
      1,
      null,
      "v".getBytes(UTF_8),
      headers,
      Optional.empty[Integer]())
    val keyAndHeaders =
      KafkaRecordEmitter(KafkaRecordDecoder.RawColumns(Seq("key", "headers")), ReaderContext())
    assert(keyAndHeaders.emit(withHeaders, "t-3"))
    val h = keyAndHeaders.row.getArray(1).getStruct(0, 2)
    assert(keyAndHeaders.row.isNullAt(0))
    assert(h.getUTF8String(0).toString == "h" && new String(h.getBinary(1), UTF_8) == "x")

    val none = KafkaRecordEmitter(KafkaRecordDecoder.RawColumns(Nil), ReaderContext())
    assert(none.emit(record(0L, "v"), "t-3") && none.row.numFields == 0, "count(): no column")
  }

  test(
    "parsed payload: several rows per record, malformed records and null values counted per split") {
    val context = ReaderContext()
    val format = PayloadFormat(
      PayloadFormat.Json,
      StructType(Seq(StructField("a", IntegerType))),
      Map("mode" -> "DROPMALFORMED"),
      "test")
    val emitter =
      KafkaRecordEmitter(
        KafkaRecordDecoder.Parsed(format, withProvenance = false, readsTimestamps = false),
        context)
    assert(emitter.emit(record(0L, """[{"a":1},{"a":2}]"""), "t-3"))
    assert(emitter.row.getInt(0) == 1 && emitter.hasMoreRows)
    assert(emitter.nextRow() && emitter.row.getInt(0) == 2)
    assert(!emitter.hasMoreRows && !emitter.nextRow())
    assert(emitter.position == 1L)
    assert(emitter.eventTime == RecordsWithSplitIds.NoTimestamp, "no provenance: no record time")

    assert(!emitter.emit(record(1L, "{not json"), "t-3"), "dropped as malformed: no row")
    assert(!emitter.emit(record(2L, null), "t-4"), "a null value gives no row")
    assert(context.countersOf("t-3") == Map(ReaderCounters.MalformedRecordsDropped -> 1L))
    assert(context.countersOf("t-4") == Map(ReaderCounters.NullValuesSkipped -> 1L))
    assert(emitter.emit(record(3L, """{"a":3}"""), "t-3") && emitter.row.getInt(0) == 3)
  }
}

package sluice.connector.format

import java.nio.charset.StandardCharsets.UTF_8

import com.fasterxml.jackson.core.{JsonFactory, JsonParser}
import org.apache.spark.SparkException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.csv.{CSVHeaderChecker, CSVOptions, UnivocityParser}
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.json.{JacksonParser, JSONOptionsInRead}
import org.apache.spark.sql.catalyst.util.{BadRecordException, DropMalformedMode, FailFastMode, FailureSafeParser}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * Turns one payload (the bytes of one line, one Kafka value) into 0..n rows of the format's
 * `outputSchema` through Spark's own parsers. One per reader thread; not thread-safe. Rows are
 * valid until the next call.
 */
trait PayloadParser {

  /**
   * The rows of one payload. `splitId` and `position` only name the payload in the error thrown
   * under FAILFAST.
   */
  def parse(
      bytes: Array[Byte],
      offset: Int,
      length: Int,
      splitId: String,
      position: Long): Iterator[InternalRow]

  /** Records dropped as malformed so far (DROPMALFORMED). */
  def malformedDropped: Long

  /** True for a line Spark's reader skips before parsing (csv: blank lines and comments). */
  def skipsLine(bytes: Array[Byte], offset: Int, length: Int): Boolean = false

  /** Checks a file's header line against the schema (csv with `header`, `enforceSchema` false). */
  def checkHeader(bytes: Array[Byte], offset: Int, length: Int, source: String): Unit = ()
}

/** A payload that broke FAILFAST, with where it came from. */
final class MalformedPayloadException(message: String, cause: Throwable)
    extends SparkException(message, cause)

/** The bytes of the payload being parsed; one reused holder instead of a copy per record. */
private[format] final class Payload {
  var bytes: Array[Byte] = _
  var offset: Int = 0
  var length: Int = 0
  def set(b: Array[Byte], off: Int, len: Int): Payload = {
    bytes = b; offset = off; length = len; this
  }

  /** A copy, since the corrupt-record column outlives the reader's buffer. */
  def toUTF8String: UTF8String =
    UTF8String.fromBytes(java.util.Arrays.copyOfRange(bytes, offset, offset + length))
}

/**
 * Wraps Spark's `FailureSafeParser` as Spark's file sources use it, counting DROPMALFORMED drops
 * (which look like empty results otherwise, as blank lines do) and naming FAILFAST's payload.
 */
private[format] abstract class SafeParser[IN](
    mode: org.apache.spark.sql.catalyst.util.ParseMode,
    schema: StructType,
    corruptColumn: String)
    extends PayloadParser {
  private var dropped = 0L
  protected def raw(input: IN): Iterable[InternalRow]
  private val safe = new FailureSafeParser[IN](
    input =>
      try raw(input)
      catch {
        case e: BadRecordException if mode == DropMalformedMode => dropped += 1; throw e
      },
    mode,
    schema,
    corruptColumn)

  protected def safeParse(input: IN, splitId: String, position: Long): Iterator[InternalRow] =
    try safe.parse(input)
    catch {
      case e: SparkException if mode == FailFastMode =>
        throw new MalformedPayloadException(
          s"Malformed record in split '$splitId' at position " +
            s"$position (mode FAILFAST; use mode PERMISSIVE or DROPMALFORMED to keep reading): " +
            e.getMessage,
          e)
    }

  override def malformedDropped: Long = dropped
}

private[format] final class JsonPayloadParser(schema: StructType, options: JSONOptionsInRead)
    extends SafeParser[Payload](options.parseMode, schema, options.columnNameOfCorruptRecord) {

  private val jackson = new JacksonParser(
    StructType(schema.filterNot(_.name == options.columnNameOfCorruptRecord)),
    options,
    true,
    Nil
  ) // allowArrayAsStructs, as JsonFileFormat: `[{..},{..}]` on one line is two records
  private val payload = new Payload
  private val open: (JsonFactory, Payload) => JsonParser =
    (factory, p) => factory.createParser(p.bytes, p.offset, p.length)
  private val literal: Payload => UTF8String = _.toUTF8String

  override protected def raw(input: Payload): Iterable[InternalRow] =
    jackson.parse(input, open, literal)

  override def parse(
      bytes: Array[Byte],
      offset: Int,
      length: Int,
      splitId: String,
      position: Long): Iterator[InternalRow] =
    safeParse(payload.set(bytes, offset, length), splitId, position)
}

/**
 * `schema`: the columns of the rows (a query's required schema); `allColumns`: the schema's, which
 * are the line's fields in order and the names a header is checked against.
 */
private[format] final class CsvPayloadParser(
    schema: StructType,
    allColumns: StructType,
    options: CSVOptions)
    extends SafeParser[String](options.parseMode, schema, options.columnNameOfCorruptRecord) {

  private val dataSchema = StructType(
    allColumns.filterNot(_.name == options.columnNameOfCorruptRecord))
  private val univocity = new UnivocityParser(
    dataSchema,
    StructType(schema.filterNot(_.name == options.columnNameOfCorruptRecord)),
    options,
    Nil)
  private val parseLine = univocity.parse
  // Spark compares the line's first character; an ASCII comment can be compared as a byte.
  private val asciiComment = options.isCommentSet && options.comment < 128
  private val comment: Byte = if (asciiComment) options.comment.toByte else 0

  override protected def raw(input: String): Iterable[InternalRow] = parseLine(input)

  override def parse(
      bytes: Array[Byte],
      offset: Int,
      length: Int,
      splitId: String,
      position: Long): Iterator[InternalRow] =
    if (skipsLine(bytes, offset, length)) Iterator.empty
    else safeParse(new String(bytes, offset, length, UTF_8), splitId, position)

  // Spark's CSV reader drops lines whose trim is empty and, with `comment`, lines starting with it.
  override def skipsLine(bytes: Array[Byte], offset: Int, length: Int): Boolean = {
    if (asciiComment && length > 0 && bytes(offset) == comment) return true
    if (options.isCommentSet && !asciiComment &&
      new String(bytes, offset, length, UTF_8).startsWith(options.comment.toString)) return true
    var i = offset
    val end = offset + length
    while (i < end) {
      if ((bytes(i) & 0xff) > ' ') return false
      i += 1
    }
    true
  }

  override def checkHeader(bytes: Array[Byte], offset: Int, length: Int, source: String): Unit =
    new CSVHeaderChecker(dataSchema, options, source, true)
      .checkHeaderColumnNames(new String(bytes, offset, length, UTF_8))
}

/** `spark.read.text`: each line is one row with the line as `value`, empty lines included. */
private[format] final class TextPayloadParser extends PayloadParser {
  private val values = new Array[Any](1)
  private val row = new GenericInternalRow(values)
  private val one = new SingleRow(row)

  override def parse(
      bytes: Array[Byte],
      offset: Int,
      length: Int,
      splitId: String,
      position: Long): Iterator[InternalRow] = {
    values(0) = UTF8String.fromBytes(java.util.Arrays.copyOfRange(bytes, offset, offset + length))
    one.reset()
  }

  override def malformedDropped: Long = 0L
}

/** A reusable iterator over one row. */
private[format] final class SingleRow(row: InternalRow) extends Iterator[InternalRow] {
  private var pending = false
  def reset(): this.type = { pending = true; this }
  override def hasNext: Boolean = pending
  override def next(): InternalRow = { pending = false; row }
}

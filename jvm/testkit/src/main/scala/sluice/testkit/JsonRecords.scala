package sluice.testkit

import java.io.{BufferedReader, Writer}
import java.nio.ByteBuffer
import java.nio.charset.{CharacterCodingException, CodingErrorAction, StandardCharsets}
import java.util.Base64

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.core.{JsonFactory, JsonGenerator}
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.JsonNodeType
import org.apache.kafka.common.header.Header
import org.apache.kafka.common.header.internals.RecordHeader

/**
 * The JSON Lines record format of the `produce` and `consume` commands, one object per line:
 * {{{
 * {"key": str|null, "value": str|null, "partition": int|null, "timestamp": long|null,
 *  "headers": [[name, value], ...]|null}
 * }}}
 * Keys and values are UTF-8 text; bytes that are not UTF-8 travel as base64 in `key_b64` /
 * `value_b64` (then `key` / `value` is null or absent). A header value is a string, null, or
 * `{"b64": "..."}`. `consume` adds `offset` (and always writes `partition` and `timestamp`).
 */
object JsonRecords {
  private val mapper = new ObjectMapper()
  private val factory = new JsonFactory()

  /** One parsed input line. */
  final case class Input(
      key: Array[Byte],
      value: Array[Byte],
      partition: Option[Int],
      timestamp: Option[Long],
      headers: Seq[Header])

  /**
   * Calls `f` with the record of each non-blank line of `reader`; returns how many there were.
   */
  def foreachInput(reader: BufferedReader)(f: Input => Unit): Int = {
    var lineNo = 0
    var count = 0
    var line = reader.readLine()
    while (line != null) {
      lineNo += 1
      if (!line.isBlank) {
        try f(parse(line))
        catch {
          case e: IllegalArgumentException =>
            throw new IllegalArgumentException(s"line $lineNo: ${e.getMessage}", e)
          case e: com.fasterxml.jackson.core.JsonProcessingException =>
            throw new IllegalArgumentException(
              s"line $lineNo: invalid JSON: ${e.getOriginalMessage}",
              e)
        }
        count += 1
      }
      line = reader.readLine()
    }
    count
  }

  def parse(line: String): Input = {
    val node = mapper.readTree(line)
    if (node == null || !node.isObject)
      throw new IllegalArgumentException("expected a JSON object")
    val known =
      Set("key", "value", "key_b64", "value_b64", "partition", "timestamp", "headers", "offset")
    node.fieldNames().asScala.find(n => !known.contains(n)).foreach { n =>
      throw new IllegalArgumentException(
        s"unknown field '$n' (known: ${known.toSeq.sorted.mkString(", ")})")
    }
    Input(
      key = bytes(node, "key"),
      value = bytes(node, "value"),
      partition = optLong(node, "partition").map(_.toInt),
      timestamp = optLong(node, "timestamp"),
      headers = headers(node.get("headers")))
  }

  private def bytes(node: JsonNode, field: String): Array[Byte] = {
    val b64 = node.get(field + "_b64")
    if (b64 != null && !b64.isNull) Base64.getDecoder.decode(text(b64, field + "_b64"))
    else {
      val v = node.get(field)
      if (v == null || v.isNull) null else text(v, field).getBytes(StandardCharsets.UTF_8)
    }
  }

  private def text(node: JsonNode, field: String): String =
    if (node.isTextual) node.textValue()
    else
      throw new IllegalArgumentException(
        s"'$field' must be a string or null, not ${node.getNodeType}")

  private def optLong(node: JsonNode, field: String): Option[Long] = {
    val v = node.get(field)
    if (v == null || v.isNull) None
    else if (v.isIntegralNumber && v.canConvertToLong) Some(v.longValue())
    else throw new IllegalArgumentException(s"'$field' must be an integer or null")
  }

  private def headers(node: JsonNode): Seq[Header] =
    if (node == null || node.isNull) Nil
    else if (!node.isArray)
      throw new IllegalArgumentException("'headers' must be a list of [name, value] pairs")
    else
      node
        .elements()
        .asScala
        .map { pair =>
          if (!pair.isArray || pair.size() != 2 || !pair.get(0).isTextual)
            throw new IllegalArgumentException(
              "each header must be a [name, value] pair with a string name")
          val v = pair.get(1)
          val value: Array[Byte] = v.getNodeType match {
            case JsonNodeType.NULL => null
            case JsonNodeType.STRING => v.textValue().getBytes(StandardCharsets.UTF_8)
            case JsonNodeType.OBJECT if v.size() == 1 && v.has("b64") && v.get("b64").isTextual =>
              Base64.getDecoder.decode(v.get("b64").textValue())
            case _ =>
              throw new IllegalArgumentException(
                "a header value must be a string, null or {\"b64\": \"...\"}")
          }
          new RecordHeader(pair.get(0).textValue(), value): Header
        }
        .toList

  /** Writes records as JSON Lines. */
  final class Output(writer: Writer) extends AutoCloseable {
    private val gen: JsonGenerator = factory.createGenerator(writer)
    // Records are separated by the newline written after each, not by Jackson's default space.
    gen.setRootValueSeparator(null)

    def write(
        key: Array[Byte],
        value: Array[Byte],
        partition: Int,
        offset: Long,
        timestamp: Long,
        headers: Iterable[Header]): Unit = {
      gen.writeStartObject()
      writeBytes("key", key)
      writeBytes("value", value)
      gen.writeNumberField("partition", partition)
      gen.writeNumberField("offset", offset)
      gen.writeNumberField("timestamp", timestamp)
      gen.writeArrayFieldStart("headers")
      headers.foreach { h =>
        gen.writeStartArray()
        gen.writeString(h.key())
        val v = h.value()
        if (v == null) gen.writeNull()
        else
          utf8(v) match {
            case Some(s) => gen.writeString(s)
            case None =>
              gen.writeStartObject()
              gen.writeStringField("b64", Base64.getEncoder.encodeToString(v))
              gen.writeEndObject()
          }
        gen.writeEndArray()
      }
      gen.writeEndArray()
      gen.writeEndObject()
      gen.writeRaw('\n')
    }

    private def writeBytes(field: String, b: Array[Byte]): Unit =
      if (b == null) gen.writeNullField(field)
      else
        utf8(b) match {
          case Some(s) => gen.writeStringField(field, s)
          case None =>
            gen.writeNullField(field)
            gen.writeStringField(field + "_b64", Base64.getEncoder.encodeToString(b))
        }

    override def close(): Unit = gen.close()
  }

  /** The bytes as text if they are valid UTF-8. */
  private def utf8(b: Array[Byte]): Option[String] =
    try
      Some(
        StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b))
          .toString)
    catch { case _: CharacterCodingException => None }
}

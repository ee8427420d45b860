package sluice.connector.format

import scala.util.Try

import org.apache.spark.sql.catalyst.csv.CSVOptions
import org.apache.spark.sql.catalyst.expressions.ExprUtils
import org.apache.spark.sql.catalyst.util.{DateFormatter, DateTimeUtils, TimestampFormatter}
import org.apache.spark.sql.catalyst.json.JSONOptionsInRead
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

import sluice.config.{ConfigOption, Options}
import sluice.errors.SluiceError

/**
 * How payloads (a line of a file, a Kafka value) become rows: a format, the data schema and
 * Spark's reader options, resolved on the driver (session time zone, default corrupt-record
 * column) so that executors parse exactly as `spark.read.<format>(schema)` would. Shared by every
 * connector: the same format and schema give the same schema and the same rows whatever the
 * payloads came from.
 */
final class PayloadFormat private (
    val format: String,
    /**
     * The data columns of the rows, as `spark.read` returns them (nullable; the corrupt-record
     * column included): the schema's, or those a query uses (`pruned`).
     */
    val outputSchema: StructType,
    /** Spark's reader options as given (validated). */
    val readerOptions: Map[String, String],
    jsonOptions: JSONOptionsInRead,
    csvOptions: CSVOptions,
    /** Every data column of the schema: what a CSV line's fields are and its header names. */
    dataSchema: StructType)
    extends Serializable {

  /**
   * This format parsing only the columns `columns` names (as Spark's JSON and CSV readers parse
   * only a query's required schema: JSON skips other fields, CSV converts only those fields).
   * Itself when that is every column, for text (one column), and when the corrupt-record column
   * is among them: whether a record is malformed depends on every column, so Spark refuses to
   * prune a query that reads it, and this reads them all.
   */
  def pruned(columns: Set[String]): PayloadFormat = {
    val corrupt = Option(jsonOptions)
      .map(_.columnNameOfCorruptRecord)
      .orElse(Option(csvOptions).map(_.columnNameOfCorruptRecord))
    val kept = StructType(outputSchema.filter(f => columns.contains(f.name)))
    if (format == PayloadFormat.Text || kept.length == outputSchema.length ||
      corrupt.exists(c => kept.fieldNames.contains(c))) this
    else new PayloadFormat(format, kept, readerOptions, jsonOptions, csvOptions, dataSchema)
  }

  /** The parse mode (PERMISSIVE, DROPMALFORMED, FAILFAST); text has none and is PERMISSIVE. */
  def mode: String = format match {
    case PayloadFormat.Json => jsonOptions.parseMode.name
    case PayloadFormat.Csv => csvOptions.parseMode.name
    case _ => "PERMISSIVE"
  }

  /** True for csv with `header`: the first non-empty line of each file names columns. */
  def hasHeader: Boolean = csvOptions != null && csvOptions.headerFlag

  /** A parser for one executor thread: build one per reader, never per record. */
  def newParser(): PayloadParser = format match {
    case PayloadFormat.Json => new JsonPayloadParser(outputSchema, jsonOptions)
    case PayloadFormat.Csv => new CsvPayloadParser(outputSchema, dataSchema, csvOptions)
    case _ => new TextPayloadParser
  }

  override def toString: String = s"PayloadFormat($format, ${outputSchema.simpleString})"
}

object PayloadFormat {
  val Json = "json"
  val Csv = "csv"
  val Text = "text"
  val Formats: Seq[String] = Seq(Json, Csv, Text)

  /** The schema of the text format, as `spark.read.text` returns it. */
  val TextSchema: StructType = StructType(Seq(StructField("value", StringType)))

  val FormatOption: ConfigOption[String] = ConfigOption
    .string(
      "format",
      "payload format: JSON lines, CSV lines, or text lines (one `value` STRING column)")
    .withDefault(Json)
    .oneOf("json, csv or text", Formats, ignoreCase = true)
  val SchemaOption: ConfigOption[StructType] = ConfigOption[StructType](
    "schema",
    "the data columns, for json and csv (text has the fixed column `value` STRING)",
    None,
    "a DDL string such as 'a INT, b STRING', or a StructType as JSON",
    parseSchema)

  /** The options of a payload format: `format`, `schema`, and Spark's reader options. */
  val all: Seq[ConfigOption[_]] = Seq(FormatOption, SchemaOption) ++ ReaderOptions.all

  private def parseSchema(text: String): Option[StructType] = Try {
    if (text.trim.startsWith("{")) DataType.fromJson(text).asInstanceOf[StructType]
    else StructType.fromDDL(text)
  }.toOption.filter(_.nonEmpty)

  /**
   * Reads `format`, `schema` and the reader options from options already checked against a
   * declaration list that includes `all`; `context` names the source in errors.
   */
  def fromOptions(o: Options, raw: Map[String, String], context: String): PayloadFormat = {
    val format = o.get(FormatOption).get.toLowerCase
    val schema = o.get(SchemaOption)
    val reader = raw.filter { case (k, _) => ReaderOptions.formats(k).isDefined }
    reader.keys.toSeq.sorted.foreach { k =>
      val applies = ReaderOptions.formats(k).get
      if (!applies.contains(format)) {
        throw SluiceError.config(
          s"$context: option '$k' does not apply to format " +
            s"'$format'; it applies to ${applies.toSeq.sorted.mkString(", ")}.")
      }
    }
    // parse every reader option once so that a bad value fails here, named
    ReaderOptions.all.foreach(o.get(_))
    apply(format, schema.orNull, reader, context)
  }

  /**
   * Builds a format on the driver. `schema` is required for json and csv and must be null (or
   * `value STRING`) for text. Session settings are taken from the active session's SQLConf.
   */
  def apply(
      format: String,
      schema: StructType,
      readerOptions: Map[String, String],
      context: String): PayloadFormat = {
    val conf = SQLConf.get
    val tz = conf.sessionLocalTimeZone
    val defaultCorrupt = conf.columnNameOfCorruptRecord
    format match {
      case Text =>
        if (schema != null && asNullable(schema) != TextSchema) {
          throw SluiceError.config(
            s"$context: format 'text' has the fixed schema " +
              "'value STRING'; remove option 'schema'.")
        }
        new PayloadFormat(Text, TextSchema, readerOptions, null, null, TextSchema)
      case Json | Csv =>
        if (schema == null) {
          throw SluiceError.config(
            s"$context: missing required option 'schema' for " +
              s"format '$format'; allowed: ${SchemaOption.allowed}.")
        }
        val data = asNullable(schema)
        readerOptions.collectFirst { case (k, v) if k.equalsIgnoreCase(TimeZone) => v }.foreach {
          zone =>
            if (Try(DateTimeUtils.getZoneId(zone)).isFailure) {
              throw ConfigOption.invalid(
                context,
                TimeZone,
                zone,
                "a region-based zone ID such as " +
                  "'America/Los_Angeles', or an offset such as '+01:00' or 'UTC'")
            }
        }
        val (json, csv) =
          if (format == Json) (new JSONOptionsInRead(readerOptions, tz, defaultCorrupt), null)
          else (null, new CSVOptions(readerOptions, conf.csvColumnPruning, tz, defaultCorrupt))
        if (json != null) {
          checkPatterns(
            data,
            json.dateFormatInRead,
            json.timestampFormatInRead,
            json.timestampNTZFormatInRead,
            json.zoneId,
            json.locale,
            context)
        } else {
          checkPatterns(
            data,
            csv.dateFormatInRead,
            csv.timestampFormatInRead,
            csv.timestampNTZFormatInRead,
            csv.zoneId,
            csv.locale,
            context)
        }
        val corrupt =
          if (json != null) json.columnNameOfCorruptRecord else csv.columnNameOfCorruptRecord
        Try(ExprUtils.verifyColumnNameOfCorruptRecord(data, corrupt)).failed.foreach { e =>
          throw SluiceError.config(
            s"$context: the corrupt-record column '$corrupt' " +
              s"must be a nullable STRING column of the schema (${e.getMessage}).")
        }
        if (format == Csv) {
          data.fields
            .find(f =>
              f.dataType match {
                case _: StructType | _: ArrayType | _: MapType | _: VariantType => true
                case _ => false
              })
            .foreach { f =>
              throw SluiceError.config(
                s"$context: format 'csv' cannot read column " +
                  s"'${f.name}' of type ${f.dataType.sql}; csv columns must be of atomic types.")
            }
        }
        new PayloadFormat(format, data, readerOptions, json, csv, data)
      case other =>
        throw ConfigOption.invalid(context, FormatOption.name, other, FormatOption.allowed)
    }
  }

  private val TimeZone = "timeZone"

  /**
   * Builds the date and timestamp formatters Spark's parsers build lazily on executors (with the
   * same arguments), so that a pattern Spark cannot use fails the query's definition, named,
   * instead of its first task. Only for a type the schema holds: Spark never builds the others,
   * so a pattern no column uses is no error there, nor here.
   */
  private def checkPatterns(
      schema: StructType,
      date: Option[String],
      timestamp: Option[String],
      timestampNTZ: Option[String],
      zone: java.time.ZoneId,
      locale: java.util.Locale,
      context: String): Unit = {
    import org.apache.spark.sql.catalyst.util.LegacyDateFormats.FAST_DATE_FORMAT
    def holds(t: DataType): Boolean = contains(schema, t)
    def check(option: String, pattern: Option[String])(build: => Any): Unit =
      pattern.filter(_ => holds(typeOf(option))).foreach { p =>
        Try(build).failed.foreach { e =>
          throw ConfigOption.invalid(
            context,
            option,
            p,
            "a datetime pattern as Spark's readers take " +
              s"(Spark's 'Datetime Patterns' reference); Spark says: ${e.getMessage}")
        }
      }
    check("dateFormat", date)(DateFormatter(date, locale, FAST_DATE_FORMAT, isParsing = true))
    check("timestampFormat", timestamp)(
      TimestampFormatter(timestamp, zone, locale, FAST_DATE_FORMAT, isParsing = true))
    check("timestampNTZFormat", timestampNTZ)(
      TimestampFormatter(
        timestampNTZ,
        zone,
        FAST_DATE_FORMAT,
        isParsing = true,
        forTimestampNTZ = true))
  }

  private def contains(in: DataType, t: DataType): Boolean = in == t || (in match {
    case s: StructType => s.fields.exists(f => contains(f.dataType, t))
    case ArrayType(e, _) => contains(e, t)
    case MapType(k, v, _) => contains(k, t) || contains(v, t)
    case _ => false
  })

  private def typeOf(patternOption: String): DataType = patternOption match {
    case "dateFormat" => DateType
    case "timestampFormat" => TimestampType
    case _ => TimestampNTZType
  }

  /** As Spark's file sources do with a user schema: every field, at every depth, nullable. */
  def asNullable(t: StructType): StructType =
    StructType(t.fields.map(f => f.copy(dataType = nullable(f.dataType), nullable = true)))

  private def nullable(t: DataType): DataType = t match {
    case s: StructType => asNullable(s)
    case ArrayType(e, _) => ArrayType(nullable(e), containsNull = true)
    case MapType(k, v, _) => MapType(nullable(k), nullable(v), valueContainsNull = true)
    case other => other
  }
}

package sluice.connector.format

import sluice.config.{AllowedValues, ConfigOption}

/**
 * The Spark reader options a payload format accepts, by Spark's own names, so that
 * `.option("mode", "DROPMALFORMED")` means what it means to `spark.read.json`. An explicit
 * allow-list rather than a pass-through: a misspelt option must fail, not be ignored, and options
 * that would change how payloads are delimited (multi-line records, line separators, charsets
 * other than UTF-8) are not supported yet and say so.
 */
object ReaderOptions {
  import PayloadFormat.{Csv, Json}

  private def str(name: String, doc: String) = ConfigOption.string(name, doc)
  private def bool(name: String, doc: String) = ConfigOption.boolean(name, doc)
  private def int(name: String, doc: String) =
    ConfigOption.int(name, doc).atLeast(1)
  private def char(name: String, doc: String) = str(name, doc)
    .withCheck("a single character (or an escape such as \\t)")(s => s.nonEmpty && s.length <= 2)

  // before the options that list it: an object's vals are set in order
  private val Modes = Seq("PERMISSIVE", "DROPMALFORMED", "FAILFAST")

  val Mode: ConfigOption[String] = str(
    "mode",
    "what a malformed record becomes (json, csv): a row with nulls and the corrupt-record column " +
      "(PERMISSIVE), nothing, counted as `malformedRecordsDropped` (DROPMALFORMED), or an error (FAILFAST)")
    .withDefault("PERMISSIVE")
    .oneOf("PERMISSIVE, DROPMALFORMED or FAILFAST", Modes, ignoreCase = true)
  val CorruptColumn: ConfigOption[String] = str(
    "columnNameOfCorruptRecord",
    "the STRING column of the schema that receives malformed records under PERMISSIVE (json, csv); " +
      "default: spark.sql.columnNameOfCorruptRecord")
  val MultiLine: ConfigOption[Boolean] =
    bool("multiLine", "records spanning lines (json, csv); not supported yet").withCheck(
      "false (records spanning several lines are not supported yet)")(!_)
  val LineSep: ConfigOption[String] = str(
    "lineSep",
    "custom line separator; not supported yet: lines end at \\n, \\r\\n or \\r")
    .withCheck(
      "no value: custom line separators are not supported yet (lines end at \\n, \\r\\n or \\r)")(
      _ => false)
  private val utf8 = Set("utf-8", "utf8")
  val Encoding: ConfigOption[String] =
    str("encoding", "payload charset (json, csv); only UTF-8 is supported")
      .withCheck("UTF-8 (other charsets are not supported yet)")(e =>
        utf8.contains(e.toLowerCase))
  val Charset: ConfigOption[String] =
    str("charset", "alias of encoding (csv); only UTF-8 is supported")
      .withCheck("UTF-8 (other charsets are not supported yet)")(e =>
        utf8.contains(e.toLowerCase))

  private val both: Seq[ConfigOption[_]] = Seq(
    Mode,
    CorruptColumn,
    MultiLine,
    Encoding,
    str("dateFormat", "date pattern, as Spark's reader option (json, csv)"),
    str("timestampFormat", "timestamp pattern, as Spark's reader option (json, csv)"),
    str("timestampNTZFormat", "TIMESTAMP_NTZ pattern, as Spark's reader option (json, csv)"),
    str(
      "timeZone",
      "time zone for parsing timestamps (json, csv); default: the session time zone"),
    str("locale", "locale for parsing dates and timestamps (json, csv)"),
    bool("enableDateTimeParsingFallback", "as Spark's reader option (json, csv)"))

  private val jsonOnly: Seq[ConfigOption[_]] = Seq(
    "primitivesAsString",
    "prefersDecimal",
    "allowComments",
    "allowUnquotedFieldNames",
    "allowSingleQuotes",
    "allowNumericLeadingZeros",
    "allowNonNumericNumbers",
    "allowBackslashEscapingAnyCharacter",
    "allowUnquotedControlChars",
    "dropFieldIfAllNull")
    .map(n => bool(n, "as Spark's JSON reader option (json)"))

  private val csvOnly: Seq[ConfigOption[_]] = Seq(
    char("sep", "field separator (csv)"),
    char("delimiter", "alias of sep (csv)"),
    bool(
      "header",
      "the first line of each file names the columns and is not a record (csv; files only)"),
    bool("enforceSchema", "when false, a header must match the schema's column names (csv)"),
    char("quote", "quote character (csv)"),
    char("escape", "escape character inside quotes (csv)"),
    char("charToEscapeQuoteEscaping", "as Spark's CSV reader option (csv)"),
    char("comment", "lines starting with this character are skipped (csv)"),
    bool("ignoreLeadingWhiteSpace", "as Spark's CSV reader option (csv)"),
    bool("ignoreTrailingWhiteSpace", "as Spark's CSV reader option (csv)"),
    str("nullValue", "the string that stands for null (csv)"),
    str("emptyValue", "the string that stands for an empty string (csv)"),
    str("nanValue", "as Spark's CSV reader option (csv)"),
    str("positiveInf", "as Spark's CSV reader option (csv)"),
    str("negativeInf", "as Spark's CSV reader option (csv)"),
    int("maxColumns", "as Spark's CSV reader option (csv)"),
    ConfigOption
      .int("maxCharsPerColumn", "as Spark's CSV reader option (csv); -1: unlimited")
      .withCheck("-1 or an integer >= 1")(n => n == -1 || n >= 1)
      .withValues(AllowedValues(min = Some(1), words = Seq("-1"))),
    str("unescapedQuoteHandling", "as Spark's CSV reader option (csv)")
      .withCheck(
        "STOP_AT_CLOSING_QUOTE, BACK_TO_DELIMITER, STOP_AT_DELIMITER, SKIP_VALUE or RAISE_ERROR")(
        v =>
          Set(
            "STOP_AT_CLOSING_QUOTE",
            "BACK_TO_DELIMITER",
            "STOP_AT_DELIMITER",
            "SKIP_VALUE",
            "RAISE_ERROR").contains(v.toUpperCase)),
    Charset)

  /** Every reader option, with `lineSep` declared only to explain that it is not supported. */
  val all: Seq[ConfigOption[_]] = both ++ jsonOnly ++ csvOnly :+ LineSep

  private val formatsOf: Map[String, Set[String]] =
    (both.map(_.name -> Set(Json, Csv)) ++ jsonOnly.map(_.name -> Set(Json)) ++
      csvOnly
        .map(_.name -> Set(Csv)) :+ (LineSep.name -> Set(Json, Csv, PayloadFormat.Text))).toMap
      .map { case (k, v) => k.toLowerCase -> v }

  /** The formats an option applies to, if it is a reader option. */
  def formats(name: String): Option[Set[String]] = formatsOf.get(name.toLowerCase)
}

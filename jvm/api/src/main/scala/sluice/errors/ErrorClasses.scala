package sluice.errors

/**
 * Every error class of Sluice, in one place. Configuration errors (refused when the query is
 * defined or starts) are `SluiceConfigException`s, faults met while the query runs are
 * `SluiceRuntimeException`s; both carry one of these classes. The SQLSTATEs are those Spark gives
 * its own errors of the same kind (INVALID_PARAMETER_VALUE 22023, INVALID_OPTIONS 42K06, Kafka's
 * data loss 22000, INVALID_LOG_VERSION KD002).
 */
object ErrorClasses {

  // configuration: what the user gave cannot be used

  val InvalidOption: ErrorClass = ErrorClass(
    "SLUICE_INVALID_OPTION",
    "22023",
    "<context>: invalid value '<value>' for option '<option>'; allowed: <allowed>.",
    "An option has a value its declaration does not allow (a secret value shows as `***`).")

  val UnknownOption: ErrorClass = ErrorClass(
    "SLUICE_UNKNOWN_OPTION",
    "42K06",
    "<context>: unknown <options>. Known options: <known>.",
    "An option name no source or reader declares: a typo must not pass silently.")

  val MissingOption: ErrorClass = ErrorClass(
    "SLUICE_MISSING_OPTION",
    "42K06",
    "<context>: missing required option '<option>'<about>; allowed: <allowed>.",
    "A required option is not given (`about` is what the option means, in parentheses, or empty).")

  val ConflictingOptions: ErrorClass = ErrorClass(
    "SLUICE_CONFLICTING_OPTIONS",
    "42K06",
    "<context>: options <given> exclude each other; give one of <choices>.",
    "Options that exclude each other are given together.")

  val InvalidConfiguration: ErrorClass = ErrorClass(
    "SLUICE_INVALID_CONFIGURATION",
    "42K06",
    "<message>",
    "Options, a watermark strategy or a hybrid source that cannot work together, or what they " +
      "name (files, schemas, topics) does not fit; the message names what and the fix.")

  // faults while the query runs

  val DataLoss: ErrorClass = ErrorClass(
    "SLUICE_DATA_LOSS",
    "22000",
    "<what> Set failOnDataLoss=false to <instead>.",
    "Records the query was to read are gone (Kafka retention, a truncated or re-created topic). " +
      "With `failOnDataLoss=false` the source goes on as the message says and counts the loss.")

  val RetentionExceeded: ErrorClass = ErrorClass(
    "SLUICE_RETENTION_EXCEEDED",
    "22000",
    "<message>",
    "A hybrid source's next source would start at records already aged out, so the query stops " +
      "before the switch rather than skip them after it.")

  val CheckpointTooNew: ErrorClass = ErrorClass(
    "SLUICE_CHECKPOINT_TOO_NEW",
    "KD002",
    "Cannot read <what> of serializer version <found>: this build of Sluice reads versions up to " +
      "<supported>. The checkpoint was written by a newer Sluice; run that version or start a new " +
      "checkpoint.",
    "The checkpoint holds state a newer Sluice wrote.")

  val InvalidCheckpoint: ErrorClass = ErrorClass(
    "SLUICE_INVALID_CHECKPOINT",
    "KD002",
    "<message>",
    "The query's checkpoint cannot be used: damaged or altered, written for another source type, or " +
      "an offset format newer than this build; the message says which and what to do.")

  val TableReplaced: ErrorClass = ErrorClass(
    "SLUICE_TABLE_REPLACED",
    "KD002",
    "<context>: this query's checkpoint was written reading table '<table>' of <identity> " +
      "<checkpointed>, but the table there now has <identity> <current>: it was dropped and created " +
      "again, or another table is named. The checkpoint's <units> and files are the old table's, and " +
      "reading the new one from them would skip or mix rows. Start the query on a new checkpoint to " +
      "read this table, or name the old table again to go on reading it.",
    "The table a query's checkpoint was written reading (Iceberg's table UUID, Delta's " +
      "`metaData.id`) is not the one the source names now: dropped and created again at the same " +
      "place or name, or another table. The checkpoint's positions would skip or mix its rows.")

  val SourceFault: ErrorClass = ErrorClass(
    "SLUICE_SOURCE_FAULT",
    "58030",
    "<message>",
    "What a source reads changed, broke or stopped answering (a listed file changed, a Parquet row " +
      "group ended early, a broker refused a look-up); the message names it.")

  val all: Seq[ErrorClass] = Seq(
    InvalidOption,
    UnknownOption,
    MissingOption,
    ConflictingOptions,
    InvalidConfiguration,
    DataLoss,
    RetentionExceeded,
    CheckpointTooNew,
    InvalidCheckpoint,
    TableReplaced,
    SourceFault)

  /** The declaration of `name`, as Spark's and PySpark's `getCondition` report it. */
  def named(name: String): Option[ErrorClass] = all.find(_.name == name)

  /** The Markdown table docs/errors.md carries below its marker. */
  def reference: String =
    (Seq("| error class | SQLSTATE | kind | meaning | message |", "|---|---|---|---|---|") ++
      all.map { c =>
        val message = c.template.replace("|", "\\|")
        s"| `${c.name}` | `${c.sqlState}` | ${kind(c)} | ${c.doc} | `$message` |"
      }).mkString("", "\n", "\n")

  /** The classes SluiceConfigException carries; the others are SluiceRuntimeException's. */
  val configuration: Set[ErrorClass] =
    Set(InvalidOption, UnknownOption, MissingOption, ConflictingOptions, InvalidConfiguration)

  private def kind(c: ErrorClass): String =
    if (configuration.contains(c)) "configuration" else "runtime"

  /**
   * python/sluice/_errors.json: the classes as Python's errors read them (their SQLSTATE, kind and
   * template), written by `make docs` as python/sluice/_options.json is.
   */
  def json: String = {
    val q = '"'
    val backslash = '\\'
    def quoted(s: String): String =
      s.flatMap {
        case c if c == q || c == backslash => s"$backslash$c"
        case c if c < ' ' => String.format("%su%04x", backslash.toString, Int.box(c.toInt))
        case c => c.toString
      }.mkString(q.toString, "", q.toString)
    def field(name: String, value: String) = s"${quoted(name)}: ${quoted(value)}"
    all
      .map { c =>
        s"    ${quoted(c.name)}: {" + Seq(
          field("sqlState", c.sqlState),
          field("kind", kind(c)),
          field("template", c.template)).mkString(", ") + "}"
      }
      .mkString(s"{\n  ${quoted("errorClasses")}: {\n", ",\n", "\n  }\n}\n")
  }

  /** `make docs`: writes `json` to the first path and the reference of docs/errors.md to the second. */
  def main(args: Array[String]): Unit = {
    def write(path: String, text: String): Unit =
      java.nio.file.Files.write(java.nio.file.Paths.get(path), text.getBytes("UTF-8"))
    write(args(0), json)
    write(args(1), reference)
  }
}

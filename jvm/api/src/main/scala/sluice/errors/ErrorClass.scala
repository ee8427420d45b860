package sluice.errors

/**
 * One kind of error a user can meet, declared once as Spark declares its error classes: a name
 * (`SLUICE_...`, the condition Spark and PySpark report), an SQLSTATE, and the message template
 * whose `<parameter>`s the thrower fills. The messages users read come from these templates, and
 * docs/errors.md lists them from the same declarations (a test keeps it in sync).
 */
final case class ErrorClass(name: String, sqlState: String, template: String, doc: String) {
  require(name.startsWith("SLUICE_"), s"an error class of Sluice starts with SLUICE_: $name")

  /** The template's parameters, in the order they appear. */
  def parameters: Seq[String] =
    ErrorClass.Parameter.findAllMatchIn(template).map(_.group(1)).toSeq

  /**
   * The message: every `<parameter>` of the template replaced by its value. One pass over the
   * template, so a value that itself holds `<...>` (an option pattern such as `hybrid.<i>.path`) is
   * kept as given.
   */
  def message(parameters: Map[String, String]): String = {
    val missing = this.parameters.filterNot(parameters.contains)
    require(missing.isEmpty, s"$name: no value for ${missing.mkString(", ")}")
    ErrorClass.Parameter.replaceAllIn(
      template,
      m => scala.util.matching.Regex.quoteReplacement(parameters(m.group(1))))
  }
}

object ErrorClass {
  private val Parameter = "<([a-zA-Z]+)>".r
}

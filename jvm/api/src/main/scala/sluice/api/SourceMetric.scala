package sluice.api

/**
 * One key a source reports in query progress (`sources[i].metrics`, all values strings as Spark
 * keeps them): its type, which says how to read the string, and what it means. The Spark binding
 * lists every key once (`sluice.spark.MetricDeclarations`), the Python package reads that list
 * from python/sluice/_metrics.json to read values by their type instead of parsing them its own
 * way.
 *
 * @param fields for `JsonList`: the objects' fields, name -> meaning (a field not known yet is left out)
 */
final case class SourceMetric(
    name: String,
    kind: SourceMetric.Kind,
    doc: String,
    fields: Seq[(String, String)] = Nil)

object SourceMetric {

  /** How a metric's string is read. */
  sealed abstract class Kind(val name: String)

  /** A whole number in decimal. */
  case object Long extends Kind("long")

  /** A decimal number (Java's `Double.toString`). */
  case object Double extends Kind("double")

  /** `true` or `false`. */
  case object Boolean extends Kind("boolean")

  /** Text as it is (names, types, modes). */
  case object Text extends Kind("text")

  /** Whole numbers separated by commas, in a stated order. */
  case object LongList extends Kind("longList")

  /** A JSON array of objects with the declared `fields`. */
  case object JsonList extends Kind("jsonList")

  val kinds: Seq[Kind] = Seq(Long, Double, Boolean, Text, LongList, JsonList)

  /** Whether `value` reads as `kind` says (the drift test of the declarations uses it). */
  def reads(kind: Kind, value: String): Boolean = kind match {
    case Long => value.toLongOption.isDefined
    case Double => value.toDoubleOption.isDefined
    case Boolean => value == "true" || value == "false"
    case Text => true
    case LongList => value.split(",", -1).forall(_.toLongOption.isDefined)
    case JsonList => value.startsWith("[") && value.endsWith("]")
  }
}

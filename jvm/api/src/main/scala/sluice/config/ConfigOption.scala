package sluice.config

import scala.util.Try

/**
 * One user-facing option: its name, what it means, its type and the values it allows. Every
 * option of every source and of the Spark binding is declared this way, so that parsing,
 * validation, error messages and the option reference in the docs come from one place.
 */
final case class ConfigOption[T](
    name: String,
    doc: String,
    default: Option[T],
    allowed: String,
    parse: String => Option[T],
    check: T => Boolean = (_: T) => true,
    /** Values may be credentials: no message, log or repr shows them (Python's reprs follow this flag). */
    secret: Boolean = false) {

  def withDefault(value: T): ConfigOption[T] = copy(default = Some(value))
  def withCheck(allowedText: String)(ok: T => Boolean): ConfigOption[T] =
    copy(allowed = allowedText, check = ok)
  def asSecret: ConfigOption[T] = copy(secret = true)

  /** The value as the options map stores it. */
  def render(value: T): String = value.toString

  private[config] def read(raw: String, context: String): T = {
    val parsed = parse(raw.trim).filter(check)
    parsed.getOrElse(
      throw ConfigOption.invalid(context, name, if (secret) ConfigOption.Mask else raw, allowed))
  }
}

object ConfigOption {

  /** What stands for the value of a secret option wherever options are shown. */
  val Mask = "***"

  def long(name: String, doc: String): ConfigOption[Long] =
    ConfigOption(name, doc, None, "an integer", s => Try(s.toLong).toOption)
  def int(name: String, doc: String): ConfigOption[Int] =
    ConfigOption(name, doc, None, "an integer", s => Try(s.toInt).toOption)
  def string(name: String, doc: String): ConfigOption[String] =
    ConfigOption(name, doc, None, "a string", s => Some(s))
  def boolean(name: String, doc: String): ConfigOption[Boolean] =
    ConfigOption(
      name,
      doc,
      None,
      "true or false",
      s =>
        s.toLowerCase match {
          case "true" => Some(true)
          case "false" => Some(false)
          case _ => None
        })

  def invalid(
      context: String,
      name: String,
      value: String,
      allowed: String): IllegalArgumentException =
    new IllegalArgumentException(
      s"$context: invalid value '$value' for option '$name'; allowed: $allowed.")
}

/**
 * Raw string options checked against a set of declared options: unknown names are an error
 * (a typo must not pass silently), and each value is parsed and range-checked on access.
 * Names match case-insensitively, as Spark's own options do.
 */
final class Options(
    raw: Map[String, String],
    declared: Seq[ConfigOption[_]],
    context: String,
    /** The options an unknown name's message lists (default: all declared). */
    listed: Seq[ConfigOption[_]] = Nil) {
  private val byLowerName: Map[String, String] = raw.map { case (k, v) => k.toLowerCase -> v }

  locally {
    val known = declared.map(_.name.toLowerCase).toSet
    val unknown = raw.keys.filterNot(k => known.contains(k.toLowerCase)).toSeq.sorted
    if (unknown.nonEmpty) {
      throw new IllegalArgumentException(
        s"$context: unknown option${if (unknown.size > 1) "s" else ""} " +
          unknown.map(u => s"'$u'").mkString(", ") + ". Known options: " +
          (if (listed.nonEmpty) listed else declared).map(_.name).sorted.mkString(", ") + ".")
    }
    // every value given is checked now, before any rule that combines options: a bad value is
    // reported as such, not as a conflict it happens to take part in
    declared.filter(contains).foreach(get(_))
  }

  def get[T](option: ConfigOption[T]): Option[T] =
    byLowerName.get(option.name.toLowerCase).map(option.read(_, context)).orElse(option.default)

  def required[T](option: ConfigOption[T]): T = get(option).getOrElse(
    throw new IllegalArgumentException(
      s"$context: missing required option '${option.name}' (${option.doc}); allowed: ${option.allowed}."))

  def contains(option: ConfigOption[_]): Boolean = byLowerName.contains(option.name.toLowerCase)
}

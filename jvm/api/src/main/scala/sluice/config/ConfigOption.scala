package sluice.config

import scala.util.Try

import sluice.errors.{ErrorClasses, SluiceConfigException}

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
    secret: Boolean = false,
    /**
     * What `allowed` says, in a form a program reads: python/sluice/_options.json carries it, so
     * that Python's builders check a value without parsing the English text. None: the text only.
     */
    values: Option[AllowedValues] = None) {

  def withDefault(value: T): ConfigOption[T] = copy(default = Some(value))

  /** A check only the text describes (`values` is cleared: it would no longer say the same). */
  def withCheck(allowedText: String)(ok: T => Boolean): ConfigOption[T] =
    copy(allowed = allowedText, check = ok, values = None)

  /** Declares what a custom check allows, for programs (ConfigOptionSuite tests they agree). */
  def withValues(declared: AllowedValues): ConfigOption[T] = copy(values = Some(declared))
  def asSecret: ConfigOption[T] = copy(secret = true)

  /** Integers `>= min`: the text, the check and the declared values from one number. */
  def atLeast(min: Long)(implicit n: Numeric[T]): ConfigOption[T] =
    withCheck(s"an integer >= $min")(v => n.toLong(v) >= min)
      .withValues(AllowedValues(min = Some(min)))

  /** Integers from `min` to `max`, both included. */
  def between(min: Long, max: Long)(implicit n: Numeric[T]): ConfigOption[T] =
    withCheck(s"an integer from $min to $max")(v => n.toLong(v) >= min && n.toLong(v) <= max)
      .withValues(AllowedValues(min = Some(min), max = Some(max)))

  /** One of `words` (`ignoreCase`: in any case); `text` is how the reference lists them. */
  def oneOf(text: String, words: Seq[String], ignoreCase: Boolean)(implicit
      ev: T <:< String): ConfigOption[T] =
    withCheck(text)(v =>
      if (ignoreCase) words.exists(_.equalsIgnoreCase(ev(v))) else words.contains(ev(v)))
      .withValues(AllowedValues(words = words, ignoreCase = ignoreCase))

  /** Any string with a character that is not white space. */
  def nonBlank(text: String)(implicit ev: T <:< String): ConfigOption[T] =
    withCheck(text)(v => ev(v).trim.nonEmpty).withValues(AllowedValues(nonBlank = true))

  /** The value as the options map stores it. */
  def render(value: T): String = value.toString

  private[config] def read(raw: String, context: String): T = {
    val parsed = parse(raw.trim).filter(check)
    parsed.getOrElse(
      throw ConfigOption.invalid(context, name, if (secret) ConfigOption.Mask else raw, allowed))
  }
}

/**
 * The values an option allows, as data: integers from `min` to `max` (either bound optional),
 * or one of `words`, or (`nonBlank`) any string with a character that is not white space. With
 * both a bound and words, either kind is allowed (`an integer >= 0, or auto`).
 */
final case class AllowedValues(
    min: Option[Long] = None,
    max: Option[Long] = None,
    words: Seq[String] = Nil,
    ignoreCase: Boolean = false,
    nonBlank: Boolean = false) {
  def integers: Boolean = min.isDefined || max.isDefined
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
      allowed: String): SluiceConfigException =
    new SluiceConfigException(
      ErrorClasses.InvalidOption,
      Map("context" -> context, "value" -> value, "option" -> name, "allowed" -> allowed))
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
      throw new SluiceConfigException(
        ErrorClasses.UnknownOption,
        Map(
          "context" -> context,
          "options" -> (s"option${if (unknown.size > 1) "s" else ""} " +
            unknown.map(u => s"'$u'").mkString(", ")),
          "known" -> (if (listed.nonEmpty) listed else declared)
            .map(_.name)
            .sorted
            .mkString(", ")))
    }
    // every value given is checked now, before any rule that combines options: a bad value is
    // reported as such, not as a conflict it happens to take part in
    declared.filter(contains).foreach(get(_))
  }

  def get[T](option: ConfigOption[T]): Option[T] =
    byLowerName.get(option.name.toLowerCase).map(option.read(_, context)).orElse(option.default)

  def required[T](option: ConfigOption[T]): T = get(option).getOrElse(
    throw new SluiceConfigException(
      ErrorClasses.MissingOption,
      Map(
        "context" -> context,
        "option" -> option.name,
        "about" -> s" (${option.doc})",
        "allowed" -> option.allowed)))

  def contains(option: ConfigOption[_]): Boolean = byLowerName.contains(option.name.toLowerCase)
}

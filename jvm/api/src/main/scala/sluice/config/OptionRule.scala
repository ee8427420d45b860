package sluice.config

import sluice.errors.{ErrorClasses, SluiceConfigException, SluiceError}

/**
 * A rule over several options of one source, declared once beside them: the source's own
 * validation applies it, the option reference states it, and python/sluice/_options.json carries
 * it to Python's builders, which read it instead of repeating it.
 */
sealed trait OptionRule {

  /** What the options together say (`subscription`, `start`), the key Python finds it by. */
  def name: String
  def options: Seq[ConfigOption[_]]

  /** The rule as the option reference states it. */
  def text: String
}

object OptionRule {
  private def quoted(options: Seq[ConfigOption[_]]): Seq[String] =
    options.map(o => s"'${o.name}'")
  private def backticked(options: Seq[ConfigOption[_]]): Seq[String] =
    options.map(o => s"`${o.name}`")

  /** `a, b and c` */
  private[config] def listed(items: Seq[String], last: String): String =
    if (items.size < 2) items.mkString
    else items.init.mkString(", ") + s" $last " + items.last

  /**
   * Exactly one of `options` must be given. `missing` says what to give when none is (the message
   * after the context); two or more are refused by naming them.
   */
  final case class ExactlyOne(name: String, options: Seq[ConfigOption[_]], missing: String)
      extends OptionRule {

    /** The one option given, or the message that names what is wrong. */
    def chosen(o: Options, context: String): ConfigOption[_] =
      options.filter(o.contains) match {
        case Seq(one) => one
        case Seq() => throw SluiceError.config(s"$context: $missing")
        case several =>
          throw new SluiceConfigException(
            ErrorClasses.ConflictingOptions,
            Map(
              "context" -> context,
              "given" -> quoted(several).mkString(" and "),
              "choices" -> listed(quoted(options), "and")))
      }

    override def text: String = s"give exactly one of ${listed(backticked(options), "and")}"
  }

  /**
   * Alternatives in order of precedence: when several are given the first in `options` applies
   * (Spark's Kafka source's order). A builder that sets one removes the others and `qualifiers`,
   * options that only refine an alternative.
   */
  final case class FirstOf(
      name: String,
      options: Seq[ConfigOption[_]],
      qualifiers: Seq[ConfigOption[_]] = Nil)
      extends OptionRule {

    /** The alternative that applies, if any is given. */
    def applying(o: Options): Option[ConfigOption[_]] = options.find(o.contains)

    /** What a builder removes before it sets one of the alternatives. */
    def replaced: Seq[ConfigOption[_]] = options ++ qualifiers

    override def text: String =
      s"of ${listed(backticked(options), "and")} the first given applies" +
        (if (qualifiers.isEmpty) ""
         else s"; a builder setting one also removes ${listed(backticked(qualifiers), "and")}")
  }
}

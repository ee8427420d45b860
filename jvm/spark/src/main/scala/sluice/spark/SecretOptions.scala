package sluice.spark

import java.util.regex.Pattern

import sluice.config.ConfigOption

/**
 * Which option values are secret: those of an option declared secret (`ConfigOption.asSecret`),
 * matched as Python's `_options.is_secret` matches them, over the same declarations
 * (`OptionDeclarations.groups`). A declared name wins over a template, so `kafka.bootstrap.servers`
 * is not `kafka.<property>`; every placeholder of a template but the last is one key segment, the
 * last takes the rest; an `<option>` placeholder (`hybrid.<i>.<option>`) holds another option's
 * key, whose declaration decides.
 */
object SecretOptions {
  private val Placeholder = Pattern.compile("<(\\w+)>")

  private lazy val declared: Seq[ConfigOption[_]] = OptionDeclarations.groups.flatMap(_._2)

  private lazy val exact: Map[String, Seq[ConfigOption[_]]] =
    declared.filterNot(o => Placeholder.matcher(o.name).find()).groupBy(_.name.toLowerCase)

  private lazy val templates: Seq[(ConfigOption[_], Pattern)] =
    declared.filter(o => Placeholder.matcher(o.name).find()).map(o => o -> template(o.name))

  private def template(name: String): Pattern = {
    val m = Placeholder.matcher(name)
    val parts = Iterator
      .continually(m.find())
      .takeWhile(identity)
      .map(_ => (m.start, m.end, m.group(1)))
      .toSeq
    val regex = new StringBuilder
    var at = 0
    parts.zipWithIndex.foreach { case ((start, end, group), i) =>
      regex ++= Pattern.quote(name.substring(at, start))
      regex ++= s"(?<$group>${if (i == parts.size - 1) ".+" else "[^.]+"})"
      at = end
    }
    regex ++= Pattern.quote(name.substring(at))
    Pattern.compile(regex.toString, Pattern.CASE_INSENSITIVE)
  }

  /** Whether the value of option `key` is secret. */
  def isSecret(key: String): Boolean = declarations(key).exists(_.secret)

  private def declarations(key: String): Seq[ConfigOption[_]] =
    exact.getOrElse(
      key.toLowerCase, {
        templates.iterator
          .map { case (o, p) => o -> p.matcher(key) }
          .collectFirst {
            case (o, m) if m.matches() =>
              if (o.name.contains("<option>")) declarations(m.group("option")) else Seq(o)
          }
          .getOrElse(Nil)
      })

  /** `options` with every secret value replaced by `ConfigOption.Mask`. */
  def masked(options: Map[String, String]): Map[String, String] =
    options.map { case (k, v) => if (isSecret(k)) k -> ConfigOption.Mask else k -> v }
}

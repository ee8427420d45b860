package sluice.config

/**
 * Renders declared options as the Markdown reference in docs/options.md, so that the docs are
 * produced from the same declarations that validate user input (a test keeps them in sync).
 */
object OptionsReference {

  final case class Section(
      title: String,
      intro: String,
      options: Seq[ConfigOption[_]],
      rules: Seq[OptionRule] = Nil)

  def markdown(sections: Seq[Section]): String = {
    val body = sections.map { s =>
      val rows = s.options.map { o =>
        val default = o.default.map(d => s"`$d`").getOrElse("—")
        s"| `${o.name}` | ${o.doc} | $default | ${o.allowed} |"
      }
      (Seq(
        s"## ${s.title}",
        "",
        s.intro,
        "",
        "| option | meaning | default | allowed |",
        "|---|---|---|---|") ++ rows ++
        Option.when(s.rules.nonEmpty)(
          "\nRules that combine options: " + s.rules.map(_.text).mkString("; ") + "."))
        .mkString("\n")
    }
    body.mkString("\n\n") + "\n"
  }
}

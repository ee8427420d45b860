package sluice.docs

/**
 * Which string literals of a docs' Scala snippet name a place a reader replaces by their own, and
 * which would make the snippet use this machine's. Plain Scala with no sbt types: compiled by the
 * build (project/DocSnippets.scala uses it to generate the snippets' test source) and by the spark
 * project's tests too (`DocSnippetLiteralsSuite` holds its rules to account, as no build test can).
 *
 * A plain literal naming `broker:9092` or starting with one of `Places` is handed to
 * `run.localized` (which rewrites it to the test's broker and folder), in a val declared before the
 * snippet. Refused, each with the page and line: such a literal with an interpolator (its parts are
 * out of a rewrite's reach), a triple-quoted literal holding a path, a literal holding a second path
 * or a path that is not at its start, and any other literal holding what a reader takes for a path of
 * their machine: absolute (`/etc/x`, `~/data`, `file:/x`), a URI, a broker other than `broker:9092`
 * (`localhost:9092`, `127.0.0.1:9092`), or relative (`./x`, `data/events.json`, `out/`, and any
 * literal a path-taking call is given, `PathCall`: `load("chk")`), which would resolve against the
 * forked test JVM's working folder, writing into the checkout.
 */
object DocSnippetLiterals {

  /** Where a reader's paths start, which a run rewrites to its own folder. */
  val Places: Seq[String] =
    Seq(
      "s3a://archive/",
      "s3a://warehouse/",
      "/archive/",
      "/checkpoints/",
      "/etc/kafka/",
      "/tables/",
      "/tmp/")

  // a string literal, triple-quoted (group 2) or not (group 3), with its interpolator (group 1)
  private val StringLiteral =
    """(?s)(?<![\w"])([A-Za-z_]\w*)?(?:"{3}(.*?)"{3}(?!")|"((?:[^"\\\n]|\\.)*)"(?!"))""".r
  private val Rewritten =
    ("^(" + Places.map(java.util.regex.Pattern.quote).mkString("|") + ")|broker:9092").r
  // what a reader would take for a path, a URI or a broker of their own machine: a host (a name
  // starting with a letter, or an IPv4 address) and a port, but not a time ("12:30") nor broker:9092
  private val Absolute =
    ("""[a-z][a-z0-9+.-]*:/|(?:^|[\s'"`(=,;])~?/[\w.~-]|""" +
      """(?<![\w.-])(?!broker:9092\b)(?:[A-Za-z][\w.-]*|\d{1,3}(?:\.\d{1,3}){3}):\d{2,5}\b""").r
  // a relative path: `./x`, `../x`, or words joined by `/` ending in a data file's suffix or in `/`
  private val Relative =
    """(?:^|[\s'"`(=,;])\.{1,2}/|^[\w.-]+(?:/[\w.-]+)*/(?:[\w.-]*\.(?:json|jsonl|csv|txt|parquet|gz|zst|avro|orc|png))?$""".r

  // the end of code calling what takes a path, with the literals before this one as its arguments
  // (`paths("a", "b")`): Spark's readers and writers, the builders' `path`, the path options
  private val PathCall =
    ("""(?:\.(?:path|paths|load|json|parquet|csv|text|orc|save|start)\(|""" +
      """\.option\(\s*"(?:path|checkpointLocation)"\s*,)(?:\s*"(?:[^"\\\n]|\\.)*"\s*,)*\s*$""").r
  // a table builder's `table(` given a location; `spark.table("db.events")` names a catalog's table
  private val TableCall = """\.table\((?:\s*"(?:[^"\\\n]|\\.)*"\s*,)*\s*$""".r

  private def pathIn(text: String): Option[String] =
    Absolute.findFirstIn(text).orElse(Relative.findFirstIn(text))

  /** `text`, a literal the code `before` it hands to a call taking a path, or None. */
  private def pathGiven(before: String, text: String): Option[String] = {
    val end = before.takeRight(300)
    val given = PathCall.findFirstIn(end).isDefined ||
      text.contains("/") && TableCall.findFirstIn(end).isDefined
    if (given) Some(text) else None
  }

  private val Advice =
    s"write it as a literal of its own starting with one of ${Places.mkString(", ")}, or " +
      "`broker:9092`, or mark the snippet `skip <why>`"

  /**
   * `code` with each literal a reader replaces by their own replaced by the name of a val (numbered
   * from `first`) that the returned declarations bind to `run.localized(<literal>)`: a closure the
   * snippet hands to Spark (`foreachBatch`, a UDF) then captures a string, not the run.
   * `lineOf(offset)` names the page and line of an offset in `code`; a refused literal throws
   * an IllegalArgumentException naming it.
   */
  def localized(code: String, lineOf: Int => String, first: Int): (String, Seq[String]) = {
    val hoisted = collection.mutable.ArrayBuffer.empty[String]
    val out = StringLiteral.replaceAllIn(
      code,
      m => {
        def refuse(why: String) =
          throw new IllegalArgumentException(s"${lineOf(m.start)}: ${m.matched} $why")
        val interpolated = m.group(1) != null
        val text = Option(m.group(3)).getOrElse(m.group(2))
        val rewritten = Rewritten.findFirstMatchIn(text)
        // what is left once the rewritten place or broker is taken out: no second absolute path
        // may hide there (what follows a place is relative to it: `/tmp/` + `a/b.json` is fine)
        val rest = rewritten.fold(text)(r =>
          if (r.group(1) != null) text.substring(r.end) else text.replace("broker:9092", ""))
        val replacement =
          if (rewritten.isEmpty)
            pathIn(text)
              .orElse(pathGiven(m.before.toString, text))
              .fold(m.matched) { path =>
                refuse(
                  s"holds a path, URI or broker the test does not rewrite ('$path': the snippet " +
                    s"would use this machine's): $Advice")
              }
          else if (m.group(2) != null || interpolated)
            refuse(
              "names a broker or a path the test rewrites, out of its reach in an interpolated or " +
                "triple-quoted literal: write it as a plain literal of its own")
          else if (Absolute.findFirstIn(rest).isDefined)
            refuse(
              s"holds a second path, or one not at its start ('${Absolute.findFirstIn(rest).get}')" +
                s", which the test does not rewrite: $Advice")
          else {
            hoisted += s"val localizedLiteral${first + hoisted.size} = run.localized(${m.matched})"
            s"localizedLiteral${first + hoisted.size - 1}"
          }
        scala.util.matching.Regex.quoteReplacement(replacement)
      })
    (out, hoisted.toSeq)
  }
}

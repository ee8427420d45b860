import java.nio.charset.StandardCharsets.UTF_8

import sbt._

import sluice.docs.DocSnippetLiterals

/**
 * The docs' Scala snippets as one test source of the spark project (`sluice.docs.DocSnippets`),
 * which `sluice.docs.DocSnippetsSuite` runs: a snippet that no longer compiles against the code
 * fails the build, naming its page and line; one that no longer runs fails the suite.
 *
 * As tests/test_doc_snippets.py does for the ```python blocks, a page's snippets run in order in
 * one scope (one method per page), as a reader pastes them into spark-shell top to bottom: `spark`
 * and the imports in `Prelude` (what a page's prose assumes) are given. The line just before a fence
 * may carry the Python test's marker, with the same directives (separated by `;`):
 *
 *   <!-- snippet: given history, live -->            names it uses but does not define, bound to the
 *                                                    suite's value of that name (`DocGiven`)
 *   <!-- snippet: given metadataLocation=iceberg_events -->  bound to a value of another name
 *   <!-- snippet: expect df.count() == 6 -->         a check run after it, in its scope
 *   <!-- snippet: skip <why> -->                      not run (listed in `DocSnippets.all`)
 *   <!-- snippet: idle <why> -->                      its queries may read nothing
 *
 * A string literal naming `broker:9092`, or a path under the places a reader puts their own
 * (`/archive/`, `/checkpoints/`, `/etc/kafka/`, `/tables/`, `/tmp/`, `s3a://archive/`,
 * `s3a://warehouse/`), is
 * handed to `run.localized`, which rewrites it to the test's broker and folder when it runs; any
 * other literal holding what looks like a path, a URI or a broker fails the build, naming page and
 * line: run as written, the snippet would use this machine's (`DocSnippetLiterals` has the rules).
 */
object DocSnippets {
  private val Fence = """(?ms)^```(\w+)[^\n]*\n(.*?)^```""".r
  private val Marker = """<!--\s*snippet:(.*?)-->\s*$""".r
  private val AnyFence = """(?ms)^```[^\n]*\n.*?^```""".r
  // a marker as a page's line (not as an example inside a fenced block)
  private val MarkerLine = """(?m)^[ \t]*<!--\s*snippet:[^\n]*""".r
  // a Scala block the fence above does not match, so it would silently not run
  // (an indented, ~~~ or four-backtick fence, a space before the word, Scala capitalised)
  private val UnreadFence = """(?m)^(?!```scala\b)[ \t]*(?:`{3,}|~{3,})[ \t]*(?i:scala)\b""".r
  private val Prelude =
    """import java.time.Duration
      |
      |import org.apache.spark.sql.SparkSession
      |
      |import sluice.Sluice
      |import sluice.api.{Boundedness, Source}
      |import sluice.connector.file.FileSource
      |import sluice.connector.generator.GeneratorSource
      |import sluice.connector.kafka.{KafkaSource, OffsetsInitializer}
      |import sluice.eventtime.WatermarkStrategy
      |import sluice.hybrid.{HybridSource, SourceSwitchContext}
      |""".stripMargin

  /** A ```scala block: where it is, its code, what its marker says. */
  private final case class Snippet(
      page: String,
      line: Int,
      code: String,
      given: Seq[(String, String)],
      expect: Seq[String],
      skip: Option[String],
      idle: Option[String]) {
    def where: String = s"$page:$line"
  }

  /** README.md, python/README.md and the pages under docs/, as `make test`'s Python snippet test reads them. */
  def pages(root: File): Seq[File] =
    Seq(root / "README.md", root / "python" / "README.md") ++ (root / "docs" * "*.md").get
      .sortBy(_.getName)

  private def snippets(root: File, page: File): Seq[Snippet] = {
    val text = IO.read(page, UTF_8)
    val name = page.relativeTo(root).map(_.getPath.replace('\\', '/')).getOrElse(page.getName)
    val fences = Fence.findAllMatchIn(text).toSeq
    def lineAt(offset: Int) = text.substring(0, offset).count(_ == '\n') + 1
    // a block the runner would not see, or a marker that binds to no block, is a mistake: refused
    for (m <- UnreadFence.findAllMatchIn(text))
      sys.error(
        s"$name:${lineAt(m.start)}: a ```scala block must start its line with ``` " +
          "(an indented or ~~~ fence is not run): unindent it, or write it as ```text")
    val blocks = AnyFence.findAllMatchIn(text).toSeq // with a language or not
    for (m <- MarkerLine.findAllMatchIn(text)
      if !blocks.exists(b => b.start < m.start && m.start < b.end)) {
      val next = text.indexOf('\n', m.end)
      if (next < 0 || !text.startsWith("```", next + 1))
        sys.error(
          s"$name:${lineAt(m.start)}: a snippet marker must sit on the line just before the " +
            "fence of its block (nothing between them, not even a blank line)")
    }
    fences.filter(_.group(1) == "scala").map { fence =>
      val line = text.substring(0, fence.start).count(_ == '\n') + 2
      val before =
        text.substring(0, fence.start).stripSuffix("\n").split('\n').lastOption.getOrElse("")
      val plain = Snippet(name, line, fence.group(2), Nil, Nil, None, None)
      Marker.findFirstMatchIn(before).fold(plain) { marker =>
        marker.group(1).split(';').map(_.trim).filter(_.nonEmpty).foldLeft(plain) { (s, d) =>
          val (word, rest) = d.span(!_.isWhitespace) match { case (w, r) => (w, r.trim) }
          word match {
            case "given" =>
              val names = rest.split(',').map(_.trim).filter(_.nonEmpty).map { n =>
                n.split("=", 2) match {
                  case Array(bound, value) => bound.trim -> value.trim
                  case _ => n -> n
                }
              }
              s.copy(given = s.given ++ names)
            case "expect" => s.copy(expect = s.expect :+ rest)
            case "skip" => s.copy(skip = Some(rest))
            case "idle" => s.copy(idle = Some(rest))
            case other => sys.error(s"${s.where}: unknown snippet directive '$other'")
          }
        }
      }
    }
  }

  private def quoted(s: String) =
    "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\""

  /** `DocSnippetLiterals.localized`, naming the page and line of each offset in `code`. */
  private def localized(
      code: String,
      page: String,
      line: Int,
      first: Int): (String, Seq[String]) =
    try
      DocSnippetLiterals.localized(
        code,
        offset => s"$page:${line + code.substring(0, offset).count(_ == '\n')}",
        first)
    catch { case e: IllegalArgumentException => sys.error(e.getMessage) }

  private def option(o: Option[String]) = o.fold("None")(s => s"Some(${quoted(s)})")

  /** One page's snippets (none skipped) as the body of its method. */
  private def body(found: Seq[Snippet]): String = {
    // one scope: a name is bound once per page (`spark` always), as a val is defined once
    val bound = collection.mutable.Map("spark" -> "spark")
    var literals = 0 // the page's literals hoisted so far
    found
      .map { s =>
        val given = s.given.flatMap { case (name, value) =>
          bound.get(name) match {
            case Some(`value`) => None
            case Some(other) =>
              sys.error(s"${s.where}: '$name' is already given as '$other' on this page")
            case None =>
              bound(name) = value
              Some(s"val $name = run.givens.$value")
          }
        }
        val (code, hoisted) = localized(s.code, s.page, s.line, literals + 1)
        literals += hoisted.size
        val checks = s.expect.map { e =>
          // the marker sits on the line before the fence, two before the code
          val (check, hoistedByCheck) = localized(e, s.page, s.line - 2, literals + 1)
          literals += hoistedByCheck.size
          (s"run.expect(${quoted(e)}) {\n  $check\n}", hoistedByCheck)
        }
        (Seq(
          s"// ${s.where}",
          s"run.begin(${quoted(s.where)}, idle = ${option(s.idle)})") ++ given ++ hoisted ++
          checks.flatMap(_._2) ++ Seq(code.stripSuffix("\n")) ++ checks.map(_._1) :+ "run.end()")
          .mkString("\n")
      }
      .mkString("\n\n")
  }

  def generate(root: File, outDir: File): Seq[File] = {
    val found = pages(root).filter(_.exists).map(p => snippets(root, p)).filter(_.nonEmpty)
    val all = found.flatten.map { s =>
      s"DocSnippet(${quoted(s.page)}, ${s.line}, skip = ${option(s.skip)}, idle = ${option(s.idle)})"
    }
    val run = found.map(_.filter(_.skip.isEmpty)).filter(_.nonEmpty)
    val methods = run.zipWithIndex.map { case (page, i) =>
      s"""  // ${page.head.page}
         |  private def page$i(run: DocRun): Unit = {
         |    import run.checks._
         |    val spark: SparkSession = run.spark
         |
         |${body(page).linesIterator.map(l => if (l.isEmpty) l else "    " + l).mkString("\n")}
         |  }
         |""".stripMargin
    }
    val pageList = run.zipWithIndex
      .map { case (page, i) => s"    ${quoted(page.head.page)} -> (page$i _)" }
      .mkString(",\n")
    val source =
      s"""// Generated by project/DocSnippets.scala from the docs' ```scala blocks: edit the docs, not this.
         |package sluice.docs
         |
         |$Prelude
         |object DocSnippets {
         |
         |  /** Every Scala snippet of the docs, in page order, with what its marker says. */
         |  val all: Seq[DocSnippet] = Seq(
         |${all.map("    " + _).mkString(",\n")})
         |
         |  /** The pages with snippets to run, each as the method that runs them in order. */
         |  val pages: Seq[(String, DocRun => Unit)] = Seq(
         |$pageList)
         |
         |${methods.mkString("\n")}}
         |""".stripMargin
    val out = outDir / "sluice" / "docs" / "DocSnippets.scala"
    // written only when changed: an unchanged file is not compiled again
    if (!out.exists || IO.read(out, UTF_8) != source) IO.write(out, source, UTF_8)
    Seq(out)
  }
}

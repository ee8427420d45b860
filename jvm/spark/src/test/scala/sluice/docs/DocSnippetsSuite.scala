package sluice.docs

import org.scalatest.funsuite.AnyFunSuite

/**
 * The docs' Scala snippets compile because `DocSnippets` (generated from them) is part of this test
 * source set; this suite lists them and keeps leaving one out a decision that is written down.
 */
class DocSnippetsSuite extends AnyFunSuite {

  /** Snippets that are not compiled, with the reason the page's marker gives. */
  private val Skipped = Map.empty[String, String]

  test("every Scala snippet of the docs is compiled, or listed here as left out") {
    info(
      s"${DocSnippets.compiled.size} snippets compiled: ${DocSnippets.compiled.mkString(", ")}")
    assert(DocSnippets.compiled.exists(_.startsWith("README.md:")))
    assert(DocSnippets.compiled.exists(_.startsWith("docs/hybrid.md:")))
    assert(DocSnippets.skipped == Skipped)
  }
}

package sluice.config

import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

import sluice.Sources

class OptionsReferenceSuite extends AnyFunSuite {

  test("docs/options.md lists exactly the declared options") {
    val path = Seq(Paths.get("docs", "options.md"), Paths.get("..", "docs", "options.md"))
      .find(Files.exists(_))
      .get
    val doc = new String(Files.readAllBytes(path), "UTF-8")
    val marker = "<!-- generated from the option declarations: do not edit below -->\n"
    assert(doc.contains(marker), "docs/options.md lost its generated section marker")
    val generated = doc.substring(doc.indexOf(marker) + marker.length)
    assert(
      generated == Sources.optionsReference,
      "docs/options.md is out of date: regenerate it with `make docs`")
  }
}

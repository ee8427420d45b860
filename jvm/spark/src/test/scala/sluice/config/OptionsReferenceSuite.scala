package sluice.config

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import sluice.{CheckoutFiles, Sources}

class OptionsReferenceSuite extends AnyFunSuite {

  test("docs/options.md lists exactly the declared options") {
    val path = CheckoutFiles("docs", "options.md")
    assert(Files.exists(path), s"$path is missing")
    val doc = new String(Files.readAllBytes(path), "UTF-8")
    val marker = "<!-- generated from the option declarations: do not edit below -->\n"
    assert(doc.contains(marker), "docs/options.md lost its generated section marker")
    val generated = doc.substring(doc.indexOf(marker) + marker.length)
    assert(
      generated == Sources.optionsReference,
      "docs/options.md is out of date: regenerate it with `make docs`")
  }
}

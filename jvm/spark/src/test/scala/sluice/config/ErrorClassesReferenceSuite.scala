package sluice.config

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import sluice.CheckoutFiles
import sluice.errors.ErrorClasses

/** docs/errors.md and Python's copy of the error classes say what the declarations say. */
class ErrorClassesReferenceSuite extends AnyFunSuite {

  private def read(first: String, more: String*): String = {
    val path = CheckoutFiles(first, more: _*)
    assert(Files.exists(path), s"$path is missing: generate it with `make docs`")
    new String(Files.readAllBytes(path), "UTF-8")
  }

  test("docs/errors.md lists exactly the declared error classes") {
    val doc = read("docs", "errors.md")
    val marker = "<!-- generated from the error class declarations: do not edit below -->\n"
    assert(doc.contains(marker), "docs/errors.md lost its generated section marker")
    assert(
      doc.substring(doc.indexOf(marker) + marker.length) == ErrorClasses.reference,
      "docs/errors.md is out of date: regenerate it with `make docs`")
  }

  test("python/sluice/_errors.json holds exactly the declared error classes") {
    assert(
      read("python", "sluice", "_errors.json") == ErrorClasses.json,
      "python/sluice/_errors.json is out of date: regenerate it with `make docs`")
  }
}

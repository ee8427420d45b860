package sluice.spark

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import sluice.CheckoutFiles
import sluice.config.{ConfigOption, Options}

class OptionDeclarationsSuite extends AnyFunSuite {

  test("python/sluice/_options.json holds exactly the declared options") {
    val path = Some(CheckoutFiles("python", "sluice", "_options.json"))
      .filter(Files.exists(_))
      .getOrElse(fail("python/sluice/_options.json is missing: generate it with `make docs`"))
    val shipped = new String(Files.readAllBytes(path), "UTF-8")
    assert(
      shipped == OptionDeclarations.json,
      "python/sluice/_options.json is out of date: regenerate it with `make docs`")
  }

  test("an invalid value of a secret option is not echoed in the error") {
    val token = ConfigOption.long("token", "a credential").asSecret
    val e = intercept[IllegalArgumentException](
      new Options(Map("token" -> "PLANTED-7f3a"), Seq(token), "Test").get(token))
    assert(
      !e.getMessage.contains("PLANTED-7f3a") && e.getMessage.contains(ConfigOption.Mask),
      e.getMessage)
  }
}

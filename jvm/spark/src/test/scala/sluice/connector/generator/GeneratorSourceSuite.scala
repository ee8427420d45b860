package sluice.connector.generator

import org.scalatest.funsuite.AnyFunSuite

import sluice.Sources

class GeneratorSourceSuite extends AnyFunSuite {

  private def error(f: => Any): String = intercept[IllegalArgumentException](f).getMessage

  test("a builder's source rebuilds from its options") {
    val source =
      GeneratorSource.builder().splits(3).recordsPerSplit(10).splitSkewMs(1, -5000).build()
    val again = Sources.fromOptions(source.options).asInstanceOf[GeneratorSource]
    assert(again.config == source.config)
    assert(again.config.splitSkewMs == Map(1 -> -5000L))
  }

  test("negative splits name the option, the value and what is allowed") {
    assert(
      error(GeneratorSource.builder().splits(-1).recordsPerSplit(1).build()) ==
        "GeneratorSource: invalid value '-1' for option 'splits'; allowed: an integer from 1 to 100000.")
  }

  test("a zero rate is refused") {
    assert(error(GeneratorSource.builder().rowsPerSecond(0).build()) ==
      "GeneratorSource: invalid value '0' for option 'rowsPerSecond'; allowed: an integer >= 1.")
  }

  test("a value of the wrong type is refused") {
    assert(
      error(
        GeneratorSource
          .builder()
          .option("splits", "four")
          .option("recordsPerSplit", "1")
          .build()) ==
        "GeneratorSource: invalid value 'four' for option 'splits'; allowed: an integer from 1 to 100000.")
  }

  test("an unknown option is an error that lists the known ones") {
    val message = error(GeneratorSource.builder().option("recordsPerSplt", "5").build())
    assert(
      message.startsWith("GeneratorSource: unknown option 'recordsPerSplt'. Known options: "))
    assert(message.contains("recordsPerSplit"))
  }

  test("an unbounded generator without a rate says what is missing") {
    assert(
      error(GeneratorSource.builder().splits(2).build()).contains("needs option 'rowsPerSecond'"))
  }

  test("skew for a split that does not exist is refused") {
    assert(
      error(GeneratorSource.builder().splits(2).recordsPerSplit(1).splitSkewMs(5, 1).build())
        .contains("split 5 does not exist"))
  }

  test("the source type is required and checked") {
    assert(
      error(Sources.fromOptions(Map("splits" -> "2"))) ==
        "Sluice: missing required option 'source'; allowed: delta, file, generator, hybrid, iceberg, kafka.")
    assert(
      error(Sources.fromOptions(Map("source" -> "kafak"))) ==
        "Sluice: invalid value 'kafak' for option 'source'; allowed: delta, file, generator, hybrid, iceberg, kafka.")
  }

  test("records are a pure function of split and index") {
    val c = GeneratorSource
      .builder()
      .splits(4)
      .recordsPerSplit(10)
      .eventTimeStartMs(1000)
      .eventTimeStepMs(10)
      .splitSkewMs(2, -500)
      .payloadBytes(8)
      .build()
      .config
    assert(c.recordId(2, 3) == 14)
    assert(c.eventTimeMs(2, 3) == 1000 - 500 + 30)
    assert(c.payload(2, 3) == "r14-xxxx")
  }
}

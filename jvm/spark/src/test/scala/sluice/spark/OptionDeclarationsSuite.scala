package sluice.spark

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import scala.util.Try

import sluice.CheckoutFiles
import sluice.config.{ConfigOption, OptionRule, Options}
import sluice.connector.kafka.KafkaConfig

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

  private def accepts(option: ConfigOption[_], value: String): Boolean =
    Try(new Options(Map(option.name -> value), Seq(option), "Test")).isSuccess

  test("the allowed values declared as data say what each option's own check says") {
    val declared = OptionDeclarations.groups.flatMap(_._2).distinct
    val withValues = declared.filter(_.values.isDefined)
    assert(withValues.size >= 30, s"only ${withValues.size} options declare their values")
    for (option <- withValues; v <- option.values) {
      def check(value: String, expected: Boolean) = assert(
        accepts(option, value) == expected,
        s"${option.name}: '$value' is ${if (expected) "refused" else "accepted"} by the check " +
          s"but the declared values ${option.values} say otherwise")
      v.min.foreach { m =>
        check(m.toString, true); check((m - 1).toString, v.words.contains((m - 1).toString))
      }
      v.max.foreach { m => check(m.toString, true); check((m + 1).toString, false) }
      if (v.integers) check("x1", v.words.contains("x1"))
      v.words.foreach { w =>
        check(w, true)
        if (w.toUpperCase != w) check(w.toUpperCase, v.ignoreCase)
      }
      if (v.words.nonEmpty && !v.integers) check(v.words.mkString + "?", false)
      if (v.nonBlank) { check(" ", false); check("x", true) }
    }
  }

  test("every integer range the reference states is declared as data too (Python checks those)") {
    val ranges = "an integer (>= -?\\d+|from -?\\d+ to -?\\d+)".r
    val untyped = OptionDeclarations.groups
      .flatMap(_._2)
      .filter(o => ranges.matches(o.allowed) && !o.values.exists(_.integers))
      .map(_.name)
    assert(untyped.isEmpty, s"ranges stated only as text: $untyped")
  }

  test(
    "the rules that combine options name declared options of their group, and the JVM applies them") {
    for ((group, rules) <- OptionDeclarations.rules; rule <- rules) {
      val options = OptionDeclarations.groups.toMap.apply(group)
      rule.options.foreach(o =>
        assert(options.contains(o), s"$group rule ${rule.name}: ${o.name}"))
    }
    val base = Map("kafka.bootstrap.servers" -> "b:9092")
    def error(options: Map[String, String]) =
      intercept[IllegalArgumentException](KafkaConfig.fromOptions(base ++ options)).getMessage
    assert(
      error(Map("subscribe" -> "a", "assign" -> "{\"a\":[0]}")) ==
        "KafkaSource: options 'subscribe' and 'assign' exclude each other; give one of 'subscribe', " +
        "'subscribePattern' and 'assign'.")
    assert(
      error(
        Map.empty) == "KafkaSource: give what to read with option 'subscribe' (comma-separated " +
        "topics), 'subscribePattern' (a regex) or 'assign' (partitions per topic, as JSON).")
    // the first alternative given applies, whatever else is given
    val started = KafkaConfig.fromOptions(
      base ++ Map(
        "subscribe" -> "a",
        "startingOffsets" -> "earliest",
        "startingTimestamp" -> "5"))
    assert(started.starting == sluice.connector.kafka.OffsetsInitializer.Timestamp(5))
    assert(started.startingOption == KafkaConfig.Start.options.head.name)
    val start = KafkaConfig.rules.collectFirst {
      case f: OptionRule.FirstOf if f.name == "start" => f
    }
    assert(start.exists(_.qualifiers == Seq(KafkaConfig.StartingOffsetsByTimestampStrategy)))
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

package sluice.config

import java.nio.file.Files

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.SparkThrowable

import sluice.SparkSuiteBase
import sluice.connector.format.ReaderOptions
import sluice.errors.SluiceConfigException
import sluice.hybrid.HybridOptions
import sluice.spark.{OptionDeclarations, StreamOptions}

/**
 * Every declared option, fed values it must refuse: each failure is an IllegalArgumentException
 * with an error class (a SluiceConfigException; a SparkThrowable where Spark meets it) at build time (when the query is defined, before it starts) whose message names the option and
 * says what is allowed — never an exception from deep inside Spark or Kafka, never a value taken
 * silently. Driven by the declarations themselves, so an option added later is covered or this
 * suite says it is not.
 */
class BadOptionsSuite extends AnyFunSuite with SparkSuiteBase {

  /** Values of every shape; each option is tried with those its own declaration refuses. */
  private val Probes = Seq(
    "",
    "  ",
    "abc",
    "-1",
    "-2",
    "0",
    "1.5",
    "2147483648",
    "99999999999999999999",
    "maybe",
    "{",
    """{"t": {"0": "x"}}""",
    "[1]",
    "x:y",
    "(",
    "LENIENT",
    "UTF-16",
    "true",
    "ab\tc")

  private lazy val files = {
    val dir = tempDir("bad-options")
    Files.write(dir.resolve("a.json"), "{\"a\": 1}\n".getBytes("UTF-8"))
    dir.toString
  }

  private val generator = Map("source" -> "generator", "splits" -> "2", "recordsPerSplit" -> "1")
  private val kafka =
    Map("source" -> "kafka", "kafka.bootstrap.servers" -> "127.0.0.1:9", "subscribe" -> "t")
  private def file = Map(
    "source" -> "file",
    "path" -> files,
    "schema" -> "a INT, ts TIMESTAMP, d DATE, n TIMESTAMP_NTZ")

  /** A valid option set of `group` in which `name` is legal (the payload format it applies to). */
  private def baseFor(group: String, name: String): Map[String, String] = {
    val format = ReaderOptions.formats(name).map(f => if (f.contains("json")) "json" else f.min)
    group match {
      case "read" =>
        generator ++ Map(
          "watermark.kind" -> "monotonous",
          "watermark.alignment.group" -> "g",
          "watermark.alignment.maxDriftMs" -> "10")
      case "generator" => generator
      // options of Parquet files only apply to format=parquet (checked before any file is read)
      case "file" if sluice.connector.file.parquet.ParquetConfig.own.exists(_.name == name) =>
        file - "schema" + ("format" -> "parquet")
      case "file" => file ++ format.map(f => "format" -> f)
      case "kafka" if PayloadOption(name) || format.isDefined =>
        kafka ++ Map("format" -> format.getOrElse("json"), "schema" -> "a INT")
      case "kafka" => kafka
      case "hybrid" => hybrid
      // a table that is not there: every option's value is checked before the table is looked up
      case table @ ("iceberg" | "delta") => Map("source" -> table, "table" -> s"$files/no-table")
    }
  }
  private def PayloadOption(name: String) =
    Set("schema", "columnnameofcorruptrecord")(name.toLowerCase)

  /** Files of JSON lines, then Kafka values parsed as the same JSON: one schema. */
  private def hybrid: Map[String, String] = Map("source" -> "hybrid", "hybrid.sources" -> "2") ++
    file.map { case (k, v) => s"hybrid.0.$k" -> v } ++
    (kafka ++ Map("format" -> "json", "schema" -> file("schema"))).map { case (k, v) =>
      s"hybrid.1.$k" -> v
    }

  /** Where an option of `group` goes in the options map. */
  private def keyOf(group: String, name: String): String =
    if (group == "hybrid" && name != HybridOptions.Sources.name && !HybridOptions.hybridWide
        .exists(_.name == name))
      HybridOptions.entryKey(1, name)
    else name

  /** The message the option's bad value must produce, or what went wrong instead. */
  private def problem(options: Map[String, String], expected: Seq[String]): Option[String] =
    scala.util.Try(StreamOptions.parse(options)) match {
      case scala.util.Success(_) => Some("accepted")
      case scala.util.Failure(e: IllegalArgumentException) =>
        val missing = expected.filterNot(e.getMessage.contains)
        if (!e.isInstanceOf[SluiceConfigException])
          Some(s"${e.getClass.getName} has no error class: ${e.getMessage}")
        else if (missing.isEmpty) None
        else Some(s"message '${e.getMessage}' lacks ${missing.mkString(", ")}")
      case scala.util.Failure(e) => Some(s"${e.getClass.getName}: ${e.getMessage}")
    }

  private def report(problems: Seq[String]): Unit =
    assert(
      problems.isEmpty,
      problems.mkString(
        s"\n${problems.size} bad option values were not refused clearly:\n",
        "\n",
        "\n"))

  private def declared: Seq[(String, ConfigOption[Any])] = OptionDeclarations.groups.flatMap {
    case (group, options) =>
      options.filterNot(_.name.contains("<")).map(o => group -> o.asInstanceOf[ConfigOption[Any]])
  }

  private def refuses(o: ConfigOption[Any], value: String): Boolean =
    o.parse(value.trim).forall(v => !o.check(v))

  /**
   * Options whose declaration takes any string, each with values they must still refuse (a name
   * that does not exist, a pattern Spark cannot compile) and the message fragments expected.
   */
  private val DomainCases: Seq[(String, String, String, Seq[String])] = Seq(
    (
      "read",
      "watermark.timestampColumn",
      "nope",
      Seq("'nope'", "'watermark.timestampColumn'", "not a column")),
    (
      "read",
      "watermark.timestampColumn",
      "payload",
      Seq("'payload'", "'watermark.timestampColumn'", "string")),
    (
      "read",
      "watermark.eventTimeColumn",
      "payload",
      Seq("'payload'", "'watermark.eventTimeColumn'", "choose another name")),
    ("kafka", "kafka.bootstrap.servers", " ", Seq("'kafka.bootstrap.servers'", "host:port")),
    ("kafka", "subscribe", " , ", Seq("'subscribe'", "one or more topic names")),
    (
      "kafka",
      "kafka.max.poll.records",
      "abc",
      Seq("'kafka.max.poll.records'", "INT", ConfigOption.Mask)),
    ("kafka", "kafka.max.poll.records", "0", Seq("'kafka.max.poll.records'", "[1,...]")),
    ("kafka", "kafka.isolation.level", "dirty", Seq("'kafka.isolation.level'", "read_committed")),
    (
      "kafka",
      "kafka.enable.auto.commit",
      "true",
      Seq("'kafka.enable.auto.commit'", "not supported")),
    (
      "file",
      "timestampColumn",
      "a",
      Seq("'timestampColumn'", "TIMESTAMP or BIGINT column", "ts")),
    ("file", "columnNameOfCorruptRecord", "a", Seq("corrupt-record column 'a'", "STRING")),
    ("file", "dateFormat", "yyyy-MM-dd bogus{", Seq("'dateFormat'", "datetime pattern")),
    (
      "file",
      "timestampFormat",
      "yyyy-MM-dd'T'HH:mm:ss bogus{",
      Seq("'timestampFormat'", "datetime pattern")),
    (
      "file",
      "timestampNTZFormat",
      "uuuu-MM-dd ppppp{",
      Seq("'timestampNTZFormat'", "datetime pattern")),
    ("file", "timeZone", "Mars/Olympus_Mons", Seq("'timeZone'", "zone ID")),
    ("file", "modifiedBefore", "yesterday", Seq("modifiedBefore", "yesterday")),
    ("file", "modifiedAfter", "2024-13-45", Seq("modifiedAfter", "2024-13-45")),
    ("kafka", "timeZone", "Mars/Olympus_Mons", Seq("'timeZone'", "zone ID")),
    (
      "hybrid",
      "factory",
      "no-such-factory",
      Seq("'hybrid.1.factory'", "no-such-factory", "registered")))

  /** Extra options a domain case needs beside its group's base. */
  private def domainBase(group: String, name: String): Map[String, String] =
    if (group == "hybrid" && name == "factory")
      hybrid - "hybrid.1.source" -- hybrid.keys.filter(_.startsWith("hybrid.1.")) +
        ("hybrid.1.boundedness" -> "unbounded")
    else baseFor(group, name)

  /** Options that take any string by design, and why. */
  private val AnyString: Map[String, String] = Map(
    "name" -> "a label in progress",
    "locale" -> "Spark takes any language tag (unknown tags fall back to the root locale)",
    "nullValue" -> "any text may stand for null",
    "emptyValue" -> "any text may stand for the empty string",
    "nanValue" -> "any text may stand for NaN",
    "positiveInf" -> "any text may stand for +Inf",
    "negativeInf" -> "any text may stand for -Inf",
    "boundedness" -> "checked by its declaration",
    "pathGlobFilter" -> "any glob, as in Spark: one that matches no file reads nothing",
    "kafka.bootstrap.servers" -> "host names resolve when the query runs, as in Spark")

  test(
    "every declared option refuses every value its declaration refuses, naming the option and what is allowed") {
    val problems = mutable.ArrayBuffer[String]()
    var cases = 0
    declared.foreach { case (group, o) =>
      val key = keyOf(group, o.name)
      Probes.filter(refuses(o, _)).foreach { value =>
        cases += 1
        val shown = if (o.secret) ConfigOption.Mask else value
        problem(baseFor(group, o.name) + (key -> value), Seq(s"'$key'", o.allowed, s"'$shown'"))
          .foreach(p => problems += s"$group $key='$value': $p")
      }
    }
    report(problems.toSeq)
    assert(cases > 200, s"only $cases cases: the probes no longer reach the declarations")
  }

  test("options that take any string still refuse names and patterns that cannot work") {
    val problems = DomainCases.flatMap { case (group, name, value, expected) =>
      problem(domainBase(group, name) + (keyOf(group, name) -> value), expected).map(p =>
        s"$group $name='$value': $p")
    }
    report(problems)
  }

  test(
    "every declared option is covered by the probes, a named case, or a stated reason to take any string") {
    val domain = DomainCases.map(_._2).toSet
    val uncovered = declared.collect {
      case (group, o)
          if !Probes.exists(refuses(o, _)) && !domain(o.name) && !AnyString.contains(o.name) =>
        s"$group ${o.name}"
    }
    assert(uncovered.isEmpty, s"options with no bad value tried: ${uncovered.mkString(", ")}")
  }

  test("unknown names are refused in every group, with the known names listed") {
    val cases = Seq(
      generator + ("recordPerSplit" -> "1") -> Seq(
        "unknown option 'recordPerSplit'",
        "recordsPerSplit"),
      kafka + ("startingOffset" -> "earliest") -> Seq(
        "unknown option 'startingOffset'",
        "startingOffsets"),
      file + ("maxSplitByte" -> "10") -> Seq("unknown option 'maxSplitByte'", "maxSplitBytes"),
      hybrid + ("hybrid.1.subscrbe" -> "t") -> Seq("'subscrbe'", "subscribe"),
      hybrid + ("hybrid.2.source" -> "kafka") -> Seq(
        "'hybrid.2.source'",
        "'hybrid.sources' is 2"),
      hybrid + ("hybrid.x.source" -> "kafka") -> Seq("'hybrid.x.source'"),
      generator + ("watermark.kinds" -> "none") -> Seq("'watermark.kinds'", "watermark.kind"),
      generator - "source" -> Seq("missing required option 'source'"),
      generator + ("source" -> "kafak") -> Seq("'kafak'", "option 'source'", "kafka"))
    report(cases.flatMap { case (options, expected) =>
      problem(options, expected).map(p => s"$options: $p")
    })
  }

  test("conflicting pairs are refused with both names and the way out") {
    val cases: Seq[(Map[String, String], Seq[String])] = Seq(
      kafka + ("subscribePattern" -> "t.*") -> Seq(
        "'subscribe'",
        "'subscribePattern'",
        "exclude each other"),
      kafka - "subscribe" -> Seq("'subscribe'", "'subscribePattern'"),
      kafka + ("endingOffsets" -> """{"other": {"0": 5}}""") -> Seq(
        "'endingOffsets'",
        "other",
        "not subscribed"),
      kafka + ("schema" -> "a INT") -> Seq("'schema'", "format"),
      kafka ++ Map("kafka.group.id" -> "g", "groupIdPrefix" -> "p") -> Seq(
        "'kafka.group.id'",
        "'groupIdPrefix'"),
      kafka ++ Map("assign" -> """{"t":[0]}""", "subscribePattern" -> "t.*") -> Seq(
        "'subscribePattern'",
        "'assign'"),
      generator ++ Map("maxRecordsPerTrigger" -> "5", "maxOffsetsPerTrigger" -> "6") -> Seq(
        "one setting under two names"),
      generator ++ Map("minOffsetsPerTrigger" -> "20", "maxOffsetsPerTrigger" -> "15") ->
        Seq("minimum records per trigger (20) is higher than the maximum (15)"),
      kafka ++ Map("format" -> "json", "schema" -> "a INT", "includeHeaders" -> "true") -> Seq(
        "'includeHeaders'",
        "raw"),
      kafka ++ Map("format" -> "csv", "schema" -> "a INT", "header" -> "true") -> Seq("'header'"),
      kafka + ("format" -> "json") -> Seq("'schema'", "json"),
      kafka ++ Map("includeHeaders" -> "true", "forceTimestampSupport" -> "false") -> Seq(
        "includeHeaders",
        "forceTimestampSupport"),
      file + ("format" -> "text") -> Seq("'schema'", "value STRING"),
      file + ("sep" -> ";") -> Seq("'sep'", "csv"),
      file ++ Map("timestampColumn" -> "ts", "schema" -> "a INT") -> Seq("'timestampColumn'"),
      generator + ("watermark.kind" -> "boundedOutOfOrderness") -> Seq(
        "watermark.maxOutOfOrdernessMs"),
      generator + ("watermark.maxOutOfOrdernessMs" -> "5") -> Seq(
        "watermark.maxOutOfOrdernessMs",
        "watermark.kind"),
      generator + ("watermark.alignment.maxDriftMs" -> "5") -> Seq("watermark.alignment.group"),
      generator + ("watermark.alignment.group" -> "g") -> Seq("watermark.alignment.maxDriftMs"),
      generator ++ Map("watermark.kind" -> "monotonous", "forceTimestampSupport" -> "false") ->
        Seq("forceTimestampSupport", "watermark"),
      generator - "recordsPerSplit" -> Seq("'rowsPerSecond'", "'recordsPerSplit'"),
      generator + ("splitSkewMs" -> "2:5") -> Seq("'splitSkewMs'", "split 2 does not exist"),
      hybrid + ("hybrid.0.monitorIntervalMs" -> "10") -> Seq("source 0", "bounded"),
      hybrid + ("hybrid.0.startAtPreviousEndMinusMs" -> "10") -> Seq(
        "'hybrid.0.startAtPreviousEndMinusMs'",
        "previous"),
      hybrid + ("hybrid.0.factory" -> "f") -> Seq("first source", "'hybrid.0.factory'"),
      hybrid + ("hybrid.1.boundedness" -> "bounded") -> Seq(
        "'hybrid.1.boundedness'",
        "'hybrid.1.factory'"),
      hybrid + ("hybrid.1.factory" -> "f") -> Seq("'hybrid.1.factory'", "no other options"),
      hybrid -- hybrid.keys.filter(_.startsWith("hybrid.1.")) + ("hybrid.1.factory" -> "f") ->
        Seq("missing required option 'hybrid.1.boundedness'"),
      hybrid + ("hybrid.1.startingOffsets" -> "earliest!") -> Seq(
        "source 1",
        "'hybrid.1.*'",
        "'startingOffsets'"))
    report(cases.flatMap { case (options, expected) =>
      problem(options, expected).map(p => s"$options: $p")
    })
  }

  private def kafkaSource(options: Map[String, String]) =
    sluice.connector.kafka.KafkaSource.fromOptions(options - "source")

  test("start positions for topics not read fail a fresh start, and are ignored by a restart") {
    val cases = Seq(
      kafka + ("startingOffsets" -> """{"other": {"0": 5}}""") -> Seq(
        "'startingOffsets'",
        "'other'",
        "subscribe: t"),
      kafka + ("startingOffsetsByTimestamp" -> """{"u": {"0": 5}}""") -> Seq(
        "'startingOffsetsByTimestamp'",
        "'u'"),
      kafka - "subscribe" ++ Map(
        "subscribePattern" -> "t.*",
        "startingOffsets" -> """{"other": {"0": 5}}""") ->
        Seq("'startingOffsets'", "'other'", "'t.*' does not match"))
    cases.foreach { case (options, expected) =>
      val source = kafkaSource(options) // defining the query is fine: a restart defines it again
      val e = intercept[IllegalArgumentException](source.createEnumerator())
      expected.foreach(x => assert(e.getMessage.contains(x), e.getMessage))
      // a restart takes its positions from the checkpoint: a subscription narrowed since is no error
      source
        .restoreEnumerator(
          sluice.connector.kafka.KafkaEnumeratorState(Set.empty, initialDiscoveryDone = true))
        .close()
    }
  }

  test("valid values stay valid: a control for every kind of check above") {
    val registered = sluice.hybrid.SourceFactories
      .register(sluice.hybrid.SourceFactory(_ =>
        kafkaSource(kafka ++ Map("format" -> "json", "schema" -> file("schema")))))
      .id
    val accepted = Seq(
      kafka ++ Map(
        "kafka.isolation.level" -> " read_committed ",
        "kafka.security.protocol" -> "sasl_ssl",
        "kafka.max.poll.records" -> "10",
        "kafka.some.plugin.setting" -> "anything"),
      kafka ++ Map(
        "format" -> "json",
        "schema" -> "a INT, b STRING",
        "dateFormat" -> "dd.MM.YYYY",
        "timestampFormat" -> "not a pattern {"
      ), // no DATE or TIMESTAMP column: Spark never builds them
      file ++ Map(
        "dateFormat" -> "dd.MM.yyyy",
        "timestampFormat" -> "yyyy-MM-dd HH:mm",
        "timeZone" -> "+01:00"),
      file + ("timeZone" -> "America/Los_Angeles"),
      generator ++ Map(
        "watermark.kind" -> "monotonous",
        "watermark.alignment.group" -> " g ",
        "watermark.alignment.maxDriftMs" -> "0",
        "watermark.alignment.updateIntervalMs" -> "5"),
      generator ++ Map("watermark.kind" -> "monotonous", "watermark.eventTimeColumn" -> " et "),
      hybrid - "hybrid.1.source" -- hybrid.keys.filter(_.startsWith("hybrid.1.")) ++
        Map("hybrid.1.factory" -> s" $registered ", "hybrid.1.boundedness" -> "Bounded"),
      hybrid + ("hybrid.1.startAtPreviousEndMinusMs" -> "0"),
      generator + ("maxTriggerDelay" -> "5s")
    ) // Spark takes it alone, and so does Sluice
    accepted.foreach(options => StreamOptions.parse(options))
    kafkaSource(
      kafka - "subscribe" ++ Map(
        "subscribePattern" -> "t.*",
        "startingOffsets" -> """{"t1": {"0": 5}}"""))
      .createEnumerator()
      .close()
  }

  test("Spark's own entry points surface the same message, unwrapped") {
    val options = kafka + ("partitionDiscoveryIntervalMs" -> "-5")
    val direct = intercept[IllegalArgumentException](StreamOptions.parse(options)).getMessage
    val streaming = intercept[IllegalArgumentException](
      spark.readStream.format("sluice").options(options).load())
    assert(streaming.getMessage == direct)
    val batch = intercept[IllegalArgumentException](
      spark.read.format("sluice").options(generator + ("splits" -> "0")).load())
    assert(
      batch.getMessage.contains(
        "invalid value '0' for option 'splits'; allowed: an integer from 1 to 100000"),
      batch.getMessage)
  }

  /** `e` as Spark sees it: its condition, SQLSTATE and message parameters. */
  private def classOf(e: Throwable): (String, String, Map[String, String]) = e match {
    case t: SparkThrowable =>
      (t.getCondition, t.getSqlState, t.getMessageParameters.asScala.toMap)
    case other => fail(s"not a SparkThrowable: ${other.getClass.getName}: ${other.getMessage}")
  }

  test(
    "a bad option reaches Spark as a SparkThrowable with its class, parameters and exact message") {
    val bad = generator + ("splits" -> "0")
    val message =
      "GeneratorSource: invalid value '0' for option 'splits'; allowed: an integer from 1 to 100000."
    val parameters = Map(
      "context" -> "GeneratorSource",
      "value" -> "0",
      "option" -> "splits",
      "allowed" -> "an integer from 1 to 100000")
    val streaming =
      intercept[IllegalArgumentException](spark.readStream.format("sluice").options(bad).load())
    assert(streaming.getMessage == message)
    assert(classOf(streaming) == (("SLUICE_INVALID_OPTION", "22023", parameters)))
    val batch =
      intercept[IllegalArgumentException](spark.read.format("sluice").options(bad).load())
    assert(batch.getMessage == message)
    assert(classOf(batch) == (("SLUICE_INVALID_OPTION", "22023", parameters)))

    val unknown = intercept[IllegalArgumentException](
      spark.readStream.format("sluice").options(generator + ("recordPerSplit" -> "1")).load())
    assert(classOf(unknown)._1 == "SLUICE_UNKNOWN_OPTION")
    assert(unknown.getMessage.startsWith("GeneratorSource: unknown option 'recordPerSplit'. "))
    val conflicting = intercept[IllegalArgumentException](
      spark.readStream.format("sluice").options(kafka + ("subscribePattern" -> "t.*")).load())
    assert(classOf(conflicting)._1 == "SLUICE_CONFLICTING_OPTIONS")
    assert(classOf(conflicting)._3("given") == "'subscribe' and 'subscribePattern'")
    val missing = intercept[IllegalArgumentException](
      spark.readStream.format("sluice").options(generator - "source").load())
    assert(classOf(missing)._1 == "SLUICE_MISSING_OPTION")
    // a hybrid names which of its sources is wrong and keeps the member's class
    val member = intercept[IllegalArgumentException](
      spark.readStream
        .format("sluice")
        .options(hybrid + ("hybrid.1.startingOffsets" -> "earliest!"))
        .load())
    assert(classOf(member)._1 == "SLUICE_INVALID_OPTION", member.getMessage)
    assert(member.getMessage.startsWith("HybridSource source 1 (options 'hybrid.1.*'): "))
  }
}

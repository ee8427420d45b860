package sluice.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import com.fasterxml.jackson.core.json.JsonWriteFeature
import com.fasterxml.jackson.databind.json.JsonMapper

import sluice.{Sluice, Sources}
import sluice.config.{AllowedValues, ConfigOption, OptionRule}
import sluice.connector.file.{FileConfig, FileSource}
import sluice.connector.file.parquet.ParquetConfig
import sluice.connector.generator.{GeneratorConfig, GeneratorSource}
import sluice.connector.kafka.{KafkaConfig, KafkaSource}
import sluice.connector.table.delta.DeltaConfig
import sluice.connector.table.iceberg.IcebergConfig
import sluice.hybrid.{HybridOptions, HybridSource}

/**
 * Every option declaration as JSON, for the Python package: its builders take option names, the
 * secret flag, the allowed values (as data) and the rules that combine options from
 * python/sluice/_options.json, generated from this by `make docs`, because under Spark Connect
 * the client has no JVM to ask. OptionDeclarationsSuite (and a pytest)
 * fail when the committed file is stale.
 */
object OptionDeclarations {

  /** Groups by the key Python looks them up with: the binding's read options, then each source type. */
  def groups: Seq[(String, Seq[ConfigOption[_]])] = Seq(
    "read" -> StreamOptions.all,
    GeneratorSource.Type -> GeneratorConfig.all,
    KafkaSource.Type -> (KafkaConfig.documented ++ KafkaConfig.all).distinct,
    FileSource.Type -> (FileConfig.all ++ ParquetConfig.own),
    IcebergConfig.Type -> IcebergConfig.all,
    DeltaConfig.Type -> DeltaConfig.all,
    HybridSource.Type -> HybridOptions.all)

  /** The rules that combine options, by the group they belong to. */
  def rules: Seq[(String, Seq[OptionRule])] = Seq(KafkaSource.Type -> KafkaConfig.rules)

  // ASCII only, so the file reads the same whatever encoding sbt's stdout or the JVM default uses.
  private val mapper = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build()
  private def str(s: String): String = mapper.writeValueAsString(s)

  /** One option a line, in declaration order, so a regenerated file diffs option by option. */
  def json: String = {
    val types = Sources.types.map(str).mkString("[", ", ", "]")
    val body = groups.map { case (group, options) =>
      val names = options.map(_.name.toLowerCase)
      require(
        names.distinct.size == names.size,
        s"group $group declares an option twice: ${names.diff(names.distinct)}")
      options.map(option).mkString(s"    ${str(group)}: [\n      ", ",\n      ", "\n    ]")
    }
    Seq(
      "{",
      s"""  "format": ${str(Sluice.Format)},""",
      s"""  "typeOption": ${str(Sources.TypeOption)},""",
      s"""  "types": $types,""",
      s"""  "mask": ${str(ConfigOption.Mask)},""",
      """  "groups": {""",
      body.mkString(",\n"),
      "  },",
      """  "rules": {""",
      rules
        .map { case (group, rs) =>
          rs.map(rule).mkString(s"    ${str(group)}: [\n      ", ",\n      ", "\n    ]")
        }
        .mkString(",\n"),
      "  }",
      "}").mkString("", "\n", "\n")
  }

  private def names(options: Seq[ConfigOption[_]]): String =
    options.map(o => str(o.name)).mkString("[", ", ", "]")

  private def rule(r: OptionRule): String = {
    val kind = r match {
      case e: OptionRule.ExactlyOne => s""""kind": "exactlyOne", "missing": ${str(e.missing)}"""
      case f: OptionRule.FirstOf =>
        s""""kind": "firstOf", "qualifiers": ${names(f.qualifiers)}"""
    }
    s"""{"name": ${str(r.name)}, $kind, "options": ${names(r.options)}, "text": ${str(r.text)}}"""
  }

  /** Only what differs from "no constraint of this kind", so a line stays short. */
  private def values(v: AllowedValues): String = (v.min.map(m => s""""min": $m""") ++
    v.max.map(m => s""""max": $m""") ++
    Option.when(v.words.nonEmpty)(s""""words": ${v.words.map(str).mkString("[", ", ", "]")}""") ++
    Option.when(v.ignoreCase)(""""ignoreCase": true""") ++
    Option.when(v.nonBlank)(""""nonBlank": true""")).mkString("{", ", ", "}")

  private def option(o: ConfigOption[_]): String =
    s"""{"name": ${str(o.name)}, "description": ${str(o.doc)}, """ +
      s""""default": ${o.default.map(d => str(d.toString)).getOrElse("null")}, "allowed": ${str(
          o.allowed)}, """ +
      s""""values": ${o.values.map(values).getOrElse("null")}, "secret": ${o.secret}}"""

  /** `make docs`: writes the file named by the first argument (stdout without one). */
  def main(args: Array[String]): Unit = args.headOption match {
    case Some(path) => Files.write(Paths.get(path), json.getBytes(StandardCharsets.UTF_8))
    case None => print(json)
  }
}

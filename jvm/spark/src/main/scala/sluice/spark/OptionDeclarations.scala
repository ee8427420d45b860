package sluice.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import com.fasterxml.jackson.core.json.JsonWriteFeature
import com.fasterxml.jackson.databind.json.JsonMapper

import sluice.{Sluice, Sources}
import sluice.config.ConfigOption
import sluice.connector.file.{FileConfig, FileSource}
import sluice.connector.file.parquet.ParquetConfig
import sluice.connector.generator.{GeneratorConfig, GeneratorSource}
import sluice.connector.kafka.{KafkaConfig, KafkaSource}
import sluice.hybrid.{HybridOptions, HybridSource}

/**
 * Every option declaration as JSON, for the Python package: its builders take option names and
 * the secret flag from python/sluice/_options.json, generated from this by `make docs`, because
 * under Spark Connect the client has no JVM to ask. OptionDeclarationsSuite (and a pytest)
 * fail when the committed file is stale.
 */
object OptionDeclarations {

  /** Groups by the key Python looks them up with: the binding's read options, then each source type. */
  def groups: Seq[(String, Seq[ConfigOption[_]])] = Seq(
    "read" -> StreamOptions.all,
    GeneratorSource.Type -> GeneratorConfig.all,
    KafkaSource.Type -> (KafkaConfig.documented ++ KafkaConfig.all).distinct,
    FileSource.Type -> (FileConfig.all ++ ParquetConfig.own),
    HybridSource.Type -> HybridOptions.all)

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
      "  }",
      "}").mkString("", "\n", "\n")
  }

  private def option(o: ConfigOption[_]): String =
    s"""{"name": ${str(o.name)}, "description": ${str(o.doc)}, """ +
      s""""default": ${o.default.map(d => str(d.toString)).getOrElse("null")}, "allowed": ${str(
          o.allowed)}, """ +
      s""""secret": ${o.secret}}"""

  /** `make docs`: writes the file named by the first argument (stdout without one). */
  def main(args: Array[String]): Unit = args.headOption match {
    case Some(path) => Files.write(Paths.get(path), json.getBytes(StandardCharsets.UTF_8))
    case None => print(json)
  }
}

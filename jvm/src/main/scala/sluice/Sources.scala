package sluice

import sluice.api.{Source, SourceSplit}
import sluice.connector.generator.GeneratorSource

/**
 * Rebuilds a source from its options: the one way a source crosses from a builder (Scala or
 * Python) to Spark's DataSource API and back from a checkpointed query's options.
 */
object Sources {
  /** The option naming the source type. */
  val TypeOption = "source"

  private val factories: Map[String, Map[String, String] => Source[_ <: SourceSplit, _]] = Map(
    GeneratorSource.Type -> (GeneratorSource.fromOptions _))

  def types: Seq[String] = factories.keys.toSeq.sorted

  def fromOptions(options: Map[String, String]): Source[_ <: SourceSplit, _] = {
    val (typeEntries, rest) = options.partition(_._1.equalsIgnoreCase(TypeOption))
    val sourceType = typeEntries.values.headOption.map(_.trim.toLowerCase).getOrElse(
      throw new IllegalArgumentException(
        s"Sluice: missing required option '$TypeOption'; allowed: ${types.mkString(", ")}."))
    val factory = factories.getOrElse(sourceType,
      throw new IllegalArgumentException(
        s"Sluice: invalid value '$sourceType' for option '$TypeOption'; allowed: ${types.mkString(", ")}."))
    factory(rest)
  }

  /** Java-friendly entry for py4j: validates the options by building the source. */
  def fromJavaOptions(options: java.util.Map[String, String]): Source[_ <: SourceSplit, _] = {
    import scala.jdk.CollectionConverters._
    fromOptions(options.asScala.toMap)
  }
}

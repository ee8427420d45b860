package sluice.connector.generator

import sluice.api.{SourceSplit, VersionedSerializer}

/** One deterministic stream of records: record `i` of split `index` is fully defined by (index, i). */
final case class GeneratorSplit(index: Int, stopPosition: Option[Long]) extends SourceSplit {
  override def splitId: String = index.toString
  override def startPosition: Long = 0L
}

private[generator] object GeneratorSplitSerializer extends VersionedSerializer[GeneratorSplit] {
  override val version: Int = 1
  override def serialize(split: GeneratorSplit): String =
    s"${split.index}:${split.stopPosition.map(_.toString).getOrElse("")}"
  override def deserialize(version: Int, text: String): GeneratorSplit = {
    if (version > this.version) throw VersionedSerializer.unsupported("a generator split", version, this.version)
    val Array(index, stop) = text.split(":", -1)
    GeneratorSplit(index.toInt, if (stop.isEmpty) None else Some(stop.toLong))
  }
}

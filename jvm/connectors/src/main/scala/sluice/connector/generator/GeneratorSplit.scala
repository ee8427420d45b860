package sluice.connector.generator

import sluice.api.{SourceSplit, VersionedSerializer}

/**
 * One deterministic stream of records: record `i` of split `index` is fully defined by (index, i).
 * A rate-limited generator's split carries when generation started (`generatingSinceMs`), so a
 * reader given an open range (real-time mode) hands out only what the rate has made available.
 */
final case class GeneratorSplit(
    index: Int,
    stopPosition: Option[Long],
    generatingSinceMs: Option[Long] = None)
    extends SourceSplit {
  override val splitId: String = index.toString
  override def startPosition: Long = 0L
}

/** Version 1 had no `generatingSinceMs`; it reads as None. */
private[generator] object GeneratorSplitSerializer extends VersionedSerializer[GeneratorSplit] {
  override val version: Int = 2
  override def serialize(split: GeneratorSplit): String =
    s"${split.index}:${split.stopPosition.map(_.toString).getOrElse("")}:${split.generatingSinceMs.map(_.toString).getOrElse("")}"
  override def deserialize(version: Int, text: String): GeneratorSplit = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("a generator split", version, this.version)
    def long(s: String) = if (s.isEmpty) None else Some(s.toLong)
    text.split(":", -1) match {
      case Array(index, stop) => GeneratorSplit(index.toInt, long(stop))
      case Array(index, stop, since) => GeneratorSplit(index.toInt, long(stop), long(since))
      case _ =>
        throw new IllegalStateException(
          s"GeneratorSource: '$text' is not a generator split (version $version)")
    }
  }
}

package sluice.hybrid

import sluice.api.{SourceSplit, VersionedSerializer}

/**
 * A split of the hybrid's `sourceIndex`-th source (its member), wrapping that member's split. The
 * member itself travels once, inside the hybrid the reader factory carries.
 */
final case class HybridSplit(sourceIndex: Int, child: SourceSplit) extends SourceSplit {
  override def splitId: String = HybridSplit.id(sourceIndex, child.splitId)
  override def startPosition: Long = child.startPosition
  override def stopPosition: Option[Long] = child.stopPosition
  override def positionsCountRecords: Boolean = child.positionsCountRecords
  override def divisible: Boolean = child.divisible
}

object HybridSplit {

  /**
   * A split's id is its member's index, this, and the member's split id (`1:events-0`). Query
   * progress shows these ids; python/sluice/_metrics.json carries the separator to `sluice.status`.
   */
  val IdSeparator = ":"

  def id(sourceIndex: Int, childId: String): String = s"$sourceIndex$IdSeparator$childId"
  def parseId(id: String): (Int, String) = {
    val Array(index, child) = id.split(java.util.regex.Pattern.quote(IdSeparator), 2)
    (index.toInt, child)
  }
}

/**
 * `index;childVersion;childText`. The child's serializer is its source's; the source at `index`
 * is resolved by the hybrid, which has rebuilt it from the recorded switches before any split of
 * a later source is read back.
 */
private[hybrid] final class HybridSplitSerializer(hybrid: HybridSource)
    extends VersionedSerializer[HybridSplit] {
  override val version: Int = 1
  override def serialize(split: HybridSplit): String = {
    val child = hybrid.resolvedSourceAt(split.sourceIndex).splitSerializer
    s"${split.sourceIndex};${child.version};${child.serialize(split.child)}"
  }
  override def deserialize(version: Int, text: String): HybridSplit = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("a hybrid split", version, this.version)
    val Array(index, childVersion, childText) = text.split(";", 3)
    val source = hybrid.resolvedSourceAt(index.toInt)
    HybridSplit(index.toInt, source.splitSerializer.deserialize(childVersion.toInt, childText))
  }
}

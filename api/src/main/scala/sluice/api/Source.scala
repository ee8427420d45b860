package sluice.api

import org.apache.spark.sql.types.StructType

/**
 * A source in FLIP-27's sense: a factory for the driver-side enumerator and the executor-side
 * readers, plus the serializers that put splits and enumerator state into the offset log.
 *
 * A source is a value: it is fully described by `options`, from which `Sources.fromOptions`
 * rebuilds it. That is what lets the same source be given from Scala, from Python over py4j,
 * or as `spark.readStream.format("sluice").options(...)` (e.g. under Spark Connect).
 */
trait Source[SplitT <: SourceSplit, StateT] extends Serializable {

  /** The short type name (`generator`, `kafka`, `file`, ...), stored in offsets. */
  def sourceType: String

  def boundedness: Boundedness

  /** The rows this source emits. */
  def schema: StructType

  /** The options that rebuild this source, including `source` = `sourceType`. */
  def options: Map[String, String]

  def createEnumerator(): SplitEnumerator[SplitT, StateT]
  def restoreEnumerator(state: StateT): SplitEnumerator[SplitT, StateT]
  def createReader(): SplitReader[SplitT]

  def splitSerializer: VersionedSerializer[SplitT]
  def enumeratorStateSerializer: VersionedSerializer[StateT]
}

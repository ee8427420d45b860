package sluice.api

import org.apache.spark.sql.types.StructType

import sluice.config.RecordLayout
import sluice.errors.SluiceError

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

  /** The rows this source emits in the full layout. */
  def schema: StructType

  /**
   * The rows this source emits in `layout`. A source that cannot build compact rows, or whose
   * options contradict them (e.g. an event-time column), refuses with a message naming the fix.
   */
  def schema(layout: RecordLayout): StructType = layout match {
    case RecordLayout.Full => schema
    case RecordLayout.Compact =>
      throw SluiceError.config(
        s"The $sourceType source has no compact rows; set forceTimestampSupport=true.")
  }

  /** The options that rebuild this source, including `source` = `sourceType`. */
  def options: Map[String, String]

  def createEnumerator(): SplitEnumerator[SplitT, StateT]
  def restoreEnumerator(state: StateT): SplitEnumerator[SplitT, StateT]

  /** A reader for executors; `context` carries what the binding decided (layout, clock). */
  def createReader(context: ReaderContext): SplitReader[SplitT]

  def splitSerializer: VersionedSerializer[SplitT]
  def enumeratorStateSerializer: VersionedSerializer[StateT]
}

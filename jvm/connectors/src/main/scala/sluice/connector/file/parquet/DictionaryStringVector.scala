package sluice.connector.file.parquet

import org.apache.spark.sql.execution.vectorized.WritableColumnVector
import org.apache.spark.sql.types.{ArrayType, DataType, MapType, StringType, StructType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * A read-only view of one of Spark's Parquet vectors holding strings (a string column, or a
 * struct, array or map with strings inside) that decodes each dictionary entry at most once per
 * batch.
 *
 * Spark's vector decodes a dictionary-encoded string anew for every row that reads it: a chain
 * of calls down to parquet's dictionary entry (whose bytes parquet caches) and a new
 * `UTF8String` around them, even when the batch's 4096 rows hold a few dozen distinct values.
 * The view keeps the decoded string of each entry read in the current batch and hands the same
 * object out again. It wraps the same bytes Spark's would, which Spark's vector already shares
 * across rows; neither the string nor its bytes are ever written, so rows may share it too.
 *
 * Within a batch an id names one string: Spark's reader never lets a batch cross a row group
 * (one column chunk, one dictionary), and when a chunk falls back to plain pages mid-batch it
 * decodes the ids read so far and drops the dictionary, so the view passes plain strings through.
 * What was decoded is forgotten at `nextBatch` all the same, so that nothing rests on the reader
 * reading one row group. Entries at or past `MaxCachedId` are decoded per row, as Spark does:
 * a huge dictionary would cost more memory than it saves. What is kept (at most `MaxCachedId`
 * strings per string column) lives as long as the view, one range's read.
 *
 * Arrays and maps hand out `ColumnarArray`s / `ColumnarMap`s over the viewed element vectors;
 * struct fields are read through `getChild`, so they are viewed alike (`VectorView`: the
 * vectors below belong to Spark's reader).
 */
private[parquet] final class DictionaryStringVector private (below: WritableColumnVector)
    extends VectorView(below) {

  import DictionaryStringVector._

  private val isString = below.dataType().isInstanceOf[StringType]
  private val children: Array[ColumnVector] = below.dataType() match {
    case s: StructType => Array.tabulate(s.length)(i => view(below.getChild(i)))
    case _: ArrayType => Array(view(below.getChild(0)))
    case _: MapType => Array(view(below.getChild(0)), view(below.getChild(1)))
    case _ => Array.empty
  }
  private val viewedChildren: Array[DictionaryStringVector] = children.collect {
    case v: DictionaryStringVector => v
  }

  // the entries decoded in this batch: decoded(id) is current when stamps(id) == batch
  private var decoded: Array[UTF8String] = Array.empty
  private var stamps: Array[Int] = Array.empty
  private var batch = 0

  /** Forgets what was decoded: the vectors below now hold the next batch. */
  def nextBatch(): Unit = {
    if (batch == Int.MaxValue) {
      java.util.Arrays.fill(stamps, -1)
      batch = 0
    } else batch += 1
    viewedChildren.foreach(_.nextBatch())
  }

  override def getUTF8String(rowId: Int): UTF8String =
    if (!isString || !below.hasDictionary || below.isNullAt(rowId)) below.getUTF8String(rowId)
    else {
      val id = below.getDictionaryIds.getDictId(rowId)
      if (id >= MaxCachedId) below.getUTF8String(rowId)
      else {
        if (id >= stamps.length) grow(id)
        if (stamps(id) == batch) decoded(id)
        else {
          val s = below.getUTF8String(rowId)
          decoded(id) = s
          stamps(id) = batch
          s
        }
      }
    }

  private def grow(id: Int): Unit = {
    val size = math.min(MaxCachedId, math.max(id + 1, math.max(64, stamps.length * 2)))
    val from = stamps.length
    decoded = java.util.Arrays.copyOf(decoded, size)
    stamps = java.util.Arrays.copyOf(stamps, size)
    java.util.Arrays.fill(stamps, from, size, -1)
  }

  override def getArray(rowId: Int): ColumnarArray =
    if (below.isNullAt(rowId)) null
    else new ColumnarArray(children(0), below.getArrayOffset(rowId), below.getArrayLength(rowId))

  override def getMap(rowId: Int): ColumnarMap =
    if (below.isNullAt(rowId)) null
    else
      new ColumnarMap(
        children(0),
        children(1),
        below.getArrayOffset(rowId),
        below.getArrayLength(rowId))

  override def getChild(ordinal: Int): ColumnVector =
    if (children.isEmpty) below.getChild(ordinal) else children(ordinal)
}

private[parquet] object DictionaryStringVector {

  /** Dictionary ids from here on are decoded per row, as Spark's vector does. */
  val MaxCachedId: Int = 1 << 14

  /** `vector` viewed when it is one of Spark's writable vectors with strings in it; else itself. */
  def view(vector: ColumnVector): ColumnVector = vector match {
    case w: WritableColumnVector if holdsStrings(w.dataType()) => new DictionaryStringVector(w)
    case other => other
  }

  private def holdsStrings(t: DataType): Boolean = t match {
    case _: StringType => true
    case s: StructType => s.fields.exists(f => holdsStrings(f.dataType))
    case a: ArrayType => holdsStrings(a.elementType)
    case m: MapType => holdsStrings(m.keyType) || holdsStrings(m.valueType)
    case _ => false
  }
}

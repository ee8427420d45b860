package sluice.connector.file.parquet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.types.{DataType, Decimal}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String, VariantVal}

/**
 * A read-only view of the Parquet reader's row, reused for every row (`of`), as Spark's reader
 * reuses its row: valid until the reader is next asked whether it has more (which may reload or
 * free its column vectors), and `copy()` is the way to keep one. A view lets the readers hand out
 * Spark's own row changed (`RowWithoutColumn`, `RowWithConstants`) instead of copying every row
 * once more: Spark's scan copies it into an unsafe row anyway (the projection over every data
 * source v2 scan). Column `i` of the view is column `at(i)` of `source(i)`.
 *
 * @param types the view's column types, for `copy()`
 */
abstract class RowView(types: Array[DataType]) extends InternalRow {
  protected var row: InternalRow = _

  /** The row column `ordinal` of the view is read from: the reader's (`row`) or another. */
  protected def source(ordinal: Int): InternalRow

  /** The column of `source(ordinal)` that column `ordinal` of the view is. */
  protected def at(ordinal: Int): Int

  /** This view over the reader's row `underlying`. */
  def of(underlying: InternalRow): this.type = {
    row = underlying
    this
  }

  override def numFields: Int = types.length
  override def isNullAt(ordinal: Int): Boolean = source(ordinal).isNullAt(at(ordinal))
  override def getBoolean(ordinal: Int): Boolean = source(ordinal).getBoolean(at(ordinal))
  override def getByte(ordinal: Int): Byte = source(ordinal).getByte(at(ordinal))
  override def getShort(ordinal: Int): Short = source(ordinal).getShort(at(ordinal))
  override def getInt(ordinal: Int): Int = source(ordinal).getInt(at(ordinal))
  override def getLong(ordinal: Int): Long = source(ordinal).getLong(at(ordinal))
  override def getFloat(ordinal: Int): Float = source(ordinal).getFloat(at(ordinal))
  override def getDouble(ordinal: Int): Double = source(ordinal).getDouble(at(ordinal))
  override def getDecimal(ordinal: Int, precision: Int, scale: Int): Decimal =
    source(ordinal).getDecimal(at(ordinal), precision, scale)
  override def getUTF8String(ordinal: Int): UTF8String =
    source(ordinal).getUTF8String(at(ordinal))
  override def getBinary(ordinal: Int): Array[Byte] = source(ordinal).getBinary(at(ordinal))
  override def getBinaryView(ordinal: Int): BinaryView =
    source(ordinal).getBinaryView(at(ordinal))
  override def getInterval(ordinal: Int): CalendarInterval =
    source(ordinal).getInterval(at(ordinal))
  override def getTimestampNTZNanos(ordinal: Int): TimestampNanosVal =
    source(ordinal).getTimestampNTZNanos(at(ordinal))
  override def getTimestampLTZNanos(ordinal: Int): TimestampNanosVal =
    source(ordinal).getTimestampLTZNanos(at(ordinal))
  override def getVariant(ordinal: Int): VariantVal = source(ordinal).getVariant(at(ordinal))
  override def getStruct(ordinal: Int, numFields: Int): InternalRow =
    source(ordinal).getStruct(at(ordinal), numFields)
  override def getArray(ordinal: Int): ArrayData = source(ordinal).getArray(at(ordinal))
  override def getMap(ordinal: Int): MapData = source(ordinal).getMap(at(ordinal))
  override def get(ordinal: Int, dataType: DataType): AnyRef =
    source(ordinal).get(at(ordinal), dataType)

  /** A row of its own (values copied out of the reader's buffers), valid after the view moves on. */
  override def copy(): InternalRow = {
    val values = new Array[Any](types.length)
    var i = 0
    while (i < values.length) {
      values(i) = if (isNullAt(i)) null else InternalRow.copyValue(get(i, types(i)))
      i += 1
    }
    new GenericInternalRow(values)
  }

  override def setNullAt(i: Int): Unit = throw new UnsupportedOperationException(
    "a view of the reader's row is read-only")
  override def update(i: Int, value: Any): Unit = throw new UnsupportedOperationException(
    "a view of the reader's row is read-only")
}

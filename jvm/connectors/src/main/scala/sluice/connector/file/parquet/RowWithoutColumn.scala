package sluice.connector.file.parquet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayData, MapData}
import org.apache.spark.sql.types.{DataType, Decimal}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String, VariantVal}

/**
 * A read-only view of a row without its column `skipped`: column `i` of the view is column `i`
 * of the row below `skipped`, and column `i + 1` from there on. It lets the Parquet reader hand
 * out Spark's own row (the vectorized reader's row over its column vectors) without the row-index
 * column it asked for, instead of copying every row once more: Spark's scan copies it into an
 * unsafe row anyway (the projection over every data source v2 scan).
 *
 * One view is reused for every row (`of`), as Spark's reader reuses its row: a row is valid until
 * the reader is next asked whether it has more (which may reload or free its column vectors),
 * and `copy()` is the way to keep one.
 *
 * @param types the view's column types, for `copy()`
 */
final class RowWithoutColumn(skipped: Int, types: Array[DataType]) extends InternalRow {
  private var row: InternalRow = _

  /** This view over `underlying` (whose column `skipped` it hides). */
  def of(underlying: InternalRow): RowWithoutColumn = {
    row = underlying
    this
  }

  @inline private def at(ordinal: Int): Int = if (ordinal < skipped) ordinal else ordinal + 1

  override def numFields: Int = types.length
  override def isNullAt(ordinal: Int): Boolean = row.isNullAt(at(ordinal))
  override def getBoolean(ordinal: Int): Boolean = row.getBoolean(at(ordinal))
  override def getByte(ordinal: Int): Byte = row.getByte(at(ordinal))
  override def getShort(ordinal: Int): Short = row.getShort(at(ordinal))
  override def getInt(ordinal: Int): Int = row.getInt(at(ordinal))
  override def getLong(ordinal: Int): Long = row.getLong(at(ordinal))
  override def getFloat(ordinal: Int): Float = row.getFloat(at(ordinal))
  override def getDouble(ordinal: Int): Double = row.getDouble(at(ordinal))
  override def getDecimal(ordinal: Int, precision: Int, scale: Int): Decimal =
    row.getDecimal(at(ordinal), precision, scale)
  override def getUTF8String(ordinal: Int): UTF8String = row.getUTF8String(at(ordinal))
  override def getBinary(ordinal: Int): Array[Byte] = row.getBinary(at(ordinal))
  override def getBinaryView(ordinal: Int): BinaryView = row.getBinaryView(at(ordinal))
  override def getInterval(ordinal: Int): CalendarInterval = row.getInterval(at(ordinal))
  override def getTimestampNTZNanos(ordinal: Int): TimestampNanosVal =
    row.getTimestampNTZNanos(at(ordinal))
  override def getTimestampLTZNanos(ordinal: Int): TimestampNanosVal =
    row.getTimestampLTZNanos(at(ordinal))
  override def getVariant(ordinal: Int): VariantVal = row.getVariant(at(ordinal))
  override def getStruct(ordinal: Int, numFields: Int): InternalRow =
    row.getStruct(at(ordinal), numFields)
  override def getArray(ordinal: Int): ArrayData = row.getArray(at(ordinal))
  override def getMap(ordinal: Int): MapData = row.getMap(at(ordinal))
  override def get(ordinal: Int, dataType: DataType): AnyRef = row.get(at(ordinal), dataType)

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

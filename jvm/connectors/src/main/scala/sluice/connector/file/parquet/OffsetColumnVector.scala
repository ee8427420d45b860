package sluice.connector.file.parquet

import org.apache.spark.sql.types.{CalendarIntervalType, Decimal, StructType, VariantType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String}

/**
 * A read-only view of a column vector from row `offset` on: row `i` of the view is row
 * `i + offset` below (children too, so structs read through it). It lets a batch that starts
 * before a range (a restart inside a row group) be handed on from the range's first row without
 * copying it.
 *
 * The vector below belongs to Spark's Parquet reader: closing the view (Spark's `ColumnarToRow`
 * calls `closeIfFreeable` on each batch it is done with) must not free it.
 * `numNulls` is the count below, an upper bound of the view's.
 */
private[parquet] final class OffsetColumnVector(below: ColumnVector, offset: Int)
    extends ColumnVector(below.dataType()) {

  /**
   * Children read by row (`getStruct`, `getVariant` and `getInterval` read a struct's fields, a
   * variant's or an interval's parts through them) are shifted alike; an array's or a map's
   * children are indexed by element, not by row, and are never read through this view (`getArray`
   * and `getMap` are answered below, with absolute element offsets).
   */
  private val children: Array[ColumnVector] = below.dataType() match {
    case s: StructType =>
      Array.tabulate(s.length)(i => new OffsetColumnVector(below.getChild(i), offset))
    case CalendarIntervalType =>
      Array.tabulate(3)(i => new OffsetColumnVector(below.getChild(i), offset))
    case VariantType => Array.tabulate(2)(i => new OffsetColumnVector(below.getChild(i), offset))
    case _ => Array.empty
  }

  override def close(): Unit = ()
  override def closeIfFreeable(): Unit = ()
  override def hasNull: Boolean = below.hasNull
  override def numNulls: Int = below.numNulls
  override def isNullAt(rowId: Int): Boolean = below.isNullAt(rowId + offset)
  override def getBoolean(rowId: Int): Boolean = below.getBoolean(rowId + offset)
  override def getByte(rowId: Int): Byte = below.getByte(rowId + offset)
  override def getShort(rowId: Int): Short = below.getShort(rowId + offset)
  override def getInt(rowId: Int): Int = below.getInt(rowId + offset)
  override def getLong(rowId: Int): Long = below.getLong(rowId + offset)
  override def getFloat(rowId: Int): Float = below.getFloat(rowId + offset)
  override def getDouble(rowId: Int): Double = below.getDouble(rowId + offset)
  override def getArray(rowId: Int): ColumnarArray = below.getArray(rowId + offset)
  override def getMap(rowId: Int): ColumnarMap = below.getMap(rowId + offset)
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal =
    below.getDecimal(rowId + offset, precision, scale)
  override def getUTF8String(rowId: Int): UTF8String = below.getUTF8String(rowId + offset)
  override def getBinary(rowId: Int): Array[Byte] = below.getBinary(rowId + offset)
  override def getBinaryView(rowId: Int): BinaryView = below.getBinaryView(rowId + offset)
  override def getInterval(rowId: Int): CalendarInterval = below.getInterval(rowId + offset)
  override def getTimestampNTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampNTZNanos(rowId + offset)
  override def getTimestampLTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampLTZNanos(rowId + offset)

  override def getChild(ordinal: Int): ColumnVector =
    if (ordinal < children.length) children(ordinal)
    else
      throw new UnsupportedOperationException(
        s"a child of a ${below.dataType().simpleString} vector is indexed by element, not by row")
}

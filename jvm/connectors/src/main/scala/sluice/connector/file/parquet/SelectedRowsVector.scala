package sluice.connector.file.parquet

import org.apache.spark.sql.types.{CalendarIntervalType, Decimal, StructType, VariantType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String}

/**
 * A read-only view of some rows of a column vector: row `i` of the view is row `rows(i)` below
 * (children too, so structs read through it). It lets a batch with rows its table deleted
 * (`RowGroupSplit.deleted`) be handed on without them and without copying the others, as
 * `OffsetColumnVector` hands one on from a row.
 *
 * The vector below belongs to Spark's Parquet reader: closing the view must not free it.
 * `numNulls` is the count below, an upper bound of the view's.
 */
private[parquet] final class SelectedRowsVector(below: ColumnVector, rows: Array[Int])
    extends ColumnVector(below.dataType()) {

  /**
   * Children read by row (`getStruct`, `getVariant` and `getInterval` read a struct's fields, a
   * variant's or an interval's parts through them) are selected alike; an array's or a map's
   * children are indexed by element, not by row, and are never read through this view (`getArray`
   * and `getMap` are answered below, with absolute element offsets).
   */
  private val children: Array[ColumnVector] = below.dataType() match {
    case s: StructType =>
      Array.tabulate(s.length)(i => new SelectedRowsVector(below.getChild(i), rows))
    case CalendarIntervalType =>
      Array.tabulate(3)(i => new SelectedRowsVector(below.getChild(i), rows))
    case VariantType => Array.tabulate(2)(i => new SelectedRowsVector(below.getChild(i), rows))
    case _ => Array.empty
  }

  override def close(): Unit = ()
  override def closeIfFreeable(): Unit = ()
  override def hasNull: Boolean = below.hasNull
  override def numNulls: Int = below.numNulls
  override def isNullAt(rowId: Int): Boolean = below.isNullAt(rows(rowId))
  override def getBoolean(rowId: Int): Boolean = below.getBoolean(rows(rowId))
  override def getByte(rowId: Int): Byte = below.getByte(rows(rowId))
  override def getShort(rowId: Int): Short = below.getShort(rows(rowId))
  override def getInt(rowId: Int): Int = below.getInt(rows(rowId))
  override def getLong(rowId: Int): Long = below.getLong(rows(rowId))
  override def getFloat(rowId: Int): Float = below.getFloat(rows(rowId))
  override def getDouble(rowId: Int): Double = below.getDouble(rows(rowId))
  override def getArray(rowId: Int): ColumnarArray = below.getArray(rows(rowId))
  override def getMap(rowId: Int): ColumnarMap = below.getMap(rows(rowId))
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal =
    below.getDecimal(rows(rowId), precision, scale)
  override def getUTF8String(rowId: Int): UTF8String = below.getUTF8String(rows(rowId))
  override def getBinary(rowId: Int): Array[Byte] = below.getBinary(rows(rowId))
  override def getBinaryView(rowId: Int): BinaryView = below.getBinaryView(rows(rowId))
  override def getInterval(rowId: Int): CalendarInterval = below.getInterval(rows(rowId))
  override def getTimestampNTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampNTZNanos(rows(rowId))
  override def getTimestampLTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampLTZNanos(rows(rowId))

  override def getChild(ordinal: Int): ColumnVector =
    if (ordinal < children.length) children(ordinal)
    else
      throw new UnsupportedOperationException(
        s"a child of a ${below.dataType().simpleString} vector is indexed by element, not by row")
}

package sluice.connector.file.parquet

import org.apache.spark.sql.types.Decimal
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.{BinaryView, CalendarInterval, TimestampNanosVal, UTF8String}

/**
 * A read-only view of a column vector of Spark's Parquet reader, row for row: every value is
 * the one below unless a view overrides how it is read (`DictionaryStringVector`'s strings,
 * `StructWithConstantsVector`'s fields). The vector below belongs to Spark's reader: closing the
 * view (Spark's `ColumnarToRow` calls `closeIfFreeable` on each batch it is done with) must not
 * free it.
 */
private[parquet] abstract class VectorView(below: ColumnVector)
    extends ColumnVector(below.dataType()) {
  override def close(): Unit = ()
  override def closeIfFreeable(): Unit = ()
  override def hasNull: Boolean = below.hasNull
  override def numNulls: Int = below.numNulls
  override def isNullAt(rowId: Int): Boolean = below.isNullAt(rowId)
  override def getBoolean(rowId: Int): Boolean = below.getBoolean(rowId)
  override def getByte(rowId: Int): Byte = below.getByte(rowId)
  override def getShort(rowId: Int): Short = below.getShort(rowId)
  override def getInt(rowId: Int): Int = below.getInt(rowId)
  override def getLong(rowId: Int): Long = below.getLong(rowId)
  override def getFloat(rowId: Int): Float = below.getFloat(rowId)
  override def getDouble(rowId: Int): Double = below.getDouble(rowId)
  override def getArray(rowId: Int): ColumnarArray = below.getArray(rowId)
  override def getMap(rowId: Int): ColumnarMap = below.getMap(rowId)
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal =
    below.getDecimal(rowId, precision, scale)
  override def getUTF8String(rowId: Int): UTF8String = below.getUTF8String(rowId)
  override def getBinary(rowId: Int): Array[Byte] = below.getBinary(rowId)
  override def getBinaryView(rowId: Int): BinaryView = below.getBinaryView(rowId)
  override def getInterval(rowId: Int): CalendarInterval = below.getInterval(rowId)
  override def getTimestampNTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampNTZNanos(rowId)
  override def getTimestampLTZNanos(rowId: Int): TimestampNanosVal =
    below.getTimestampLTZNanos(rowId)
  override def getChild(ordinal: Int): ColumnVector = below.getChild(ordinal)
}

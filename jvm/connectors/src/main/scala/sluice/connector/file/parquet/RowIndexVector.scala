package sluice.connector.file.parquet

import org.apache.spark.sql.types.{Decimal, LongType}
import org.apache.spark.sql.vectorized.{ColumnVector, ColumnarArray, ColumnarMap}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The `_position` column of a batch whose rows are consecutive in their file: row `i` is row
 * index `first + i`. Nothing is stored, so a batch's row indexes cost nothing to make (Spark's
 * own row-index column is filled one boxed value at a time).
 */
private[parquet] final class RowIndexVector(first: Long) extends ColumnVector(LongType) {
  override def close(): Unit = ()
  override def hasNull: Boolean = false
  override def numNulls: Int = 0
  override def isNullAt(rowId: Int): Boolean = false
  override def getLong(rowId: Int): Long = first + rowId

  private def notLong(what: String) = new UnsupportedOperationException(
    s"a row-index vector holds longs, not $what")
  override def getBoolean(rowId: Int): Boolean = throw notLong("booleans")
  override def getByte(rowId: Int): Byte = throw notLong("bytes")
  override def getShort(rowId: Int): Short = throw notLong("shorts")
  override def getInt(rowId: Int): Int = throw notLong("ints")
  override def getFloat(rowId: Int): Float = throw notLong("floats")
  override def getDouble(rowId: Int): Double = throw notLong("doubles")
  override def getArray(rowId: Int): ColumnarArray = throw notLong("arrays")
  override def getMap(ordinal: Int): ColumnarMap = throw notLong("maps")
  override def getDecimal(rowId: Int, precision: Int, scale: Int): Decimal = throw notLong(
    "decimals")
  override def getUTF8String(rowId: Int): UTF8String = throw notLong("strings")
  override def getBinary(rowId: Int): Array[Byte] = throw notLong("binaries")
  override def getChild(ordinal: Int): ColumnVector = throw notLong("children")
}

package sluice.connector.file.parquet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType

/**
 * A view of the reader's row without its column `skipped`: column `i` of the view is column `i`
 * of the row below `skipped`, and column `i + 1` from there on. It hands out Spark's own row
 * (the vectorized reader's row over its column vectors) without the row-index column the reader
 * asked for, uncopied (`RowView`).
 */
final class RowWithoutColumn(skipped: Int, types: Array[DataType]) extends RowView(types) {
  override protected def source(ordinal: Int): InternalRow = row
  @inline override protected def at(ordinal: Int): Int =
    if (ordinal < skipped) ordinal else ordinal + 1
}

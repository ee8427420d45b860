package sluice.connector.file.parquet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.DataType

/**
 * A view of the reader's row whose columns `ordinals` read from `constants` (column `j` of it
 * for `ordinals(j)`), every other column from the reader's row: the columns of a file its
 * table's metadata fixes (`FileConstants`), given uncopied (`RowView`).
 */
final class RowWithConstants(ordinals: Array[Int], constants: InternalRow, types: Array[DataType])
    extends RowView(types) {
  // for each column: the column of `constants` it reads, or -1 for the reader's row's
  private val fixed = Array.tabulate(types.length)(ordinals.indexOf(_))

  override protected def source(ordinal: Int): InternalRow =
    if (fixed(ordinal) < 0) row else constants
  override protected def at(ordinal: Int): Int =
    if (fixed(ordinal) < 0) ordinal else fixed(ordinal)
}

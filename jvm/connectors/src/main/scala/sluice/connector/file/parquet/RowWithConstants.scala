package sluice.connector.file.parquet

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * A view of the reader's row whose columns `ordinals` read from `constants` (column `j` of it
 * for `ordinals(j)`), every other column from the reader's row: the columns of a file its
 * table's metadata fixes (`FileConstants`), given uncopied (`RowView`). A struct column with such
 * a field inside (`structs`: its ordinal and a view of the struct's row, fixed alike) reads the
 * reader's struct through that view, one view moved along as this one is (a struct it gives is
 * valid until the next one of its column is asked for; `copy()` keeps one); a null struct stays
 * null.
 */
final class RowWithConstants(
    ordinals: Array[Int],
    constants: InternalRow,
    structs: Array[(Int, RowWithConstants)],
    types: Array[DataType])
    extends RowView(types) {
  // for each column: the column of `constants` it reads, or -1 for the reader's row's
  private val fixed = Array.tabulate(types.length)(ordinals.indexOf(_))
  // for each column: the view its struct is read through, or null
  private val views =
    Array.tabulate(types.length)(o => structs.collectFirst { case (`o`, v) => v }.orNull)

  override protected def source(ordinal: Int): InternalRow =
    if (fixed(ordinal) < 0) row else constants
  override protected def at(ordinal: Int): Int =
    if (fixed(ordinal) < 0) ordinal else fixed(ordinal)

  override def getStruct(ordinal: Int, numFields: Int): InternalRow = {
    val view = views(ordinal)
    if (view == null) super.getStruct(ordinal, numFields)
    else if (row.isNullAt(ordinal)) null
    else view.of(row.getStruct(ordinal, numFields))
  }

  override def get(ordinal: Int, dataType: DataType): AnyRef =
    if (views(ordinal) == null) super.get(ordinal, dataType)
    else getStruct(ordinal, dataType.asInstanceOf[StructType].length)
}

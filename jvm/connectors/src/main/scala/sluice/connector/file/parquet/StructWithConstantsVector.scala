package sluice.connector.file.parquet

import org.apache.spark.sql.vectorized.ColumnVector

/**
 * A view of a struct column vector whose fields are `children`: the vector's own children,
 * except those a table fixes for the whole file (`FileConstants`: an Iceberg identity partition
 * of a field inside a struct), which are constant vectors. Spark reads a struct's fields through
 * `getChild` only (`ColumnVector.getStruct` makes a row over them), so replacing a child
 * replaces the field in every row; whether the struct itself is null stays the vector's.
 */
private[parquet] final class StructWithConstantsVector(
    below: ColumnVector,
    children: Array[ColumnVector])
    extends VectorView(below) {
  override def getChild(ordinal: Int): ColumnVector = children(ordinal)
}

package sluice.connector.format

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, SpecificInternalRow}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import sluice.errors.SluiceError

/**
 * Where a parsed row came from, in the same three columns for every connector, so that a hybrid
 * source (files, then Kafka) has one schema: the split (a file path, `topic-partition`), the
 * position in it (a line's byte offset, a Kafka offset) and a timestamp (the file's modification
 * time, the Kafka record's timestamp).
 */
object Provenance {
  val SplitColumn = "_split"
  val PositionColumn = "_position"
  val TimestampColumn = "_timestamp"

  val schema: StructType = StructType(
    Seq(
      StructField(SplitColumn, StringType, nullable = false),
      StructField(PositionColumn, LongType, nullable = false),
      StructField(TimestampColumn, TimestampType, nullable = true)))

  /** Data columns followed by the provenance columns; a data column may not take their names. */
  def appendTo(data: StructType, context: String): StructType = {
    val taken = data.fieldNames.filter(n => schema.fieldNames.exists(_.equalsIgnoreCase(n)))
    if (taken.nonEmpty) {
      throw SluiceError.config(
        s"$context: schema column '${taken.head}' clashes with a " +
          s"provenance column (${schema.fieldNames.mkString(", ")}); rename it.")
    }
    StructType(data.fields ++ schema.fields)
  }

  /**
   * Appends provenance to parsed rows without copying them: one reused joined row over the data
   * row and one mutable provenance row per reader.
   */
  final class Appender {
    private val provenance = new SpecificInternalRow(schema.fields.map(_.dataType).toIndexedSeq)
    private val joined = new JoinedRow

    /** Sets the split for the rows that follow. */
    def split(id: UTF8String): Unit = provenance.update(0, id)

    /** The row for `data` at `position`; `hasTimestamp` = false leaves `_timestamp` null. */
    def apply(
        data: InternalRow,
        position: Long,
        timestampMicros: Long,
        hasTimestamp: Boolean): InternalRow = {
      provenance.setLong(1, position)
      if (hasTimestamp) provenance.setLong(2, timestampMicros) else provenance.setNullAt(2)
      joined(data, provenance)
    }
  }
}

package sluice.connector.table.iceberg

import java.nio.ByteBuffer

import scala.jdk.CollectionConverters._

import org.apache.iceberg.{FileScanTask, Table}
import org.apache.spark.sql.types._

import sluice.connector.file.parquet.FileConstants
import sluice.errors.SluiceError

/**
 * What an Iceberg data file's identity partition fields fix for its every row: the values of its
 * partition tuple (the manifest's), by their source columns' field ids. Iceberg's readers give
 * those values in the source columns whatever the file holds there, and a writer may leave such
 * a column out of the file (the spec allows it), where Spark's Parquet reader would give null;
 * Sluice's readers give them too (`FileConstants`).
 *
 * Only the columns of the source (`columns`: the Spark type of each field id of its schema, at
 * every level of nesting) are given values: a column the table gained after the source was
 * defined is not read, whatever its type, and one the table dropped since still is.
 *
 * Iceberg's library gives a value in the type of the table's current schema (it binds every spec
 * to it, and reads an older file's int as a long once the column was promoted), while the source
 * reads the column as its own schema types it, which may be older or newer. So a value is checked
 * here only for being of the column's kind (`fits`: a number for a number, days for a date,
 * microseconds for a timestamp, a decimal of the column's scale), and read as the column's type
 * when a reader needs it (`FileConstants.valueOf`), which refuses a value the type cannot hold
 * exactly (a long beyond an int, a double that is no float, more digits than the precision),
 * naming the column and the file: only a query that reads the column fails, and never on a value
 * changed.
 */
private[iceberg] object IcebergConstants {

  def of(
      table: Table,
      task: FileScanTask,
      columns: Map[Int, DataType]): Map[Int, Option[String]] = {
    val spec = task.spec
    val partition = task.file.partition
    spec.fields.asScala.zipWithIndex.flatMap { case (field, i) =>
      Option
        .when(field.transform.isIdentity)(columns.get(field.sourceId))
        .flatten
        .map { column =>
          val value = partition.get(i, classOf[Object])
          if (value != null && !fits(value, column))
            throw SluiceError.config(
              s"${IcebergConfig.Context}: data file '${task.file.location}' of table '${table.name}' has " +
                s"partition value $value (a ${value.getClass.getSimpleName}) of the column of field id " +
                s"${field.sourceId} ('${Option(spec.schema.findColumnName(field.sourceId)).getOrElse("dropped since")}'), " +
                s"which this source reads as a ${column.sql}: Sluice gives a file's identity partition value in " +
                "its column, as Iceberg does, and does not convert it to another kind of value (the table changed " +
                "the column's type since the source was defined). Define the source again, on the table's " +
                "current schema.")
          field.sourceId -> FileConstants.textOf(value)
        }
    }.toMap
  }

  /**
   * Whether partition value `value` (as Iceberg's library holds one) is of the kind of Spark type
   * `column`, so that its text reads as the same value when the type can hold it (see above).
   */
  private[iceberg] def fits(value: Any, column: DataType): Boolean = (value, column) match {
    case (d: java.math.BigDecimal, t: DecimalType) => d.scale == t.scale
    case (_: java.lang.Integer | _: java.lang.Long, IntegerType | LongType) => true
    case (_: java.lang.Integer, DateType) => true
    case (_: java.lang.Long, TimestampType | TimestampNTZType) => true
    case (_: java.lang.Float | _: java.lang.Double, FloatType | DoubleType) => true
    case (_: java.lang.Boolean, BooleanType) => true
    case (_: CharSequence, StringType) => true
    case (_: ByteBuffer, BinaryType) => true
    case _ => false
  }
}

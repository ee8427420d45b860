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
 * defined is not read, whatever its type, and one the table dropped since still is. A value is
 * checked against the source's type of its column by what it is, not by the partition spec's
 * type: a value written before a promotion Iceberg makes reads as the promoted value (int to
 * long, float to double, a decimal's precision widened), and any other is refused, never read as
 * another value (a date's days as a timestamp's microseconds, a double rounded to a float).
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
                s"which this source " +
                s"reads as a ${column.sql}: Sluice gives a file's identity partition value in its column, as " +
                "Iceberg does, and does not convert it to another type. Define the source again (it reads the " +
                "table's schema when it is defined), rewrite the table's data files (rewrite_data_files), or " +
                s"read a snapshot from before the change (option '${IcebergConfig.SnapshotId.name}').")
          field.sourceId -> FileConstants.textOf(value)
        }
    }.toMap
  }

  /**
   * Whether partition value `value` (as Iceberg's library holds one) reads as the same value of
   * Spark type `column` (`FileConstants`).
   */
  private[iceberg] def fits(value: Any, column: DataType): Boolean = (value, column) match {
    case (d: java.math.BigDecimal, t: DecimalType) =>
      d.scale == t.scale && d.precision <= t.precision
    case (_: java.lang.Integer, IntegerType | DateType | LongType) => true
    case (_: java.lang.Long, LongType | TimestampType | TimestampNTZType) => true
    case (_: java.lang.Float, FloatType | DoubleType) => true
    case (_: java.lang.Double, DoubleType) => true
    case (_: java.lang.Boolean, BooleanType) => true
    case (_: CharSequence, StringType) => true
    case (_: ByteBuffer, BinaryType) => true
    case _ => false
  }
}

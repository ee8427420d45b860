package sluice.connector.table.iceberg

import scala.jdk.CollectionConverters._

import org.apache.iceberg.{FileScanTask, Table}
import org.apache.iceberg.types.{Type, Types}

import sluice.connector.file.parquet.FileConstants
import sluice.errors.SluiceError

/**
 * What an Iceberg data file's identity partition fields fix for its every row: the values of its
 * partition tuple (the manifest's), by their source columns' field ids. Iceberg's readers give
 * those values in the source columns whatever the file holds there, and a writer may leave such
 * a column out of the file (the spec allows it), where Spark's Parquet reader would give null;
 * Sluice's readers give them too (`FileConstants`). A value is checked against its column's type
 * now by what it is, not by the partition spec's type (Iceberg binds every spec to the current
 * schema, so that type is always the column's): a value written before a promotion Iceberg makes
 * reads as the promoted value (int to long, float to double, a decimal's precision widened), and
 * any other is refused, never read as another value (a date's days as a timestamp's microseconds).
 */
private[iceberg] object IcebergConstants {

  def of(table: Table, task: FileScanTask): Map[Int, Option[String]] = {
    val spec = task.spec
    val partition = task.file.partition
    spec.fields.asScala.zipWithIndex.flatMap { case (field, i) =>
      Option
        .when(field.transform.isIdentity)(Option(table.schema.findType(field.sourceId)))
        .flatten
        .map { now =>
          val value = partition.get(i, classOf[Object])
          if (value != null && !fits(value, now))
            throw SluiceError.config(
              s"${IcebergConfig.Context}: data file '${task.file.location}' of table '${table.name}' has " +
                s"partition value $value (a ${value.getClass.getSimpleName}) of column " +
                s"'${table.schema.findColumnName(field.sourceId)}', which is a $now now: Sluice gives a " +
                "file's identity partition value in its column, as Iceberg does, and does not convert it " +
                "to this type. Rewrite the table's data files (rewrite_data_files), or read a snapshot " +
                s"from before the change (option '${IcebergConfig.SnapshotId.name}').")
          field.sourceId -> FileConstants.textOf(value)
        }
    }.toMap
  }

  /** Whether partition value `value` reads as the same value of type `now` (`FileConstants`). */
  private[iceberg] def fits(value: Any, now: Type): Boolean = (value, now) match {
    case (d: java.math.BigDecimal, t: Types.DecimalType) =>
      d.scale == t.scale && d.precision <= t.precision
    case (_: java.lang.Integer, _: Types.LongType) => true
    case (_: java.lang.Float, _: Types.DoubleType) => true
    case (v, t) => t.typeId.javaClass.isInstance(v)
  }
}

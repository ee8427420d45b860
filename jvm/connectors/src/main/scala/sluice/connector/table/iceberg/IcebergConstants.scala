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
 * Sluice's readers give them too (`FileConstants`). A value written before its column's type was
 * promoted is kept where the promotion keeps values (int to long, float to double, a decimal's
 * precision widened), and refused otherwise, never read as another value.
 */
private[iceberg] object IcebergConstants {

  def of(table: Table, task: FileScanTask): Map[Int, Option[String]] = {
    val spec = task.spec
    val partition = task.file.partition
    val written = spec.partitionType.fields.asScala
    spec.fields.asScala.zipWithIndex.flatMap { case (field, i) =>
      Option
        .when(field.transform.isIdentity)(Option(table.schema.findType(field.sourceId)))
        .flatten
        .map { now =>
          val was = written(i).`type`
          if (!keeps(was, now))
            throw SluiceError.config(
              s"${IcebergConfig.Context}: data file '${task.file.location}' of table '${table.name}' is " +
                s"partitioned by column '${table.schema.findColumnName(field.sourceId)}' as a $was, " +
                s"which is a $now now: Sluice gives a file's identity partition value in its column, as " +
                "Iceberg does, and does not convert between these types. Rewrite the table's data files " +
                "(rewrite_data_files), or read a snapshot from before the change " +
                s"(option '${IcebergConfig.SnapshotId.name}').")
          field.sourceId -> FileConstants.textOf(partition.get(i, classOf[Object]))
        }
    }.toMap
  }

  /** Whether a value of `was` reads as the same value of `now` from its text (`FileConstants`). */
  private[iceberg] def keeps(was: Type, now: Type): Boolean = (was, now) match {
    case (a, b) if a == b => true
    case (_: Types.IntegerType, _: Types.LongType) => true
    case (_: Types.FloatType, _: Types.DoubleType) => true
    case (a: Types.DecimalType, b: Types.DecimalType) =>
      a.scale == b.scale && a.precision <= b.precision
    case _ => false
  }
}

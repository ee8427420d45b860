package sluice.connector.table.delta

import scala.jdk.CollectionConverters._

import io.delta.kernel.{types => dk}
import io.delta.kernel.internal.util.ColumnMapping
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.types._

import sluice.errors.SluiceError

/**
 * A Delta schema (Kernel's types) as the Spark types Spark's Parquet reader gives for the files
 * Delta writers write: every column nullable, as `spark.read.parquet` reads them.
 */
private[delta] object DeltaSchema {

  def toSpark(schema: dk.StructType): StructType = toSpark(schema, None)

  /**
   * The schema as the data files of a table with column mapping name its columns: each field at
   * every level of nesting (in structs, and in structs inside arrays and maps) under its physical
   * name (`delta.columnMapping.physicalName`) and, in mode `id` (`byId`), with its Parquet field
   * id (`delta.columnMapping.id`, as Spark's `parquet.field.id`), which Spark's reader then
   * matches a file's columns by. Same fields in the same order as `toSpark`.
   */
  def physical(schema: dk.StructType, byId: Boolean): StructType =
    toSpark(schema, Some(byId))

  private def toSpark(schema: dk.StructType, mapped: Option[Boolean]): StructType =
    StructType(schema.fields.asScala.toSeq.map(field(_, mapped)))

  private def field(f: dk.StructField, mapped: Option[Boolean]): StructField = {
    val dataType = sparkType(f.getName, f.getDataType, mapped)
    mapped match {
      case None => StructField(f.getName, dataType, nullable = true)
      case Some(byId) =>
        val metadata = fieldIdOf(f, byId)
        StructField(ColumnMapping.getPhysicalName(f), dataType, nullable = true, metadata)
    }
  }

  /** A mapped field's Parquet field id for Spark's reader (`parquet.field.id`), in mode `id`. */
  private def fieldIdOf(f: dk.StructField, byId: Boolean): Metadata =
    if (!byId) Metadata.empty
    else
      new MetadataBuilder()
        .putLong(ParquetUtils.FIELD_ID_METADATA_KEY, ColumnMapping.getColumnId(f).toLong)
        .build()

  private def sparkType(column: String, t: dk.DataType, mapped: Option[Boolean]): DataType =
    t match {
      case _: dk.BooleanType => BooleanType
      case _: dk.ByteType => ByteType
      case _: dk.ShortType => ShortType
      case _: dk.IntegerType => IntegerType
      case _: dk.LongType => LongType
      case _: dk.FloatType => FloatType
      case _: dk.DoubleType => DoubleType
      case d: dk.DecimalType => DecimalType(d.getPrecision, d.getScale)
      case _: dk.DateType => DateType
      // Delta's timestamp is UTC-adjusted (Spark's TIMESTAMP), timestamp_ntz is local
      case _: dk.TimestampType => TimestampType
      case _: dk.TimestampNTZType => TimestampNTZType
      case _: dk.StringType => StringType
      case _: dk.BinaryType => BinaryType
      case s: dk.StructType => toSpark(s, mapped)
      case a: dk.ArrayType =>
        ArrayType(sparkType(column, a.getElementType, mapped), containsNull = true)
      case m: dk.MapType =>
        MapType(
          sparkType(column, m.getKeyType, mapped),
          sparkType(column, m.getValueType, mapped),
          true)
      case other =>
        throw SluiceError.config(
          s"${DeltaConfig.Context}: column '$column' has Delta type $other, which Sluice does not read " +
            "(variant, for one): read a table without it.")
    }
}

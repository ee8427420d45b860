package sluice.connector.table.iceberg

import scala.jdk.CollectionConverters._

import org.apache.iceberg.{Schema => IcebergSchemaOf}
import org.apache.iceberg.types.{Type, Types}
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.types._

import sluice.errors.SluiceError

/**
 * An Iceberg schema as the Spark types Spark's Parquet reader gives for the files Iceberg writers
 * write (every column nullable, as `spark.read.parquet` reads them), and as the files are read:
 * by field id.
 */
private[iceberg] object IcebergSchema {

  def toSpark(schema: IcebergSchemaOf): StructType = toSpark(schema, fieldIds = false)

  /**
   * `toSpark`'s schema with each field's Iceberg field id at every level of nesting (Spark's
   * `parquet.field.id`), which Spark's Parquet reader then finds a file's columns by, as Iceberg
   * does: a column renamed since a file was written is read under its new name, and a new column
   * given a dropped column's name is not the dropped column's values (a file without its id reads
   * null). Iceberg's writers write every field's id into the Parquet schema (files without, as
   * `add_files` imports them, come with a name mapping, which is refused).
   */
  def withFieldIds(schema: IcebergSchemaOf): StructType = toSpark(schema, fieldIds = true)

  /** The field id of each top-level column of a `withFieldIds` schema, by the column's name. */
  def fieldIdsOf(withIds: StructType): Map[String, Int] =
    withIds.fields.collect {
      case f if ParquetUtils.hasFieldId(f) => f.name -> ParquetUtils.getFieldId(f)
    }.toMap

  /**
   * The Spark type of each field of a `withFieldIds` schema by its field id, at every level of
   * nesting inside structs (the fields a partition can be of: never inside a list or a map).
   */
  def typesById(withIds: StructType): Map[Int, DataType] =
    withIds.fields.flatMap { f =>
      val own = Option.when(ParquetUtils.hasFieldId(f))(ParquetUtils.getFieldId(f) -> f.dataType)
      own ++ (f.dataType match {
        case s: StructType => typesById(s)
        case _ => Map.empty[Int, DataType]
      })
    }.toMap

  /**
   * The name `current` gives each column of `ids` (a column's name when the source was built to
   * its field id), found by field id: what Iceberg binds a scan's filter and its kept column
   * statistics by name in. A column whose id `current` no longer holds at its top level (dropped
   * since) has none: nothing may be asked of Iceberg about it, since a name there is another
   * column's or none.
   */
  def namesIn(current: IcebergSchemaOf, ids: Map[String, Int]): Map[String, String] =
    ids.flatMap { case (name, id) => Option(current.asStruct.field(id)).map(name -> _.name) }

  private def toSpark(schema: IcebergSchemaOf, fieldIds: Boolean): StructType =
    StructType(schema.columns.asScala.toSeq.map(field(_, fieldIds)))

  private def field(f: Types.NestedField, fieldIds: Boolean): StructField = {
    // a v3 default fills the column in files written before it was added; Spark's reader gives null
    if (f.initialDefault != null)
      throw SluiceError.config(
        s"${IcebergConfig.Context}: column '${f.name}' has a default value for rows written before it was " +
          "added (format v3 `initial-default`), which Sluice does not apply yet: its older rows would read " +
          "null (rewriting the data files leaves the default in the schema). Read a snapshot from before the " +
          s"column was added (option '${IcebergConfig.SnapshotId.name}'), or copy the table's rows into a table " +
          "whose column has no initial default.")
    // a column's doc is not carried: it would make the schema differ from a hybrid's next member's
    val metadata =
      if (!fieldIds) Metadata.empty
      else
        new MetadataBuilder()
          .putLong(ParquetUtils.FIELD_ID_METADATA_KEY, f.fieldId.toLong)
          .build()
    StructField(f.name, sparkType(f.name, f.`type`, fieldIds), nullable = true, metadata)
  }

  private def sparkType(column: String, t: Type, fieldIds: Boolean): DataType = t match {
    case _: Types.BooleanType => BooleanType
    case _: Types.IntegerType => IntegerType
    case _: Types.LongType => LongType
    case _: Types.FloatType => FloatType
    case _: Types.DoubleType => DoubleType
    case d: Types.DecimalType => DecimalType(d.precision, d.scale)
    case _: Types.DateType => DateType
    // Iceberg's timestamptz is UTC-adjusted (Spark's TIMESTAMP), timestamp is local (TIMESTAMP_NTZ)
    case ts: Types.TimestampType => if (ts.shouldAdjustToUTC) TimestampType else TimestampNTZType
    case _: Types.StringType => StringType
    case _: Types.BinaryType | _: Types.FixedType => BinaryType
    case s: Types.StructType => StructType(s.fields.asScala.toSeq.map(field(_, fieldIds)))
    case l: Types.ListType =>
      ArrayType(sparkType(column, l.elementType, fieldIds), containsNull = true)
    case m: Types.MapType =>
      MapType(
        sparkType(column, m.keyType, fieldIds),
        sparkType(column, m.valueType, fieldIds),
        valueContainsNull = true)
    case other =>
      throw SluiceError.config(
        s"${IcebergConfig.Context}: column '$column' has Iceberg type ${other}, which Sluice does not " +
          "read yet (uuid, whose 16 bytes Spark's Parquet reader does not take as text, and the types of " +
          "format v3 such as timestamp_ns, variant and geometry): " +
          "read a table or snapshot without it.")
  }
}

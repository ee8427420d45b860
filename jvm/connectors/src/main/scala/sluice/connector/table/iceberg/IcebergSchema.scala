package sluice.connector.table.iceberg

import scala.jdk.CollectionConverters._

import org.apache.iceberg.{Schema => IcebergSchemaOf}
import org.apache.iceberg.types.{Type, TypeUtil, Types}
import org.apache.spark.sql.types._

import sluice.errors.SluiceError

/**
 * An Iceberg schema as the Spark types Spark's Parquet reader gives for the files Iceberg writers
 * write (every column nullable, as `spark.read.parquet` reads them), and the column changes that
 * reading by name cannot follow.
 */
private[iceberg] object IcebergSchema {

  def toSpark(schema: IcebergSchemaOf): StructType =
    StructType(schema.columns.asScala.toSeq.map(field))

  private def field(f: Types.NestedField): StructField = {
    // a v3 default fills the column in files written before it was added; Spark's reader gives null
    if (f.initialDefault != null)
      throw SluiceError.config(
        s"${IcebergConfig.Context}: column '${f.name}' has a default value for rows written before it was " +
          "added (format v3 `initial-default`), which Sluice does not apply yet: its older rows would read " +
          "null. Rewrite the table's data files (rewrite_data_files) to read it.")
    // a column's doc is not carried: it would make the schema differ from a hybrid's next member's
    StructField(f.name, sparkType(f.name, f.`type`), nullable = true)
  }

  private def sparkType(column: String, t: Type): DataType = t match {
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
    case s: Types.StructType => StructType(s.fields.asScala.toSeq.map(field))
    case l: Types.ListType => ArrayType(sparkType(column, l.elementType), containsNull = true)
    case m: Types.MapType =>
      MapType(
        sparkType(column, m.keyType),
        sparkType(column, m.valueType),
        valueContainsNull = true)
    case other =>
      throw SluiceError.config(
        s"${IcebergConfig.Context}: column '$column' has Iceberg type ${other}, which Sluice does not " +
          "reads yet (uuid, whose 16 bytes Spark's Parquet reader does not take as text, and the types of " +
          "format v3 such as timestamp_ns, variant and geometry): " +
          "read a table or snapshot without it.")
  }

  /**
   * Why the columns of `schema` cannot be read by name from every data file of the table, if so:
   * Iceberg matches a file's columns by field id, Spark's Parquet reader by name, so a column
   * renamed since some files were written, or a name given to a new column after an older column
   * of that name was dropped, would read wrong values. Added and dropped columns read right.
   */
  def renameOf(schema: IcebergSchemaOf, history: Iterable[IcebergSchemaOf]): Option[String] = {
    val current = TypeUtil.indexNameById(schema.asStruct).asScala
    history.iterator
      .flatMap { old =>
        val names = TypeUtil.indexNameById(old.asStruct).asScala
        val renamed = current.collectFirst {
          case (id, name) if names.get(id).exists(_ != name) =>
            s"column '$name' is named '${names(id)}' in another of the table's schemas (a rename)"
        }
        lazy val reused = names.collectFirst {
          case (id, name) if current.exists { case (i, n) => n == name && i != id } =>
            s"column name '$name' belonged to another column (field id $id) in an earlier schema"
        }
        renamed.orElse(reused)
      }
      .nextOption()
  }
}

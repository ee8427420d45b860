package sluice.connector.table.delta

import scala.jdk.CollectionConverters._

import io.delta.kernel.{types => dk}
import org.apache.spark.sql.types._

import sluice.errors.SluiceError

/**
 * A Delta schema (Kernel's types) as the Spark types Spark's Parquet reader gives for the files
 * Delta writers write: every column nullable, as `spark.read.parquet` reads them.
 */
private[delta] object DeltaSchema {

  def toSpark(schema: dk.StructType): StructType =
    StructType(schema.fields.asScala.toSeq.map(field))

  private def field(f: dk.StructField): StructField =
    StructField(f.getName, sparkType(f.getName, f.getDataType), nullable = true)

  private def sparkType(column: String, t: dk.DataType): DataType = t match {
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
    case s: dk.StructType => toSpark(s)
    case a: dk.ArrayType => ArrayType(sparkType(column, a.getElementType), containsNull = true)
    case m: dk.MapType =>
      MapType(sparkType(column, m.getKeyType), sparkType(column, m.getValueType), true)
    case other =>
      throw SluiceError.config(
        s"${DeltaConfig.Context}: column '$column' has Delta type $other, which Sluice does not read " +
          "(variant, for one): read a table without it.")
  }
}

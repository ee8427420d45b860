package sluice.connector.file.parquet

import java.nio.ByteBuffer
import java.util.Base64

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.execution.vectorized.{ColumnVectorUtils, ConstantColumnVector}
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String

import sluice.errors.SluiceError

/**
 * Values a table's metadata fixes for every row of a data file (`DiscoveredFile.constants`,
 * `RowGroupSplit.constants`): an Iceberg identity partition's value. Iceberg's readers give that
 * value in the partition's column whatever the file holds there, and a writer may leave the
 * column out of the file (the spec allows it), where Spark's reader would give null; so the
 * readers give it too, replacing the file's column (`ParquetReader`, `ParquetBatchReader`). A
 * field inside a struct is replaced inside the struct of each row; a row whose struct is null
 * keeps it null, as does a file without the struct at all (Spark's reader gives null structs
 * there, and so does pyiceberg: a partition value says what the field is, not that the struct
 * exists).
 *
 * Keyed by the column's Parquet field id (a rename since the file was planned leaves them
 * right), written as text that travels in the split (so in the offset log) and is read back
 * exactly as a value of the column's Spark type: numbers in Java's own text (a float as the
 * double it widens to, so a column promoted to double reads it as Iceberg widens it), dates as
 * days and timestamps as microseconds since the epoch (Iceberg's own representation), decimals
 * in plain notation, binary in Base64, strings as they are; None is null.
 */
private[connector] object FileConstants {

  /**
   * The text of a value as Iceberg's library gives a partition value: Integer, Long, Float,
   * Double, Boolean, a CharSequence, a ByteBuffer or a BigDecimal (dates, times and timestamps
   * are Integer and Long there); None for null.
   */
  def textOf(value: Any): Option[String] = value match {
    case null => None
    case f: java.lang.Float => Some(java.lang.Double.toString(f.doubleValue))
    case d: java.math.BigDecimal => Some(d.toPlainString)
    case b: ByteBuffer =>
      val bytes = new Array[Byte](b.remaining)
      b.duplicate().get(bytes)
      Some(Base64.getEncoder.encodeToString(bytes))
    case v @ (_: java.lang.Integer | _: java.lang.Long | _: java.lang.Double |
        _: java.lang.Boolean | _: CharSequence) =>
      Some(v.toString)
    case other =>
      throw new IllegalArgumentException(
        s"a constant column value of ${other.getClass.getName} has no text form")
  }

  /** The value of `text` (from `textOf`) as Spark holds a value of `dataType` in a row. */
  def valueOf(text: Option[String], dataType: DataType): Any = text.fold(null: Any) { t =>
    dataType match {
      case BooleanType => t.toBoolean
      case IntegerType | DateType => t.toInt
      case LongType | TimestampType | TimestampNTZType => t.toLong
      case FloatType =>
        // a float's text is the double it widens to (`textOf`): any other double would be rounded
        val d = t.toDouble
        if (d.toFloat.toDouble != d && !d.isNaN)
          throw new IllegalArgumentException(s"$t is not a float's value")
        d.toFloat
      case DoubleType => t.toDouble
      case d: DecimalType => Decimal(new java.math.BigDecimal(t), d.precision, d.scale)
      case StringType => UTF8String.fromString(t)
      case BinaryType => Base64.getDecoder.decode(t)
      case other =>
        throw new IllegalArgumentException(s"no constant column value of type ${other.sql}")
    }
  }

  /**
   * The data columns of `config`'s rows (`requiredSchema`, found by field id) that `constants`
   * (of data file `file`) fix, with their values, and the struct columns with such a field
   * inside (at any depth: Iceberg partitions by a struct's field, never by a list's or a map's);
   * None when it fixes none of the columns read. A value that is not one of its column's type in
   * `config` (the table's type changed since the source was defined) fails, naming the column
   * and the file.
   */
  def of(
      config: ParquetConfig,
      constants: Map[Int, Option[String]],
      file: String): Option[Fixed] =
    if (constants.isEmpty || !config.matchFieldIds) None
    else fixedIn(config.fileRequiredSchema, config.requiredSchema, constants, file, "")

  /** What `constants` fix among the fields of struct `read` (`inFile`: the same, with field ids). */
  private def fixedIn(
      inFile: StructType,
      read: StructType,
      constants: Map[Int, Option[String]],
      file: String,
      prefix: String): Option[Fixed] = {
    val values = Array.newBuilder[(Int, DataType, Any)]
    val structs = Array.newBuilder[(Int, Fixed)]
    inFile.fields.zipWithIndex.foreach { case (f, i) =>
      val column = read(i)
      val name = prefix + column.name
      Option
        .when(ParquetUtils.hasFieldId(f))(ParquetUtils.getFieldId(f))
        .flatMap(constants.get) match {
        case Some(text) =>
          values += ((i, column.dataType, valueIn(text, column.dataType, name, file)))
        case None =>
          (f.dataType, column.dataType) match {
            case (s: StructType, r: StructType) =>
              fixedIn(s, r, constants, file, s"$name.").foreach(inner => structs += (i -> inner))
            case _ =>
          }
      }
    }
    val (fixedValues, fixedStructs) = (values.result(), structs.result())
    Option.when(fixedValues.nonEmpty || fixedStructs.nonEmpty)(
      new Fixed(fixedValues, fixedStructs, read.fields.map(_.dataType)))
  }

  private def valueIn(
      text: Option[String],
      dataType: DataType,
      column: String,
      file: String): Any =
    try valueOf(text, dataType)
    catch {
      case NonFatal(e) =>
        throw SluiceError.sourceFault(
          s"${ParquetConfig.Context}: the table gives column '$column' of file '$file' " +
            s"the value '${text.getOrElse("")}' for every row (an identity partition's), which " +
            s"a ${dataType.sql} (the column's type in this source) cannot hold exactly: the table " +
            "widened the column's type after the source was defined, and this file was written " +
            "since. Sluice reads a partition value in an older type only as the same value, never " +
            "rounded or cut. Read the table with a source defined again, on its current schema (a " +
            "new query: this checkpoint's files are read with the types it started with).",
          e)
    }

  /**
   * Columns of one struct (the rows themselves at the top) and the value each holds in every row
   * of one file (`values`: ordinal, type, value), and struct columns with such fields inside
   * (`structs`: ordinal and what is fixed in them); `fieldTypes` are the struct's field types.
   */
  final class Fixed(
      values: Array[(Int, DataType, Any)],
      structs: Array[(Int, Fixed)],
      private val fieldTypes: Array[DataType]) {
    private val row: InternalRow = new GenericInternalRow(values.map(_._3))

    /**
     * A view of the reader's rows with these columns replaced (one view, moved along: valid as
     * the reader's row is), for a row reader over rows of `types`.
     */
    def rowView(types: Array[DataType]): RowWithConstants =
      new RowWithConstants(
        values.map(_._1),
        row,
        structs.map { case (i, inner) => i -> inner.rowView(inner.fieldTypes) },
        types)

    /**
     * `vectors` (the columns of a batch of `rows` rows) with these columns replaced by constant
     * vectors, one value at every row (made for each batch, so that their null counts are the
     * batch's), and struct columns by views whose fixed children are replaced alike.
     */
    def replace(vectors: Array[ColumnVector], rows: Int): Array[ColumnVector] = {
      values.indices.foreach { j =>
        val v = new ConstantColumnVector(rows, values(j)._2)
        ColumnVectorUtils.populate(v, row, j)
        vectors(values(j)._1) = v
      }
      structs.foreach { case (i, inner) =>
        val below = vectors(i)
        val children = Array.tabulate[ColumnVector](inner.fieldTypes.length)(below.getChild(_))
        vectors(i) = new StructWithConstantsVector(below, inner.replace(children, rows))
      }
      vectors
    }
  }
}

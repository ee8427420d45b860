package sluice.connector.file.parquet

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

/** The values a table fixes for a file's columns: their text, and how the readers give them. */
class FileConstantsSuite extends AnyFunSuite {
  import FileConstants.{textOf, valueOf}

  private def roundTrip(value: Any, as: DataType): Any = valueOf(textOf(value), as)

  test(
    "each kind of partition value Iceberg gives reads back as the same value of the column's type") {
    assert(roundTrip(Integer.valueOf(-7), IntegerType) == -7)
    assert(roundTrip(Integer.valueOf(20_000), DateType) == 20_000) // days since the epoch
    assert(
      roundTrip(java.lang.Long.valueOf(1_764_000_000_123_456L), TimestampType) ==
        1_764_000_000_123_456L
    ) // microseconds
    assert(roundTrip(java.lang.Long.valueOf(Long.MinValue), LongType) == Long.MinValue)
    assert(roundTrip(java.lang.Double.valueOf(0.1), DoubleType) == 0.1)
    assert(roundTrip(java.lang.Float.valueOf(1.1f), FloatType) == 1.1f)
    assert(roundTrip(java.lang.Float.valueOf(Float.NaN), FloatType).asInstanceOf[Float].isNaN)
    assert(roundTrip(java.lang.Boolean.TRUE, BooleanType) == true)
    assert(
      roundTrip("New York: 5 & 6 = 11%", StringType) ==
        UTF8String.fromString("New York: 5 & 6 = 11%"))
    assert(roundTrip("", StringType) == UTF8String.fromString(""))
    val bytes = Array[Byte](0, -1, 10, 58, 38)
    assert(
      roundTrip(ByteBuffer.wrap(bytes), BinaryType)
        .asInstanceOf[Array[Byte]]
        .toSeq == bytes.toSeq)
    assert(
      roundTrip(new java.math.BigDecimal("-12.50"), DecimalType(10, 2)) ==
        Decimal(new java.math.BigDecimal("-12.50"), 10, 2))
    assert(roundTrip(null, StringType) == null)
  }

  test("a value written before its column was promoted reads as Iceberg widens it") {
    assert(roundTrip(Integer.valueOf(42), LongType) == 42L)
    // a float widened exactly, not the double nearest its shortest text (1.1)
    assert(roundTrip(java.lang.Float.valueOf(1.1f), DoubleType) == 1.1f.toDouble)
    assert(
      roundTrip(new java.math.BigDecimal("3.25"), DecimalType(20, 2)) ==
        Decimal(new java.math.BigDecimal("3.25"), 20, 2))
  }

  test(
    "a value is read as an older type of its column only when that type holds it exactly: never changed") {
    // values Iceberg gives in the promoted type, read by a source defined before the promotion
    assert(roundTrip(java.lang.Long.valueOf(5L), IntegerType) == 5)
    assert(roundTrip(java.lang.Double.valueOf(1.1f.toDouble), FloatType) == 1.1f)
    assert(
      roundTrip(new java.math.BigDecimal("1.50"), DecimalType(3, 2)) ==
        Decimal(new java.math.BigDecimal("1.50"), 3, 2))
    // and values written after it, which the older type cannot hold
    intercept[NumberFormatException](
      roundTrip(java.lang.Long.valueOf(5_000_000_000L), IntegerType))
    intercept[IllegalArgumentException](roundTrip(java.lang.Double.valueOf(0.1), FloatType))
    intercept[ArithmeticException](
      roundTrip(new java.math.BigDecimal("1234.50"), DecimalType(5, 2)))
  }

  private def id(n: Int) =
    new MetadataBuilder().putLong(ParquetUtils.FIELD_ID_METADATA_KEY, n.toLong).build()
  private val data = StructType(
    Seq(
      StructField("id", LongType),
      StructField("city", StringType),
      StructField("day", DateType)))
  private val files = StructType(data.fields.zip(Seq(1, 2, 3)).map { case (f, n) =>
    f.copy(metadata = id(n))
  })
  private def config(read: Option[Set[String]] = None) =
    ByFieldIds.config(data, files, None, caseSensitive = false).copy(readColumns = read)

  test("the columns fixed are those read whose field id has a value; none, no view") {
    assert(FileConstants.of(config(), Map.empty, "f.parquet").isEmpty)
    assert(
      FileConstants.of(config(), Map(9 -> Some("x")), "f.parquet").isEmpty
    ) // a column not in the schema
    assert(
      FileConstants.of(config(Some(Set("id"))), Map(2 -> Some("b")), "f.parquet").isEmpty
    ) // not read
    assert(
      FileConstants
        .of(config().copy(matchFieldIds = false), Map(2 -> Some("b")), "f.parquet")
        .isEmpty)
  }

  test("a value that is not one of its column's type fails, naming the column and the file") {
    // a long written after the column was promoted, read by a source defined on the int column
    val ints = StructType(Seq(StructField("n", IntegerType)))
    val config =
      ByFieldIds.config(ints, StructType(Seq(ints(0).copy(metadata = id(7)))), None, false)
    val e = intercept[sluice.errors.SluiceRuntimeException](
      FileConstants.of(config, Map(7 -> Some("5000000000")), "/t/data/n=5000000000/f.parquet"))
    assert(
      e.getMessage.contains("column 'n' of file '/t/data/n=5000000000/f.parquet'"),
      e.getMessage)
    assert(
      e.getMessage.contains("a INT (the column's type in this source) cannot hold"),
      e.getMessage)
  }

  test("rows: the fixed columns hold the table's values, the others the reader's row, uncopied") {
    val fixed = FileConstants.of(config(), Map(2 -> Some("b"), 3 -> None), "f.parquet").get
    val view = fixed.rowView(data.fields.map(_.dataType))
    val below = new GenericInternalRow(Array[Any](5L, null, 19_000))
    val row = view.of(below)
    assert(row.getLong(0) == 5L)
    assert(row.getUTF8String(1) == UTF8String.fromString("b") && !row.isNullAt(1))
    assert(row.isNullAt(2))
    below.update(0, 6L)
    assert(row.getLong(0) == 6L) // a view of the reader's row
    assert(row.copy() == InternalRow(6L, UTF8String.fromString("b"), null))
  }

  test("column batches: constant vectors replace the fixed columns, sized by the batch") {
    val fixed = FileConstants.of(config(), Map(2 -> Some("b"), 3 -> None), "f.parquet").get
    val read = data.fields.map(f => new OnHeapColumnVector(4, f.dataType): ColumnVector)
    val replaced = fixed.replace(read.clone(), 3)
    assert(replaced(0) eq read(0))
    assert((0 until 3).forall(i =>
      replaced(1).getUTF8String(i).getBytes.toSeq == "b".getBytes(UTF_8).toSeq))
    assert((0 until 3).forall(replaced(2).isNullAt) && replaced(2).numNulls == 3)
    assert(replaced(1).numNulls == 0)
  }

  // id, loc struct<city, geo struct<zone, code>>: an identity partition of loc.city (id 12)
  // and one of loc.geo.zone (id 14)
  private val geo = StructType(
    Seq(StructField("zone", StringType), StructField("code", IntegerType)))
  private val loc = StructType(Seq(StructField("city", StringType), StructField("geo", geo)))
  private val nested = StructType(Seq(StructField("id", LongType), StructField("loc", loc)))
  private val nestedInFile = StructType(
    Seq(
      nested(0).copy(metadata = id(1)),
      nested(1).copy(
        metadata = id(11),
        dataType = StructType(
          Seq(
            loc(0).copy(metadata = id(12)),
            loc(1).copy(
              metadata = id(13),
              dataType = StructType(
                Seq(geo(0).copy(metadata = id(14)), geo(1).copy(metadata = id(15))))))))))
  private val nestedConfig = ByFieldIds.config(nested, nestedInFile, None, caseSensitive = false)
  private val nestedValues = Map(12 -> Some("b"), 14 -> Some("z9"))

  test(
    "rows: fields inside structs hold the table's values at any depth; a null struct stays null") {
    val fixed = FileConstants.of(nestedConfig, nestedValues, "f.parquet").get
    val view = fixed.rowView(nested.fields.map(_.dataType))
    val below = new GenericInternalRow(
      Array[Any](5L, InternalRow(null, InternalRow(UTF8String.fromString("zz"), 7))))
    val row = view.of(below)
    val inner = row.getStruct(1, 2)
    assert(inner.getUTF8String(0) == UTF8String.fromString("b") && !inner.isNullAt(0))
    assert(inner.getStruct(1, 2).getUTF8String(0) == UTF8String.fromString("z9"))
    assert(inner.getStruct(1, 2).getInt(1) == 7) // the file's, beside the fixed field
    val b = UTF8String.fromString("b")
    val z9 = UTF8String.fromString("z9")
    assert(row.copy() == InternalRow(5L, InternalRow(b, InternalRow(z9, 7))))
    assert(row.get(1, loc).asInstanceOf[InternalRow].copy() == InternalRow(b, InternalRow(z9, 7)))
    // a struct null in the reader's row (or left out of the file) stays null
    below.update(1, null)
    assert(row.isNullAt(1) && row.getStruct(1, 2) == null)
    assert(row.copy() == InternalRow(5L, null))
    below.update(1, InternalRow(UTF8String.fromString("a"), null))
    assert(row.getStruct(1, 2).getUTF8String(0) == b && row.getStruct(1, 2).isNullAt(1))
  }

  test(
    "column batches: fields inside structs are constant vectors, the structs' nulls the file's") {
    val fixed = FileConstants.of(nestedConfig, nestedValues, "f.parquet").get
    val read = nested.fields.map(f => new OnHeapColumnVector(4, f.dataType))
    read(1).putNull(2)
    read(1).getChild(1).getChild(1).putInt(0, 7)
    val replaced = fixed.replace(read.toArray[ColumnVector], 3)
    assert(replaced(0) eq read(0))
    val first = replaced(1).getStruct(0)
    assert(first.getUTF8String(0) == UTF8String.fromString("b"))
    assert(first.getStruct(1, 2).getUTF8String(0) == UTF8String.fromString("z9"))
    assert(first.getStruct(1, 2).getInt(1) == 7)
    assert(replaced(1).getStruct(1).getUTF8String(0) == UTF8String.fromString("b"))
    assert(replaced(1).isNullAt(2) && replaced(1).getStruct(2) == null)
  }

  test("a field inside a struct whose value is not of its type names the field by its path") {
    val e = intercept[sluice.errors.SluiceRuntimeException](
      FileConstants.of(
        ByFieldIds.config(
          StructType(Seq(StructField("loc", StructType(Seq(StructField("n", IntegerType)))))),
          StructType(
            Seq(
              StructField(
                "loc",
                StructType(Seq(StructField("n", IntegerType, metadata = id(12)))),
                metadata = id(11)))),
          None,
          false),
        Map(12 -> Some("x")),
        "f.parquet"))
    assert(e.getMessage.contains("column 'loc.n' of file 'f.parquet'"), e.getMessage)
  }
}

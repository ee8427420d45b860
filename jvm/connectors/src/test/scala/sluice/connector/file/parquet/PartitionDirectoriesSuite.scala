package sluice.connector.file.parquet

import org.apache.spark.sql.execution.vectorized.{ColumnVectorUtils, ConstantColumnVector}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import sluice.errors.SluiceRuntimeException

/** A file's partition values, from its directories or its table's metadata, as typed values. */
class PartitionDirectoriesSuite extends AnyFunSuite {
  private val money = DecimalType(10, 2)
  private val partitions = new PartitionDirectories(
    ByFieldIds
      .config(
        StructType(Seq(StructField("x", LongType))),
        StructType(Seq(StructField("x", LongType))),
        None,
        false)
      .copy(
        partitionSchema = StructType(Seq(StructField("d", money))),
        partitionRoots = Seq("/t"),
        fileSchema = None,
        matchFieldIds = false))

  /** The value as Spark's vectorized reader fills a partition column with it. */
  private def asVector(value: org.apache.spark.sql.catalyst.InternalRow): BigDecimal = {
    val v = new ConstantColumnVector(1, money)
    ColumnVectorUtils.populate(v, value, 0)
    v.getDecimal(0, money.precision, money.scale).toBigDecimal
  }

  test(
    "a decimal with fewer fractional digits than its column's scale is that value at the column's scale") {
    for (values <- Seq(
        partitions.valuesOf("/t/d=1.5/f.parquet"),
        partitions.valuesOf("/t/data/f.parquet", Some(Map("d" -> Some("1.5")))))) {
      val d = values.getDecimal(0, money.precision, money.scale)
      assert(d.scale == 2 && d.toBigDecimal == BigDecimal("1.50"))
      // Spark's own conversion leaves it at scale 1, which its vectorized reader fills as 0.15
      assert(asVector(values) == BigDecimal("1.50"))
    }
  }

  test("a decimal the column cannot hold exactly is refused, not rounded") {
    for (text <- Seq("1.234", "123456789.5")) {
      val e = intercept[SluiceRuntimeException](partitions.valuesOf(s"/t/d=$text/f.parquet"))
      assert(e.getMessage.contains(s"'d=$text', which is not a DECIMAL(10,2)"), e.getMessage)
    }
  }
}

package sluice.bench

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection

/**
 * A diagnostic: the mean size of a DataFrame's rows as Spark's `UnsafeRow`s, the form rows take
 * in shuffles, caches and state. Used by the `compact` benchmark to compare row layouts.
 */
object RowSizes {

  /** Mean `UnsafeRow` bytes over up to `samplePerPartition` rows of each partition. */
  def meanUnsafeRowBytes(df: DataFrame, samplePerPartition: Int): Double = {
    val schema = df.schema
    val plan = df.asInstanceOf[org.apache.spark.sql.classic.Dataset[Row]].queryExecution
    val sizes = plan.toRdd
      .mapPartitions { rows =>
        val project = UnsafeProjection.create(schema)
        rows.take(samplePerPartition).map(r => project(r).getSizeInBytes.toLong)
      }
      .collect()
    if (sizes.isEmpty) 0.0 else sizes.sum.toDouble / sizes.length
  }
}

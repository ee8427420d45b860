package org.apache.spark.sql.sluice

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.DataSourceStrategy
import org.apache.spark.sql.sources.Filter

/**
 * Spark's own translation of a condition into the filter a data source is handed
 * (`DataSourceStrategy.translateFilter`, what `spark.read` pushes to a V1 or V2 source), which is
 * visible only inside `org.apache.spark.sql`: Sluice's streaming pushdown hands its sources the
 * same filters a batch read would.
 */
object SourceFilters {
  def translate(condition: Expression): Option[Filter] =
    DataSourceStrategy.translateFilter(condition, supportNestedPredicatePushdown = false)
}

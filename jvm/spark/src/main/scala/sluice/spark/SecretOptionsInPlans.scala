package sluice.spark

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A Sluice relation keeps its options in the plan with their secret values masked
 * (`SecretOptions`): Spark prints a relation's options in `explain()` and in plan strings, and
 * masks only the names and values its redaction patterns match (`spark.redaction.regex`,
 * `spark.sql.redaction.options.regex`), which a catalog property such as
 * `catalog.header.Authorization` or a Kafka consumer property need not match. Spark 4.3 resolves
 * a `format("sluice")` read in the analyzer (the parsed plan names only the format), so this
 * resolution rule masks the options before any plan that shows them exists. Nothing reads them
 * again: the table was built from the options already, and Sluice's scan builder ignores the
 * options Spark hands it.
 */
object SecretOptionsInPlans extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case r: StreamingRelationV2 if r.table.isInstanceOf[SluiceTable] && shows(r.extraOptions) =>
      r.copy(extraOptions = masked(r.extraOptions))
    case r: DataSourceV2Relation if r.table.isInstanceOf[SluiceTable] && shows(r.options) =>
      r.copy(options = masked(r.options))
  }

  private def shows(options: CaseInsensitiveStringMap): Boolean =
    options.asCaseSensitiveMap.asScala.exists { case (k, v) =>
      v != sluice.config.ConfigOption.Mask && SecretOptions.isSecret(k)
    }

  private def masked(options: CaseInsensitiveStringMap): CaseInsensitiveStringMap =
    new CaseInsensitiveStringMap(
      SecretOptions.masked(options.asCaseSensitiveMap.asScala.toMap).asJava)
}

package sluice.spark

import org.apache.spark.sql.{AnalysisException, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.Alias
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation

import sluice.config.RecordLayout

/**
 * `spark.sql.extensions=sluice.spark.SluiceExtensions` (`sluice.configure` sets it): analysis
 * rules of Sluice:
 *  - a query that names a column a compact source leaves out (the event-time column, timestamps,
 *    provenance) gets an error naming compact mode and the setting, instead of Spark's bare
 *    "cannot resolve" (`CompactColumnCheck`);
 *  - alignment's maxDrift `auto` is resolved from the started query's `withWatermark` delay (`AutoDrift`);
 *  - a started query's sources read only the columns it uses and skip data its filters exclude (`StreamingPushdown`);
 *  - a Sluice relation's secret option values are masked in the plan, where explain() shows them
 *    (`SecretOptionsInPlans`).
 */
final class SluiceExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectResolutionRule(_ => CompactColumnCheck)
    extensions.injectResolutionRule(_ => AutoDrift)
    extensions.injectResolutionRule(_ => StreamingPushdown)
    extensions.injectResolutionRule(_ => SecretOptionsInPlans)
  }
}

object CompactColumnCheck extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan.foreachUp { node =>
      // Only where the children are resolved can a missing name be told apart from one still to come.
      if (node.children.nonEmpty && node.childrenResolved) {
        lazy val compactTables = node
          .collectLeaves()
          .collect {
            case r: StreamingRelationV2 => r.table
            case r: DataSourceV2Relation => r.table // a batch read (spark.read)
          }
          .collect { case t: SluiceTable if t.layout == RecordLayout.Compact => t }
        val names = node.expressions.flatMap(_.collect { case u: UnresolvedAttribute =>
          u.nameParts.last
        })
        names.foreach { name =>
          val visible = node.children.exists(_.output.exists(_.name.equalsIgnoreCase(name))) ||
            (node match { // a lateral alias defined in the same select list resolves later
              case p: Project =>
                p.projectList.exists {
                  case a: Alias => a.name.equalsIgnoreCase(name); case _ => false
                }
              case _ => false
            })
          if (!visible)
            compactTables.find(_.leftOut.exists(_.equalsIgnoreCase(name))).foreach { t =>
              throw new AnalysisException(
                t.compactColumnMessage(name),
                None,
                None,
                None,
                None,
                Map.empty,
                Array.empty)
            }
        }
      }
    }
    plan
  }
}

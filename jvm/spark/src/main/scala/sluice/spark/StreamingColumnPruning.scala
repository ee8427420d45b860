package sluice.spark

import java.util.IdentityHashMap

import org.apache.spark.sql.catalyst.expressions.AttributeSet
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.{StreamingRelationV2, WriteToStream, WriteToStreamStatement}

/**
 * Column pruning for streams: Spark's streaming engines build a source's scan from the analyzed
 * plan of the started query, handing `pruneColumns` every column of the source's relation and
 * no optimizer rule runs before (spark-4.3-facts.md, "Pushdown into streaming scans"). So this
 * rule narrows each Sluice relation's output, in the started query's plan only, to the columns
 * the query uses and those the source reads besides (`SluiceTable.columnsRead`); the scan then
 * gets exactly those, and its rows are the relation's output.
 *
 * Which columns a query uses is found from the top: the sink takes every column of the query,
 * and each node needs of its child the columns it references and those of its own output it must
 * pass on. That holds for the nodes listed in `passesColumnsOn`; any other node (a union, which
 * pairs its children's columns by position, a distinct, a Python function over whole rows, ...)
 * takes every column of its child, so the sources under it are read whole.
 */
object StreamingColumnPruning extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case _: WriteToStreamStatement | _: WriteToStream if plan.children.forall(_.resolved) =>
      prune(plan)
    case _ => plan
  }

  private def prune(plan: LogicalPlan): LogicalPlan = {
    val used = new IdentityHashMap[LogicalPlan, AttributeSet]()
    def walk(node: LogicalPlan, needed: AttributeSet): Unit = node match {
      case r @ StreamingRelationV2(_, _, _: SluiceTable, _, _, _, _, _, _) =>
        used.put(r, Option(used.get(r)).fold(needed)(_ ++ needed))
      case n if passesColumnsOn(n) =>
        val wanted = needed ++ n.references
        n.children.foreach(c => walk(c, c.outputSet.filter(wanted.contains)))
      case n => n.children.foreach(c => walk(c, c.outputSet))
    }
    plan.children.foreach(c => walk(c, c.outputSet))
    if (used.isEmpty) return plan
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.transformUp {
        case r: StreamingRelationV2 if used.containsKey(r) =>
          val table = r.table.asInstanceOf[SluiceTable]
          val kept = table.columnsRead(used.get(r).map(_.name).toSet).toSet
          val output = r.output.filter(a => kept.contains(a.name))
          if (output.length == r.output.length) r else r.copy(output = output)
      }
    }
  }

  /**
   * Nodes whose output is their expressions' values and columns of their children passed on by
   * name: a child's column none of them references and that they do not pass on is not used.
   */
  private def passesColumnsOn(node: LogicalPlan): Boolean = node match {
    case _: Project | _: Filter | _: Aggregate | _: EventTimeWatermark | _: Join | _: Sort |
        _: Deduplicate | _: DeduplicateWithinWatermark | _: SubqueryAlias | _: Window |
        _: GlobalLimit | _: LocalLimit | _: Repartition | _: RepartitionByExpression =>
      true
    case _ => false
  }
}

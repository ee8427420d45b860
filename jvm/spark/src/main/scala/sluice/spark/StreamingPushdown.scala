package sluice.spark

import java.util.IdentityHashMap

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression, Literal, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.{StreamingRelationV2, WriteToStream, WriteToStreamStatement}
import org.apache.spark.sql.catalyst.trees.TreePattern.CURRENT_LIKE
import org.apache.spark.sql.catalyst.plans.logical
import org.apache.spark.sql.sluice.SourceFilters
import org.apache.spark.sql.sources.Filter

/**
 * Pushdown for streams: Spark's streaming engines build a source's scan from the analyzed plan of
 * the started query, handing `pruneColumns` every column of the source's relation and no filters,
 * and no optimizer rule runs before (spark-4.3-facts.md, "Pushdown into streaming scans"). So
 * this rule, in the started query's plan only, narrows each Sluice relation's output to the
 * columns the query uses and those the source reads besides (`SluiceTable.columnsRead`), and
 * gives its table the filters right above it (`SluiceTable.withStreamFilters`); the scan then
 * gets exactly those columns, and its rows are the relation's output. The filters stay in the
 * plan: Spark applies them to the rows read, as it would without pushdown.
 *
 * Which columns a query uses is found from the top: the sink takes every column of the query,
 * and each node needs of its child the columns it references and those of its own output it must
 * pass on. That holds for the nodes listed in `passesColumnsOn`; any other node (a union, which
 * pairs its children's columns by position, a distinct, a Python function over whole rows, ...)
 * takes every column of its child, so the sources under it are read whole.
 *
 * A filter reaches the source only through projections, aliases and other filters: rows it drops
 * would otherwise still count (a watermark below it sees them, a limit or an aggregate takes them).
 */
object StreamingPushdown extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case _: WriteToStreamStatement | _: WriteToStream if plan.children.forall(_.resolved) =>
      pushDown(plan)
    case _ => plan
  }

  private final case class Pushed(columns: AttributeSet, filters: Seq[Expression])

  private def pushDown(plan: LogicalPlan): LogicalPlan = {
    val found = new IdentityHashMap[LogicalPlan, Pushed]()
    def walk(node: LogicalPlan, needed: AttributeSet, filters: Seq[Expression]): Unit =
      node match {
        case r @ StreamingRelationV2(_, _, _: SluiceTable, _, _, _, _, _, _) =>
          val here = filters.filter(_.references.subsetOf(r.outputSet))
          // reached twice (the same plan object in two places): only what both paths allow
          found.put(
            r,
            Option(found.get(r)).fold(Pushed(needed, here))(p =>
              Pushed(
                p.columns ++ needed,
                p.filters.filter(f => here.exists(_.semanticEquals(f))))))
        case n if passesColumnsOn(n) =>
          val wanted = needed ++ n.references
          // as Spark's optimizer pushes predicates: never below a non-deterministic expression
          // (skipped rows would change what `rand()` or `monotonically_increasing_id()` give)
          val below = n match {
            case f: logical.Filter if f.condition.deterministic =>
              filters ++ splitConjunctivePredicates(f.condition)
            case p: Project if p.projectList.forall(_.deterministic) => filters
            case _: SubqueryAlias => filters
            case _ => Nil
          }
          n.children.foreach(c => walk(c, c.outputSet.filter(wanted.contains), below))
        case n => n.children.foreach(c => walk(c, c.outputSet, Nil))
      }
    plan.children.foreach(c => walk(c, c.outputSet, Nil))
    if (found.isEmpty) return plan
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.transformUp {
        case r: StreamingRelationV2 if found.containsKey(r) =>
          val pushed = found.get(r)
          val table = r.table.asInstanceOf[SluiceTable]
          val kept = table.columnsRead(pushed.columns.map(_.name).toSet).toSet
          val output = r.output.filter(a => kept.contains(a.name))
          val filters = sourceFilters(pushed.filters)
          val narrowed = if (output.length == r.output.length) r else r.copy(output = output)
          if (filters.isEmpty || filters == table.streamFilters) narrowed
          else narrowed.copy(table = table.withStreamFilters(filters))
      }
    }
  }

  /**
   * Spark's translation of the conditions a data source can be handed (the deterministic ones),
   * their constant parts folded first as Spark's optimizer folds them before a batch read's
   * pushdown (the analyzed plan still has `id < CAST(40 AS BIGINT)`, which translates to nothing).
   */
  private def sourceFilters(conditions: Seq[Expression]): Seq[Filter] =
    conditions
      // `current_date()` and its kind are not constants of a stream: folded at the start, they
      // would prune files of later days for good (their files are recorded as seen). Spark 4.3
      // refuses to evaluate them (so `folded` leaves them); this does not rely on that.
      .filter(c => c.deterministic && !c.containsPattern(CURRENT_LIKE))
      .flatMap(c => SourceFilters.translate(folded(c)))
      .distinct

  private def folded(condition: Expression): Expression = condition.transformUp {
    case e if e.foldable && !e.isInstanceOf[Literal] =>
      Try(Literal.create(e.eval(), e.dataType)).getOrElse(e)
  }

  /**
   * Nodes whose output is their expressions' values and columns of their children passed on by
   * name: a child's column none of them references and that they do not pass on is not used.
   */
  private def passesColumnsOn(node: LogicalPlan): Boolean = node match {
    case _: Project | _: logical.Filter | _: Aggregate | _: EventTimeWatermark | _: Join |
        _: Sort | _: Deduplicate | _: DeduplicateWithinWatermark | _: SubqueryAlias | _: Window |
        _: GlobalLimit | _: LocalLimit | _: Repartition | _: RepartitionByExpression =>
      true
    case _ => false
  }
}

package sluice.spark

import java.util.IdentityHashMap

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, ExprId, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, AnalysisHelper, EventTimeWatermark, LogicalPlan, Project, Union}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.{StreamingRelationV2, WriteToStream, WriteToStreamStatement}

/**
 * Resolves watermark alignment's maxDrift `auto` when a streaming query starts: the smallest
 * `withWatermark` delay the query puts on the source's event-time column, minus the strategy's
 * out-of-orderness (`EventTimeSettings.withDriftFromWatermark` says why that is the largest
 * drift Spark drops nothing with).
 *
 * Only the plan of a query being started is complete: `DataStreamWriter.start()` analyzes it
 * under a `WriteToStreamStatement`. A DataFrame on its way there (`load()`, then `withWatermark`,
 * ...) is analyzed too, without the watermark it does not have yet, so the rule acts on the
 * started query's plan only, and replaces each such source's table by one whose drift is resolved.
 * Every engine (micro-batch, real-time mode, continuous processing) starts its query this way.
 */
object AutoDrift extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case _: WriteToStreamStatement | _: WriteToStream => resolve(plan)
    case _ => plan
  }

  /** The stream of a table whose `auto` drift was never resolved refuses to start, naming what resolves it. */
  def requireResolved(options: StreamOptions, source: String): Unit =
    options.eventTime.alignment.filter(_.driftUnresolved).foreach { a =>
      throw new IllegalStateException(
        s"$source: maxDrift 'auto' of alignment group '${a.group}' is resolved when the " +
          "query starts, from its withWatermark delay, by the Sluice extensions (spark.sql.extensions=" +
          "sluice.spark.SluiceExtensions; sluice.configure sets it); this query was started without them. Configure " +
          "the session with them, or give a fixed maxDrift.")
    }

  private def resolve(plan: LogicalPlan): LogicalPlan = {
    val pending = plan.collectLeaves().collect {
      case r @ StreamingRelationV2(_, _, t: SluiceTable, _, _, _, _, _, _) if t.driftUnresolved =>
        r -> t
    }
    if (pending.isEmpty) return plan
    val watermarks = plan.collect { case w: EventTimeWatermark => w }
    val resolved = new IdentityHashMap[LogicalPlan, SluiceTable]()
    pending.foreach { case (relation, table) =>
      val column =
        table.eventTimeColumn.get // alignment needs event time: the options refuse it otherwise
      val eventTime = relation.output.find(_.name.equalsIgnoreCase(column)).map(_.exprId)
      val delays = watermarks
        .filter(w => eventTime.exists(origins(w.child, w.eventTime.exprId).contains))
        .map(w => EventTimeWatermark.getDelayMs(w.delay))
      if (delays.isEmpty) {
        throw analysisError(
          s"${table.describe}: maxDrift 'auto' is the withWatermark delay of the query on the " +
            s"source's event-time column '$column' minus the watermark strategy's out-of-orderness, but this query has " +
            s"no withWatermark on '$column'. Add .withWatermark(\"$column\", \"<delay>\") after reading the source, or " +
            "give a fixed maxDrift.")
      }
      // several withWatermark calls on the column (in branches of a join): the smallest delay is
      // safe whichever spark.sql.streaming.multipleWatermarkPolicy combines them with
      val withDrift =
        try table.withWatermarkDelay(delays.min)
        catch {
          case e: IllegalArgumentException => throw analysisError(e.getMessage)
        }
      resolved.put(relation, withDrift)
    }
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.transformUp {
        case r: StreamingRelationV2 if resolved.containsKey(r) => r.copy(table = resolved.get(r))
      }
    }
  }

  /**
   * The output columns of leaves that `id` in `node`'s output is, as is or renamed (through
   * projections, unions, filters, joins); a computed column has none.
   */
  private def origins(node: LogicalPlan, id: ExprId): Set[ExprId] = node match {
    case leaf if leaf.children.isEmpty =>
      if (leaf.output.exists(_.exprId == id)) Set(id) else Set.empty
    case u: Union =>
      val i = u.output.indexWhere(_.exprId == id)
      if (i < 0) Set.empty else u.children.flatMap(c => origins(c, c.output(i).exprId)).toSet
    case p: Project => through(p.projectList, p.child, id)
    case a: Aggregate => through(a.aggregateExpressions, a.child, id)
    case other =>
      other.children.filter(_.output.exists(_.exprId == id)).flatMap(origins(_, id)).toSet
  }

  private def through(named: Seq[NamedExpression], child: LogicalPlan, id: ExprId): Set[ExprId] =
    named.find(_.exprId == id) match {
      case Some(a: Attribute) => origins(child, a.exprId)
      case Some(Alias(a: Attribute, _)) => origins(child, a.exprId)
      case _ => Set.empty
    }

  private def analysisError(message: String): AnalysisException =
    new AnalysisException(message, None, None, None, None, Map.empty, Array.empty)
}

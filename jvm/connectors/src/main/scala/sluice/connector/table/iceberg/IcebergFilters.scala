package sluice.connector.table.iceberg

import java.time.{Instant, LocalDate}

import org.apache.iceberg.expressions.{Expression, Expressions}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.sources._

/**
 * Spark's pushed filters as an Iceberg scan filter, for Iceberg's own planning to skip data files
 * by partition values and by the manifests' column statistics. Only pruning: Spark applies every
 * filter to the rows read either way, so a filter that cannot be expressed is left out. What is
 * given to Iceberg must hold for every row the filter keeps: an `And` may keep the side it can
 * express, which keeps more rows, but not under a `Not`, which would then keep fewer (`NOT (a AND
 * b)` is not `NOT a`); an `Or` needs both sides. Streams hand filters over as written, before
 * Spark's optimizer pushes a `Not` down, so the nesting is what the query says.
 *
 * Float and double values are never pushed: Iceberg leaves NaN out of a file's bounds, and Spark
 * orders NaN above every number, so `d > 1.0` would skip a file whose only such rows are NaN.
 */
private[iceberg] object IcebergFilters {

  def toIceberg(filters: Seq[Filter], columns: Set[String]): Expression =
    toIceberg(filters, columns.iterator.map(c => c -> c).toMap)

  /**
   * The filters on the names `names` gives their columns (a column's name in the source to its
   * name in the schema Iceberg binds the scan's filter in: `IcebergSchema.namesIn`). A filter on a
   * column `names` does not hold is left out as one that cannot be expressed: an `And` keeps its
   * other side, an `Or` or a `Not` of it is left out whole.
   */
  def toIceberg(filters: Seq[Filter], names: Map[String, String]): Expression =
    filters
      .flatMap(convert(_, names, exact = false))
      .foldLeft(Expressions.alwaysTrue(): Expression)((a, b) => Expressions.and(a, b))

  /** `exact`: the expression must keep exactly the rows `f` keeps (under a `Not`). */
  private def convert(
      f: Filter,
      columns: Map[String, String],
      exact: Boolean): Option[Expression] = {
    def col(name: String) = columns.get(name)
    f match {
      case EqualTo(a, v) => for (c <- col(a); l <- literal(v)) yield Expressions.equal(c, l)
      case GreaterThan(a, v) =>
        for (c <- col(a); l <- literal(v)) yield Expressions.greaterThan(c, l)
      case GreaterThanOrEqual(a, v) =>
        for (c <- col(a); l <- literal(v)) yield Expressions.greaterThanOrEqual(c, l)
      case LessThan(a, v) => for (c <- col(a); l <- literal(v)) yield Expressions.lessThan(c, l)
      case LessThanOrEqual(a, v) =>
        for (c <- col(a); l <- literal(v)) yield Expressions.lessThanOrEqual(c, l)
      case In(a, vs) if vs.nonEmpty && !vs.contains(null) =>
        val ls = vs.toSeq.flatMap(literal)
        for (c <- col(a) if ls.size == vs.length) yield Expressions.in(c, ls: _*)
      case IsNull(a) => col(a).map(Expressions.isNull)
      case IsNotNull(a) => col(a).map(Expressions.notNull)
      case StringStartsWith(a, prefix) => col(a).map(Expressions.startsWith(_, prefix))
      case And(l, r) =>
        (convert(l, columns, exact), convert(r, columns, exact)) match {
          case (Some(a), Some(b)) => Some(Expressions.and(a, b))
          case (one, other) if !exact => one.orElse(other)
          case _ => None
        }
      case Or(l, r) =>
        for (a <- convert(l, columns, exact); b <- convert(r, columns, exact))
          yield Expressions.or(a, b)
      case Not(child) => convert(child, columns, exact = true).map(Expressions.not)
      case _ => None
    }
  }

  /** A filter's value as Iceberg's literals take it: timestamps in microseconds, dates in days. */
  private def literal(v: Any): Option[AnyRef] = v match {
    case null => None
    case t: java.sql.Timestamp => Some(Long.box(DateTimeUtils.fromJavaTimestamp(t)))
    case i: Instant => Some(Long.box(DateTimeUtils.instantToMicros(i)))
    case d: java.sql.Date => Some(Int.box(DateTimeUtils.fromJavaDate(d)))
    case d: LocalDate => Some(Int.box(d.toEpochDay.toInt))
    case b: scala.math.BigDecimal => Some(b.bigDecimal)
    case s: String => Some(s)
    case n @ (_: java.lang.Integer | _: java.lang.Long | _: java.lang.Boolean |
        _: java.math.BigDecimal) =>
      Some(n.asInstanceOf[AnyRef])
    case _ => None
  }
}

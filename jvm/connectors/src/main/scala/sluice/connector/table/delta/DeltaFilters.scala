package sluice.connector.table.delta

import java.time.{Instant, LocalDate}

import io.delta.kernel.{expressions => dk}
import io.delta.kernel.expressions.{Column, Literal, Predicate}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.sources._
import org.apache.spark.sql.types._

/**
 * Spark's pushed filters as a Kernel predicate, for Kernel's scan to skip data files by partition
 * values and by the log's column statistics. Only pruning: Spark applies every filter to the rows
 * read either way, so a filter that cannot be expressed is left out. What Kernel is given must
 * hold for every row the filter keeps: an `And` may keep the side it can express, but not under a
 * `Not` (`NOT (a AND b)` is not `NOT a`; streams hand filters over unoptimised); an `Or` needs both
 * sides. A literal is given only in its column's own type, since Kernel compares values of one
 * type; doubles are never given, since Parquet writers leave NaN out of the statistics Kernel
 * skips files by, and Spark orders NaN above every number.
 */
private[delta] object DeltaFilters {

  def toKernel(filters: Seq[Filter], columns: StructType): Option[Predicate] =
    filters.flatMap(convert(_, columns, exact = false)).reduceOption[Predicate](new dk.And(_, _))

  /** `exact`: the predicate must keep exactly the rows `f` keeps (under a `Not`). */
  private def convert(f: Filter, columns: StructType, exact: Boolean): Option[Predicate] = {
    def compare(op: String, a: String, v: Any) =
      for (t <- columns.find(_.name == a).map(_.dataType); l <- literal(t, v))
        yield new Predicate(op, new Column(a), l)
    def unary(op: String, a: String) =
      columns.find(_.name == a).map(_ => new Predicate(op, new Column(a)))
    f match {
      case EqualTo(a, v) => compare("=", a, v)
      case GreaterThan(a, v) => compare(">", a, v)
      case GreaterThanOrEqual(a, v) => compare(">=", a, v)
      case LessThan(a, v) => compare("<", a, v)
      case LessThanOrEqual(a, v) => compare("<=", a, v)
      case IsNull(a) => unary("IS_NULL", a)
      case IsNotNull(a) => unary("IS_NOT_NULL", a)
      case And(l, r) =>
        (convert(l, columns, exact), convert(r, columns, exact)) match {
          case (Some(a), Some(b)) => Some(new dk.And(a, b))
          case (one, other) if !exact => one.orElse(other)
          case _ => None
        }
      case Or(l, r) =>
        for (a <- convert(l, columns, exact); b <- convert(r, columns, exact))
          yield new dk.Or(a, b)
      case Not(child) => convert(child, columns, exact = true).map(new Predicate("NOT", _))
      case _ => None
    }
  }

  /** A filter's value as a Kernel literal of the column's type: timestamps in microseconds, dates in days. */
  private def literal(t: DataType, v: Any): Option[Literal] = (t, v) match {
    case (_, null) => None
    case (BooleanType, b: java.lang.Boolean) => Some(Literal.ofBoolean(b))
    case (IntegerType, i: java.lang.Integer) => Some(Literal.ofInt(i))
    case (LongType, l: java.lang.Long) => Some(Literal.ofLong(l))
    case (StringType, s: String) => Some(Literal.ofString(s))
    case (DateType, d: java.sql.Date) => Some(Literal.ofDate(DateTimeUtils.fromJavaDate(d)))
    case (DateType, d: LocalDate) => Some(Literal.ofDate(d.toEpochDay.toInt))
    case (TimestampType, t: java.sql.Timestamp) =>
      Some(Literal.ofTimestamp(DateTimeUtils.fromJavaTimestamp(t)))
    case (TimestampType, i: Instant) =>
      Some(Literal.ofTimestamp(DateTimeUtils.instantToMicros(i)))
    case _ => None
  }
}

package sluice.connector.file.parquet

import scala.jdk.CollectionConverters._
import scala.util.Try

import org.apache.parquet.filter2.predicate.FilterPredicate
import org.apache.parquet.filter2.statisticslevel.StatisticsFilter
import org.apache.parquet.hadoop.metadata.{BlockMetaData, FileMetaData}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.datasources.DataSourceUtils
import org.apache.spark.sql.execution.datasources.parquet.ParquetFilters
import org.apache.spark.sql.sources._
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String

/**
 * What a Parquet source's filters (`ParquetConfig.filters`) let it skip when it lists files: a
 * file whose partition values no row passing them can have, a row group whose statistics say so.
 * Only a sure "no row passes" skips: a filter this cannot evaluate (another column, a type it
 * cannot compare, a null) skips nothing. Spark still applies every filter to the rows read.
 */
private[parquet] object ParquetPruning {

  /** Whether rows of a file with partition values `values` may pass all `filters`. */
  def partitionMayMatch(filters: Seq[Filter], schema: StructType, values: InternalRow): Boolean =
    schema.isEmpty || !filters.exists(f =>
      new PartitionValues(schema, values).eval(f).contains(false))

  /**
   * The filters Spark's own Parquet conversion (`ParquetFilters`, as `spark.read.parquet` pushes
   * them) makes of `filters` for a file of `meta`, its dates and timestamps rebased as Spark
   * would read them (`datetimeRebaseMode`); those it cannot convert are left out, and so are those
   * comparing with a float or double value (`comparesFloatingPoint`).
   */
  def rowGroupPredicates(
      filters: Seq[Filter],
      meta: FileMetaData,
      config: ParquetConfig): Seq[FilterPredicate] =
    if (filters.isEmpty || !config.rowGroupFilters) Nil
    else {
      val keyValues = meta.getKeyValueMetaData
      val rebase = DataSourceUtils.datetimeRebaseSpec(keyValues.get(_), config.datetimeRebaseMode)
      val convert = new ParquetFilters(
        meta.getSchema,
        true, // dates
        true, // timestamps
        true, // decimals
        true, // string prefixes
        10, // Spark's spark.sql.parquet.pushdown.inFilterThreshold
        config.caseSensitive,
        rebase,
        None)
      filters
        .filterNot(comparesFloatingPoint)
        .flatMap(f => Try(convert.createFilter(f)).toOption.flatten)
    }

  /**
   * Whether `filter` compares a column with a float or double value. Parquet writers leave NaN out
   * of a column chunk's minimum and maximum (pyarrow, so pyiceberg and delta-rs, do), while Spark
   * orders NaN above every number: `d > 1.0` would skip a row group of [0.5, NaN], whose NaN row
   * passes it. `spark.read.parquet` skips it (and loses the row); Sluice does not prune by such a
   * comparison, so its rows are the unpushed plan's.
   */
  private def comparesFloatingPoint(filter: Filter): Boolean = {
    def floating(v: Any) = v.isInstanceOf[java.lang.Double] || v.isInstanceOf[java.lang.Float]
    filter match {
      case And(l, r) => comparesFloatingPoint(l) || comparesFloatingPoint(r)
      case Or(l, r) => comparesFloatingPoint(l) || comparesFloatingPoint(r)
      case Not(c) => comparesFloatingPoint(c)
      case In(_, values) => values.exists(floating)
      case EqualTo(_, v) => floating(v)
      case EqualNullSafe(_, v) => floating(v)
      case GreaterThan(_, v) => floating(v)
      case GreaterThanOrEqual(_, v) => floating(v)
      case LessThan(_, v) => floating(v)
      case LessThanOrEqual(_, v) => floating(v)
      case _ => false
    }
  }

  /**
   * `filter` on other names of its columns (`names`: a column's name to its name in the files,
   * quoted as Spark quotes a pushed filter's column), for the files' row-group statistics; None
   * when it names a column `names` does not hold, or is of a kind this does not know. An `And` keeps
   * the side it can rename, but not under a `Not`, where it must keep exactly the filter's rows.
   */
  def renamed(filter: Filter, names: Map[String, String]): Option[Filter] =
    renamed(filter, names, exact = false)

  private def renamed(f: Filter, names: Map[String, String], exact: Boolean): Option[Filter] = {
    def to(c: String) = names.get(c)
    def both(l: Filter, r: Filter)(make: (Filter, Filter) => Filter) =
      for (a <- renamed(l, names, exact); b <- renamed(r, names, exact)) yield make(a, b)
    f match {
      case EqualTo(c, v) => to(c).map(EqualTo(_, v))
      case EqualNullSafe(c, v) => to(c).map(EqualNullSafe(_, v))
      case GreaterThan(c, v) => to(c).map(GreaterThan(_, v))
      case GreaterThanOrEqual(c, v) => to(c).map(GreaterThanOrEqual(_, v))
      case LessThan(c, v) => to(c).map(LessThan(_, v))
      case LessThanOrEqual(c, v) => to(c).map(LessThanOrEqual(_, v))
      case In(c, vs) => to(c).map(In(_, vs))
      case IsNull(c) => to(c).map(IsNull(_))
      case IsNotNull(c) => to(c).map(IsNotNull(_))
      case StringStartsWith(c, p) => to(c).map(StringStartsWith(_, p))
      case StringEndsWith(c, p) => to(c).map(StringEndsWith(_, p))
      case StringContains(c, p) => to(c).map(StringContains(_, p))
      case And(l, r) if exact => both(l, r)(And(_, _))
      case And(l, r) =>
        (renamed(l, names, exact), renamed(r, names, exact)) match {
          case (Some(a), Some(b)) => Some(And(a, b))
          case (one, other) => one.orElse(other)
        }
      case Or(l, r) => both(l, r)(Or(_, _))
      case Not(c) => renamed(c, names, exact = true).map(Not(_))
      case _ => None
    }
  }

  /** Whether the row group's statistics leave room for a row passing every predicate. */
  def rowGroupMayMatch(predicates: Seq[FilterPredicate], block: BlockMetaData): Boolean =
    !predicates.exists(p => Try(StatisticsFilter.canDrop(p, block.getColumns)).getOrElse(false))

  /**
   * SQL's three-valued logic on one file's partition values: Some(false) only when the filter is
   * false for every row of the file, None when it is null or cannot be told here.
   */
  private final class PartitionValues(schema: StructType, values: InternalRow) {
    private def value(column: String): Option[(Any, Ordering[Any])] =
      Some(schema.fieldNames.indexOf(column)).filter(_ >= 0).map { i =>
        val t = schema(i).dataType
        (values.get(i, t), TypeUtils.getInterpretedOrdering(t))
      }

    private def compare(column: String, bound: Any)(test: Int => Boolean): Option[Boolean] =
      value(column).flatMap { case (v, ordering) =>
        if (v == null || bound == null) None
        else
          Try(test(ordering.compare(v, CatalystTypeConverters.convertToCatalyst(bound)))).toOption
      }

    private def string(column: String)(test: String => Boolean): Option[Boolean] =
      value(column).flatMap {
        case (s: UTF8String, _) => Some(test(s.toString))
        case _ => None
      }

    def eval(filter: Filter): Option[Boolean] = filter match {
      case EqualTo(c, v) => compare(c, v)(_ == 0)
      case EqualNullSafe(c, null) => value(c).map(_._1 == null)
      case EqualNullSafe(c, v) =>
        value(c).flatMap(x => if (x._1 == null) Some(false) else compare(c, v)(_ == 0))
      case GreaterThan(c, v) => compare(c, v)(_ > 0)
      case GreaterThanOrEqual(c, v) => compare(c, v)(_ >= 0)
      case LessThan(c, v) => compare(c, v)(_ < 0)
      case LessThanOrEqual(c, v) => compare(c, v)(_ <= 0)
      case In(c, vs) =>
        val each = vs.toSeq.map(v => compare(c, v)(_ == 0))
        if (each.contains(Some(true))) Some(true)
        else if (each.forall(_.contains(false))) Some(false)
        else None
      case IsNull(c) => value(c).map(_._1 == null)
      case IsNotNull(c) => value(c).map(_._1 != null)
      case StringStartsWith(c, p) => string(c)(_.startsWith(p))
      case StringEndsWith(c, p) => string(c)(_.endsWith(p))
      case StringContains(c, p) => string(c)(_.contains(p))
      case And(l, r) =>
        (eval(l), eval(r)) match {
          case (Some(false), _) | (_, Some(false)) => Some(false)
          case (Some(true), Some(true)) => Some(true)
          case _ => None
        }
      case Or(l, r) =>
        (eval(l), eval(r)) match {
          case (Some(true), _) | (_, Some(true)) => Some(true)
          case (Some(false), Some(false)) => Some(false)
          case _ => None
        }
      case Not(c) => eval(c).map(!_)
      case _ => None
    }
  }
}

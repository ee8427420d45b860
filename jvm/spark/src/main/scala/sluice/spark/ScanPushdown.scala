package sluice.spark

import org.apache.spark.sql.sources.Filter

import sluice.api.{Source, SourceSplit, SupportsColumnPruning, SupportsFilterPushdown}

/**
 * The source a scan reads, given what the query pushes down to it: the columns it uses
 * (`columns`, names of the stream's rows; None: every column) and the filters its rows pass.
 * Where the source can read fewer columns (`SupportsColumnPruning`) it is pruned to them, the
 * watermark strategy's timestamp column always among them (the event time of every row is read
 * from it, used or not); where it can skip data by filters (`SupportsFilterPushdown`) it gets
 * those on its own columns (not the event-time column the binding appends). Every source a scan
 * builds from its options goes through here with the same pushdown, so they all give the same rows.
 */
object ScanPushdown {
  def apply(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      columns: Option[Set[String]],
      filters: Seq[Filter]): Source[SourceSplit, Any] =
    filtered(pruned(source, options, columns), options, filters)

  private def pruned(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      columns: Option[Set[String]]): Source[SourceSplit, Any] = (source, columns) match {
    case (p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked], Some(names))
        if !source.schema(options.layout).fieldNames.forall(names.contains) =>
      val eventTime =
        if (options.eventTime.enabled) options.eventTime.timestampColumn.toSet else Set.empty
      p.withColumns(names ++ eventTime)
    case _ => source
  }

  private def filtered(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      filters: Seq[Filter]): Source[SourceSplit, Any] = source match {
    case f: SupportsFilterPushdown[SourceSplit @unchecked, Any @unchecked] =>
      val own = source.schema(options.layout).fieldNames.toSet
      val usable = filters.filter(_.references.forall(own.contains))
      if (usable.isEmpty) source else f.withFilters(usable)
    case _ => source
  }
}

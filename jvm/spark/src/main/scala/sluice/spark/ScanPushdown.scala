package sluice.spark

import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType

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

  /**
   * The schema of the rows `apply(source, options, Some(required), _)` gives, asked of the source
   * without building its pruned copy (`SupportsColumnPruning.schemaWithColumns`).
   */
  def outputSchema(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      required: Set[String]): StructType = {
    val sourceSchema = source match {
      case p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked]
          if prunes(source, options, required) =>
        p.schemaWithColumns(required ++ eventTimeColumn(options), options.layout)
      case _ => source.schema(options.layout)
    }
    options.eventTime.outputSchema(sourceSchema, s"Sluice ${source.sourceType} source")
  }

  private def prunes(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      names: Set[String]): Boolean =
    !source.schema(options.layout).fieldNames.forall(names.contains)

  private def eventTimeColumn(options: StreamOptions): Set[String] =
    if (options.eventTime.enabled) options.eventTime.timestampColumn.toSet else Set.empty

  private def pruned(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      columns: Option[Set[String]]): Source[SourceSplit, Any] = (source, columns) match {
    case (p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked], Some(names))
        if prunes(source, options, names) =>
      p.withColumns(names ++ eventTimeColumn(options))
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

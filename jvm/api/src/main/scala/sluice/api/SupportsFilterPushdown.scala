package sluice.api

import org.apache.spark.sql.sources.Filter

/**
 * A source that can skip data by the query's filters (Parquet files by their partition values,
 * row groups by their statistics): the binding hands it the filters every row the query keeps
 * passes (Spark's `SupportsPushDownFilters`), and Spark still applies all of them to the rows
 * read, so the source may skip only data none of whose rows can pass them, and may ignore any.
 *
 * What is skipped is decided where the source discovers its splits: skipped data makes no split,
 * so positions and checkpoints are those of the data read. The filters of the query that
 * discovers a split decide it: a query restarted with other filters reads what is discovered
 * after, with its own. As with `SupportsColumnPruning`, the binding applies the same filters to
 * every source it builds from the options.
 */
trait SupportsFilterPushdown[SplitT <: SourceSplit, StateT] { self: Source[SplitT, StateT] =>

  /** This source skipping data none of whose rows passes all of `filters` (on its columns, by name). */
  def withFilters(filters: Seq[Filter]): Source[SplitT, StateT]
}

package sluice.spark

import sluice.api.{Source, SourceSplit, SupportsColumnPruning}

/**
 * The source a scan reads, given the columns the query uses (`required`, names of the stream's
 * rows; None: every column): the source pruned to them where it can read fewer columns
 * (`SupportsColumnPruning`), with the watermark strategy's timestamp column always among them
 * (the event time of every row is read from it, used or not). Every source a scan builds from
 * its options goes through here with the same columns, so they all give the same rows.
 */
object ColumnPruning {
  def apply(
      source: Source[SourceSplit, Any],
      options: StreamOptions,
      required: Option[Set[String]]): Source[SourceSplit, Any] = (source, required) match {
    case (p: SupportsColumnPruning[SourceSplit @unchecked, Any @unchecked], Some(names))
        if !source.schema(options.layout).fieldNames.forall(names.contains) =>
      val eventTime =
        if (options.eventTime.enabled) options.eventTime.timestampColumn.toSet else Set.empty
      p.withColumns(names ++ eventTime)
    case _ => source
  }
}

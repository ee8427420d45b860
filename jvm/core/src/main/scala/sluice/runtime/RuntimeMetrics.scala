package sluice.runtime

/**
 * The keys `SourceRuntime.metrics` reports for every source in query progress. The binding's
 * `MetricDeclarations` declares them by these names, so a rename here renames the declaration.
 */
object RuntimeMetrics {
  val Source = "source"
  val SourceType = "sourceType"
  val Splits = "splits"
  val RecordsRead = "recordsRead"
  val BacklogRecords = "backlogRecords"
  val FinishedSplits = "finishedSplits"
  val MaxEventTimeMs = "maxEventTimeMs"
  val SplitProgress = "splitProgress"

  /** Reported only for compact records; its value is the layout's name. */
  val RecordLayout = "recordLayout"
}

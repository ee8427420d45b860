package sluice.alignment

/**
 * The `watermark.*` and `alignment.*` keys `SourceEventTime.metrics` reports (declared by these
 * names in the binding's `MetricDeclarations`).
 */
object EventTimeMetrics {
  val Status = "watermark.status"
  val IdleSplits = "watermark.idleSplits"
  val PausedSplits = "watermark.pausedSplits"
  val Splits = "watermark.splits"
  val WatermarkMs = "watermarkMs"
  val SpreadMs = "watermark.spreadMs"

  val Group = "alignment.group"
  val MaxDriftMs = "alignment.maxDriftMs"
  val MaxDriftAuto = "alignment.maxDriftAuto"
  val Mode = "alignment.mode"
  val MaxAllowedWatermarkMs = "alignment.maxAllowedWatermarkMs"
  val HorizonMs = "alignment.horizonMs"
  val MinimumSplit = "alignment.minimumSplit"
  val GroupSpreadMs = "alignment.groupSpreadMs"
}

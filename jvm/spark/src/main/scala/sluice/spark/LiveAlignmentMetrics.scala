package sluice.spark

/**
 * The keys `LiveAlignmentChannel.metrics` reports while open batches with alignment run
 * (declared by these names in `MetricDeclarations`).
 */
object LiveAlignmentMetrics {
  val LiveSplits = "liveSplits"
  val LiveMaxAllowedWatermarkMs = "liveMaxAllowedWatermarkMs"
  val LiveMaxObservedDriftMs = "liveMaxObservedDriftMs"
}

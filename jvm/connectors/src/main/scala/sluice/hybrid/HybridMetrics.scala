package sluice.hybrid

/**
 * The keys a hybrid source reports in query progress: `HybridEnumerator`'s and its
 * `RetentionGuard`'s (declared by these names in the binding's `MetricDeclarations`).
 */
object HybridMetrics {
  val ActiveSource = "activeSource"
  val ActiveSourceType = "activeSourceType"
  val RecordsPerSource = "recordsPerSource"
  val LastSwitchAtMs = "lastSwitchAtMs"

  val RetentionHeadroomMs = "retentionHeadroomMs"
  val RetentionStartMs = "retentionStartMs"
  val RetentionCheckedAtMs = "retentionCheckedAtMs"
  val RetentionRecordsLost = "retentionRecordsLost"
}

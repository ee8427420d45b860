package sluice.runtime

/** The `latency.*` keys `LatencyMarkers.metrics` reports (declared by these names in the binding). */
object LatencyMetrics {
  val Markers = "latency.markers"
  val P50Ms = "latency.p50Ms"
  val P99Ms = "latency.p99Ms"
  val MaxMs = "latency.maxMs"
}

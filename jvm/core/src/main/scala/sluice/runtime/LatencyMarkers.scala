package sluice.runtime

/**
 * Latency tracking without marker records (FLIP-371: markers never travel as rows). Executor
 * side: at most once per interval, a reader notes how long ago the record it is emitting arrived
 * (Kafka record timestamp, file modification time). Driver side: the markers of the last batch
 * (`LatencyWindow`) become p50/p99/max figures in query progress.
 */
final class LatencyMarkers(intervalMs: Long) {
  private var nextAtMs = Long.MinValue
  private var sinceCheck = 0

  /** Called per emitted record; returns a marker (ms) when one is due, else -1. Reads the clock every 64 records. */
  def maybeMark(arrivalTimeMs: Long): Long = {
    sinceCheck += 1
    if (sinceCheck < 64 && nextAtMs != Long.MinValue) return -1L
    sinceCheck = 0
    val now = System.currentTimeMillis()
    if (now < nextAtMs) -1L
    else {
      nextAtMs = now + intervalMs
      math.max(0L, now - arrivalTimeMs)
    }
  }
}

object LatencyMarkers {

  /** At most this many markers per split range and task: a bounded report whatever the interval. */
  val MaxPerRange = 1000

  /** `latency.*` metrics over markers, in milliseconds. */
  def metrics(markersMs: Seq[Long]): Map[String, String] =
    if (markersMs.isEmpty) Map(LatencyMetrics.Markers -> "0")
    else {
      val sorted = markersMs.sorted.toIndexedSeq
      def percentile(p: Double) = sorted(
        math.min(sorted.size - 1, math.ceil(p * sorted.size).toInt - 1).max(0))
      Map(
        LatencyMetrics.Markers -> sorted.size.toString,
        LatencyMetrics.P50Ms -> percentile(0.5).toString,
        LatencyMetrics.P99Ms -> percentile(0.99).toString,
        LatencyMetrics.MaxMs -> sorted.last.toString)
    }
}

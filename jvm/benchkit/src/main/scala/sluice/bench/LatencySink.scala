package sluice.bench

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.{ForeachWriter, Row}

/**
 * A foreach sink for real-time mode benchmarks: each row's value is the time (epoch ms, as text)
 * its record was sent; the sink keeps `arrival - sent` per run, in this JVM (local mode), for
 * the Python side to read through py4j; records sent before `sentSinceMs` are not counted. Measured in the writer with the wall clock, since
 * `current_timestamp()` is fixed per batch in real-time mode.
 */
final class LatencySink(run: String, sentSinceMs: Long) extends ForeachWriter[Row] {
  override def open(partitionId: Long, epochId: Long): Boolean = true
  override def process(row: Row): Unit = {
    val now = System.currentTimeMillis()
    val sent = new String(row.getAs[Array[Byte]]("value"), "UTF-8").trim.toLong
    // records sent before the query started wait for it by design: not a latency of the source
    if (sent >= sentSinceMs) LatencySink.add(run, now - sent)
  }
  override def close(errorOrNull: Throwable): Unit = ()
}

object LatencySink {
  private final class Samples {
    var values = new Array[Long](1 << 16)
    var size = 0
  }
  private val runs = new ConcurrentHashMap[String, Samples]()

  private def add(run: String, latencyMs: Long): Unit = {
    val s = runs.computeIfAbsent(run, _ => new Samples)
    s.synchronized {
      if (s.size == s.values.length) s.values = java.util.Arrays.copyOf(s.values, s.size * 2)
      s.values(s.size) = latencyMs
      s.size += 1
    }
  }

  def count(run: String): Int =
    Option(runs.get(run)).map(s => s.synchronized(s.size)).getOrElse(0)

  /** The `p`-th percentile (0..100) of the latencies of `run`, in ms; -1 when there are none. */
  def percentile(run: String, p: Double): Long = Option(runs.get(run))
    .map { s =>
      s.synchronized {
        if (s.size == 0) -1L
        else {
          val sorted = java.util.Arrays.copyOf(s.values, s.size)
          java.util.Arrays.sort(sorted)
          sorted(math.min(s.size - 1, math.ceil(p / 100.0 * s.size).toInt - 1 max 0))
        }
      }
    }
    .getOrElse(-1L)

  def reset(run: String): Unit = runs.remove(run)
}

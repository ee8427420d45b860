package sluice.bench

import org.apache.spark.sql.api.java.UDF1

/**
 * A string identity that takes `sluice.bench.slowMs` milliseconds (a JVM system property of the
 * executors, default 4) per call: it stretches the tasks of the chaos run's executor-kill scenario
 * so that a kill lands inside a running task rather than between batches.
 */
final class SlowIdentity extends UDF1[String, String] {
  override def call(value: String): String = {
    Thread.sleep(SlowIdentity.delayMs)
    value
  }
}

object SlowIdentity {
  private lazy val delayMs: Long =
    sys.props.get("sluice.bench.slowMs").map(_.toLong).getOrElse(4L)
}

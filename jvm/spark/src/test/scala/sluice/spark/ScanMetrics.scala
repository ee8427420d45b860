package sluice.spark

import org.apache.spark.sql.execution.datasources.v2.MicroBatchScanExec
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQuery

/** The SQL metrics of a stream's scan nodes, as the Spark UI's SQL tab shows them. */
object ScanMetrics {

  /** Each metric summed over the scan nodes of the query's last executed batch. */
  def ofLastBatch(query: StreamingQuery): Map[String, Long] = {
    val plan = query.asInstanceOf[StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
    val scans = plan.collect { case scan: MicroBatchScanExec => scan }
    assert(scans.nonEmpty, s"no MicroBatchScanExec in\n$plan")
    scans.flatMap(_.metrics.toSeq).groupMapReduce(_._1)(_._2.value)(_ + _)
  }
}

/** A SQL metric as the Spark UI's SQL tab shows it, summed over every execution the UI kept. */
object UiMetrics {

  /** `label`: the metric's description, as the UI labels it (e.g. "Sluice: records read"). */
  def summed(spark: org.apache.spark.sql.SparkSession, label: String): Long = {
    val store = spark.sharedState.statusStore
    store
      .executionsList()
      .map { e =>
        val ids = store
          .planGraph(e.executionId)
          .allNodes
          .flatMap(_.metrics)
          .filter(_.name == label)
          .map(_.accumulatorId)
          .toSet
        val values = store.executionMetrics(e.executionId)
        ids.toSeq.flatMap(values.get).map(v => scala.util.Try(v.trim.toLong).getOrElse(0L)).sum
      }
      .sum
  }
}

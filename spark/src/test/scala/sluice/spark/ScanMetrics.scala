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

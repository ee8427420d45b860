package org.apache.spark.sluice

import org.apache.spark.SparkEnv
import org.apache.spark.scheduler.ExecutorCacheTaskLocation

/**
 * The executors of the running application as task locations that name one executor (not just
 * its host), in a stable order (host, then executor id): what a source that keeps state on
 * executors hashes its keys onto, as Spark's Kafka source does for its consumer cache. Spark's
 * location classes are private to Spark, hence this bridge in Spark's package.
 *
 * The block manager's peers leave out the driver's own: in local mode there are none, and tasks
 * run in the driver's JVM anyway.
 */
object ExecutorLocations {
  def sorted(): IndexedSeq[String] = Option(SparkEnv.get)
    .map { env =>
      val bm = env.blockManager
      bm.master
        .getPeers(bm.blockManagerId)
        .map(id => ExecutorCacheTaskLocation(id.host, id.executorId))
        .sortBy(l => (l.host, l.executorId))
        .map(_.toString)
        .toIndexedSeq
    }
    .getOrElse(IndexedSeq.empty)
}

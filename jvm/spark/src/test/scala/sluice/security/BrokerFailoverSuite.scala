package sluice.security

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{Slow, SparkSuiteBase}
import sluice.testkit.{KafkaCluster, ProducedRecord, SharedKafkaCluster}

/**
 * A partition's leader dies under a reading query (SIGKILL: no leadership handed over), on the
 * 3-broker test cluster (replication factor 3, `min.insync.replicas=2`): another replica takes
 * over, and the query reads every record exactly once, those written while the node is down and
 * after it came back included. Shares the test JVM's cluster with the security suite.
 */
class BrokerFailoverSuite extends AnyFunSuite with SparkSuiteBase {
  private lazy val cluster: KafkaCluster = SharedKafkaCluster.cluster

  test(
    "micro-batch: the partition leader SIGKILLed mid-read, then restarted; every record once",
    Slow) {
    val topic = "failover-events"
    cluster.kafka.createTopic(topic, partitions = 2)
    def produce(from: Int, until: Int): Unit =
      cluster.kafka.produce(
        topic,
        (from until until).map(i =>
          ProducedRecord.text(value = Some(s"v$i"), partition = Some(i % 2))))
    produce(0, 200)
    val q = spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", cluster.plaintextBootstrap)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .option("maxOffsetsPerTrigger", "20") // many batches: the kill lands between two of them
      .load()
      .selectExpr("CAST(value AS STRING) AS v")
      .writeStream
      .format("memory")
      .queryName("failover_rows")
      .trigger(Trigger.ProcessingTime("100 milliseconds"))
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()
    val victim = cluster.leader(topic, 0).getOrElse(fail("partition 0 has no leader"))
    var down = false
    try {
      eventually("a first batch", q)(q.lastProgress != null && q.lastProgress.numInputRows > 0)
      cluster.killNode(victim)
      down = true
      // acks=all with two replicas left in sync: writes go on while the node is down
      produce(200, 300)
      eventually("another leader of partition 0", q)(cluster.leader(topic, 0).exists(_ != victim))
      eventually("the records written before and while the node was down", q) {
        spark.table("failover_rows").count() >= 300
      }
      cluster.startNode(victim)
      down = false
      produce(300, 400)
      eventually("the records written after it came back", q) {
        spark.table("failover_rows").count() >= 400
      }
      processAllAvailable(q)
      val got = spark.table("failover_rows").collect().map(_.getString(0)).toSeq
      assert(got.size == 400, s"${got.size - got.distinct.size} records read twice")
      assert(got.toSet == (0 until 400).map(i => s"v$i").toSet)
      info(s"node $victim (leader of partition 0) killed after the first batch, restarted later")
    } finally {
      q.stop()
      if (down) cluster.startNode(victim)
    }
  }
}

package sluice.security

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{FaultRun, Slow, SparkSuiteBase}
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
    Slow,
    FaultRun) {
    val topic = "failover-events"
    cluster.kafka.createTopic(topic, partitions = 2)
    def produce(from: Int, until: Int): Unit =
      cluster.kafka.produce(
        topic,
        (from until until).map(i =>
          ProducedRecord.text(value = Some(s"v$i"), partition = Some(i % 2))))
    produce(0, 100)
    val q = spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", cluster.plaintextBootstrap)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      // small batches: the kill lands mid-read, with most of the first 100 records unread
      .option("maxOffsetsPerTrigger", "10")
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
      val readAtKill = spark.table("failover_rows").count()
      assert(readAtKill < 100, s"the kill came after all 100 records were read ($readAtKill)")
      // acks=all with two replicas left in sync: writes go on while the node is down
      produce(100, 150)
      eventually("another leader of partition 0", q)(cluster.leader(topic, 0).exists(_ != victim))
      eventually("the records written before and while the node was down", q) {
        spark.table("failover_rows").count() >= 150
      }
      cluster.startNode(victim)
      down = false
      produce(150, 200)
      eventually("the records written after it came back", q) {
        spark.table("failover_rows").count() >= 200
      }
      processAllAvailable(q)
      val got = spark.table("failover_rows").collect().map(_.getString(0)).toSeq
      assert(got.size == 200, s"${got.size - got.distinct.size} records read twice")
      assert(got.toSet == (0 until 200).map(i => s"v$i").toSet)
      // the look-ups that met the dead leader were asked again of the new one, not waited
      // out until their 60 s limit (Admin retries the node it knows until its time-out)
      val slowest = q.recentProgress.map(_.durationMs.get("triggerExecution").longValue).max
      assert(slowest < 30000, s"a batch took $slowest ms, near the look-ups' 60 s limit")
      info(
        s"node $victim (leader of partition 0) killed with $readAtKill of 100 records read, " +
          s"restarted later; the slowest batch took $slowest ms")
    } finally {
      q.stop()
      if (down) cluster.startNode(victim)
    }
  }
}

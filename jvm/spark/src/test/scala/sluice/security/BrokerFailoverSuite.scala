package sluice.security

import java.util.Properties
import java.util.concurrent.{ExecutionException, TimeUnit}

import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.admin.{Admin, AlterConfigOp, ConfigEntry}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.config.ConfigResource
import org.apache.kafka.common.errors.{NotEnoughReplicasAfterAppendException, NotEnoughReplicasException}
import org.apache.kafka.common.serialization.StringSerializer
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.{FaultRun, Slow, SparkSuiteBase}
import sluice.testkit.{KafkaCluster, ProducedRecord, SharedKafkaCluster}

/**
 * A partition's leader dies under a reading query (SIGKILL: no leadership handed over), on the
 * 3-broker test cluster (replication factor 3, `min.insync.replicas=2`): another replica takes
 * over, and the query reads every record exactly once, those written while the node is down and
 * after it came back included. And writes refused upstream (`min.insync.replicas` above the
 * replicas in sync) under a reading query: it neither fails nor skips. Shares the test JVM's
 * cluster with the security suite.
 */
class BrokerFailoverSuite extends AnyFunSuite with SparkSuiteBase {
  private lazy val cluster: KafkaCluster = SharedKafkaCluster.cluster

  /** `topic`'s values from its earliest offsets, as column `v` of memory table `table`. */
  private def memoryQuery(topic: String, table: String, options: (String, String)*) =
    spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", cluster.plaintextBootstrap)
      .option("subscribe", topic)
      .option("startingOffsets", "earliest")
      .options(options.toMap)
      .load()
      .selectExpr("CAST(value AS STRING) AS v")
      .writeStream
      .format("memory")
      .queryName(table)
      .trigger(Trigger.ProcessingTime("100 milliseconds"))
      .option("checkpointLocation", tempDir("ckpt").toString)
      .start()

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
    // small batches: the kill lands mid-read, with most of the first 100 records unread
    val q = memoryQuery(topic, "failover_rows", "maxOffsetsPerTrigger" -> "10")
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
      // the topic as it is: the test's producer (not idempotent) may have written a record twice
      // across the kill, and both copies are records to read
      val held = cluster.kafka.consume(topic).flatMap(_.valueString)
      assert(got.sorted == held.sorted, s"${got.size - got.distinct.size} records read twice")
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

  test(
    "micro-batch and real-time: writes refused by min.insync.replicas (NotEnoughReplicas) for longer than the reader's patience; no failure, no skip, every record once after",
    Slow,
    FaultRun) {
    val topic = "insync-refused"
    cluster.kafka.createTopic(topic, partitions = 1)
    // The cluster's controllers are its three nodes (a combined quorum): two of them down leave
    // no quorum, so the partition's in-sync replicas could not shrink, and acks=all producers
    // time out instead of being refused. The same refusal with the quorum alive: the topic asks
    // for all three replicas in sync, and one node stops.
    val admin =
      Admin.create(Map[String, AnyRef]("bootstrap.servers" -> cluster.plaintextBootstrap).asJava)
    try
      admin
        .incrementalAlterConfigs(
          Map(
            new ConfigResource(ConfigResource.Type.TOPIC, topic) -> Seq(new AlterConfigOp(
              new ConfigEntry("min.insync.replicas", "3"),
              AlterConfigOp.OpType.SET)).asJavaCollection).asJava)
        .all()
        .get(30, TimeUnit.SECONDS)
    finally admin.close()
    val props = new Properties()
    props.put("bootstrap.servers", cluster.plaintextBootstrap)
    props.put("acks", "all")
    // each refusal reaches the test at once, not after retries until delivery.timeout.ms
    props.put("enable.idempotence", "false")
    props.put("retries", "0")
    props.put("max.block.ms", "10000")
    props.put("request.timeout.ms", "5000")
    props.put("delivery.timeout.ms", "10000")
    val producer =
      new KafkaProducer[String, String](props, new StringSerializer, new StringSerializer)
    val acked = scala.collection.mutable.ArrayBuffer.empty[String]
    var refusals = 0
    def send(value: String): Boolean =
      try {
        producer.send(new ProducerRecord[String, String](topic, 0, null, value)).get()
        acked += value
        true
      } catch {
        case e: ExecutionException
            if e.getCause.isInstanceOf[NotEnoughReplicasException] ||
              e.getCause.isInstanceOf[NotEnoughReplicasAfterAppendException] =>
          refusals += 1
          false
        // not acknowledged in time (a node just restarted, a busy machine: "Disconnected from
        // node 3 due to timeout"): not accepted, and maybe in the topic, which the end compares
        case e: ExecutionException
            if e.getCause.isInstanceOf[org.apache.kafka.common.errors.TimeoutException] =>
          false
      }
    val pollTimeoutMs = 3000L
    var stopped: Option[Int] = None
    try {
      (0 until 50).foreach(i => assert(send(s"v$i"), s"v$i refused with every node up"))
      // the writes stay refused for longer than pollTimeoutMs: no records is no stall
      val q = memoryQuery(
        topic,
        "insync_rows",
        "maxOffsetsPerTrigger" -> "20",
        "kafkaConsumer.pollTimeoutMs" -> pollTimeoutMs.toString)
      // a real-time query's reader holds an open range the whole time: it is the one that
      // waits for records through the refusal, and must tell brokers that answer with no
      // records from brokers that do not answer
      val live = spark.readStream
        .format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", cluster.plaintextBootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafkaConsumer.pollTimeoutMs", pollTimeoutMs.toString)
        .load()
        .selectExpr("CAST(value AS STRING) AS v")
        .writeStream
        .foreach(sluice.spark.RealTimeSink.writer("insync-live"))
        .outputMode("update")
        .trigger(Trigger.RealTime("5 seconds"))
        .option("checkpointLocation", tempDir("ckpt-live").toString)
        .start()
      try {
        eventually("the first 50 records", q)(spark.table("insync_rows").count() >= 50)
        val leader = cluster.leader(topic, 0).getOrElse(fail("partition 0 has no leader"))
        val follower = Seq(1, 2, 3).find(_ != leader).get
        cluster.stopNode(follower)
        stopped = Some(follower)
        // the leader drops the stopped node from the in-sync replicas, then refuses acks=all
        // writes; a write accepted before that is in the topic (and must be read)
        var i = 50
        eventually("the producer refused with NotEnoughReplicas", q) {
          i += 1
          !send(s"v$i")
        }
        val refusedSince = System.nanoTime()
        // refused for longer than the reader's patience, while the query keeps planning batches
        eventually("the writes refused for longer than kafkaConsumer.pollTimeoutMs", q) {
          i += 1
          assert(!send(s"v$i"), s"v$i accepted with a node stopped")
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - refusedSince) > 2 * pollTimeoutMs
        }
        assert(q.isActive && q.exception.isEmpty, q.exception)
        assert(live.isActive && live.exception.isEmpty, live.exception)
        cluster.startNode(follower)
        stopped = None
        // the producer resumes once the node is in sync again
        eventually("the producer accepted again", q) {
          i += 1
          send(s"v$i")
        }
        (i + 1 until i + 51).foreach(j =>
          eventually(s"v$j accepted after the restart", q)(send(s"v$j")))
        // the topic as it is: records refused after their append (NotEnoughReplicasAfterAppend)
        // may be in it too, and are read like any other
        val held = cluster.kafka.consume(topic).flatMap(_.valueString)
        eventually("every record the topic holds", q)(
          spark.table("insync_rows").count() >= held.size)
        processAllAvailable(q)
        val got = spark.table("insync_rows").collect().map(_.getString(0)).toSeq
        assert(got.sorted == held.sorted, s"${got.size - got.distinct.size} read twice")
        assert(acked.toSet.subsetOf(got.toSet))
        assert(refusals > 1 && q.exception.isEmpty)
        // the real-time query read them too, never having failed (no restart: each once)
        val liveGot = sluice.spark.RealTimeSink
          .await("insync-live", "every record the topic holds", live)(_.size >= held.size)
          .map(_.getString(0))
        assert(
          liveGot.sorted == held.sorted,
          s"${liveGot.size - liveGot.distinct.size} read twice")
        info(
          s"node $follower stopped: $refusals writes refused over more than " +
            s"${2 * pollTimeoutMs} ms, " +
            s"${acked.size} acknowledged, ${held.size} in the topic, all read once")
      } finally {
        q.stop()
        live.stop()
      }
    } finally {
      producer.close()
      stopped.foreach(cluster.startNode)
      cluster.kafka.command("await-in-sync")
    }
  }
}

package sluice.testkit

import java.time.Duration
import java.util.Properties

import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.ByteArrayDeserializer

/**
 * Load for benchmarks, generated inside the broker's JVM (millions of records would be slow to
 * ship through the JSON-lines protocol), and the plain-consumer ceiling they are compared with.
 */
private[testkit] object BenchLoad {

  /**
   * Writes `count` records round-robin over the topic's partitions: key = the record number,
   * value = `valueBytes` bytes, timestamp = `baseTimestampMs` + the record number. Records the
   * producer gave up on (a batch for a just-created topic can expire before its leader is known)
   * are sent again, up to three rounds; what still fails fails the command.
   */
  def produce(
      producer: KafkaProducer[Array[Byte], Array[Byte]],
      topic: String,
      partitions: Int,
      count: Long,
      valueBytes: Int,
      baseTimestampMs: Long): Long = {
    val value = Array.tabulate[Byte](valueBytes)(i => ('a' + i % 26).toByte)
    var toSend: Iterator[Long] = Iterator.range(0L, count)
    var round = 0
    var lastError: Exception = null
    while (toSend.hasNext) {
      if (round == 3) {
        throw new IllegalStateException(
          s"records of $topic could not be written after 3 rounds (last error: $lastError)",
          lastError)
      }
      val failed = new java.util.concurrent.ConcurrentLinkedQueue[java.lang.Long]()
      toSend.foreach { i =>
        val key = java.lang.Long.toString(i).getBytes("UTF-8")
        producer.send(
          new ProducerRecord(
            topic,
            Int.box((i % partitions).toInt),
            Long.box(baseTimestampMs + i),
            key,
            value),
          (_, e) => if (e != null) { failed.add(i); lastError = e })
      }
      producer.flush()
      toSend = failed.asScala.iterator.map(_.longValue()).toSeq.sorted.iterator
      round += 1
    }
    count
  }

  /**
   * Reads every partition from its start to its current end with one plain consumer loop and
   * returns (records, milliseconds): the ceiling any Kafka source on one JVM can reach.
   */
  def consumeAll(bootstrapServers: String, partitions: Seq[TopicPartition]): (Long, Long) = {
    val props = new Properties()
    props.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    props.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    props.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")
    val consumer = new KafkaConsumer(props, new ByteArrayDeserializer, new ByteArrayDeserializer)
    try {
      consumer.assign(partitions.asJava)
      val ends =
        consumer.endOffsets(partitions.asJava).asScala.map { case (tp, o) => tp -> o.longValue }
      consumer.seekToBeginning(partitions.asJava)
      val started = System.nanoTime()
      var records = 0L
      var bytes = 0L
      while (partitions.exists(tp => consumer.position(tp) < ends(tp))) {
        val batch = consumer.poll(Duration.ofMillis(500))
        val it = batch.iterator()
        while (it.hasNext) {
          val r = it.next()
          bytes += r.serializedValueSize() // touch each record, as a real reader would
          records += 1
        }
      }
      (records, (System.nanoTime() - started) / 1000000)
    } finally consumer.close()
  }
}

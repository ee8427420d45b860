package sluice.testkit

import java.nio.charset.StandardCharsets
import java.util.Properties

import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.serialization.ByteArraySerializer

/**
 * A transactional producer for the tests of `read_committed` reads: one transaction at a time,
 * its records written (flushed) before it is committed or aborted, so a test can read while one
 * is open. The broker's own client, in the test's JVM: the embedded broker's command protocol
 * produces outside transactions.
 */
final class TransactionalProducer(bootstrapServers: String, transactionalId: String)
    extends AutoCloseable {
  private val producer = {
    val props = new Properties()
    props.put("bootstrap.servers", bootstrapServers)
    props.put("transactional.id", transactionalId)
    val bytes = new ByteArraySerializer
    new KafkaProducer[Array[Byte], Array[Byte]](props, bytes, bytes)
  }
  producer.initTransactions()

  /** Begins a transaction and writes `values` (UTF-8, no key) into `partition` of `topic`. */
  def write(topic: String, partition: Int, values: Seq[String]): Unit = {
    producer.beginTransaction()
    values.foreach { v =>
      producer.send(
        new ProducerRecord[Array[Byte], Array[Byte]](
          topic,
          partition,
          null,
          v.getBytes(StandardCharsets.UTF_8)))
    }
    producer.flush()
  }

  def commit(): Unit = producer.commitTransaction()
  def abort(): Unit = producer.abortTransaction()
  override def close(): Unit = producer.close()
}

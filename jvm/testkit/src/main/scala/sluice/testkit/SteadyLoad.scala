package sluice.testkit

import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}

/**
 * A producer at a steady rate, for latency benchmarks: `rate` records a second for `seconds`,
 * round-robin over the topic's partitions, each with its send time (epoch ms, as text) as value
 * and the send time plus `timestampShiftMs` as record timestamp (a negative shift makes a topic
 * that lags in event time). Runs on its own thread; `start` returns at once.
 */
private[testkit] object SteadyLoad {
  def start(
      producer: KafkaProducer[Array[Byte], Array[Byte]],
      topic: String,
      partitions: Int,
      rate: Int,
      seconds: Int,
      timestampShiftMs: Long): Unit = {
    val thread = new Thread(
      () => {
        val started = System.nanoTime()
        val total = rate.toLong * seconds
        var sent = 0L
        while (sent < total) {
          // send what the rate allows by now, in small bursts, then wait for the next millisecond
          val due = math.min(total, (System.nanoTime() - started) / 1000L * rate / 1000000L + 1)
          while (sent < due) {
            val now = System.currentTimeMillis()
            producer.send(
              new ProducerRecord(
                topic,
                Int.box((sent % partitions).toInt),
                Long.box(now + timestampShiftMs),
                null,
                java.lang.Long.toString(now).getBytes("UTF-8")))
            sent += 1
          }
          Thread.sleep(1)
        }
        producer.flush()
      },
      s"steady-load-$topic")
    thread.setDaemon(true)
    thread.start()
  }
}

package sluice.connector.kafka

import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import sluice.SparkSuiteBase
import sluice.SecretCapture.{capturingLogs, filesUnder, stackTrace}
import sluice.testkit.{KafkaSuiteBase, ProducedRecord}

/** Credentials given as consumer properties must not leak anywhere a user or operator can look. */
class KafkaSecretsSuite extends AnyFunSuite with KafkaSuiteBase with SparkSuiteBase {

  private val secret = "PLANTED-SECRET-7f3a"

  test("a planted credential appears in no log, error, offset log, progress or metric") {
    val topic = "secrets"
    kafka.createTopic(topic, 2)
    kafka.produce(
      topic,
      (0 until 20).map(i => ProducedRecord.text(value = Some(s"v$i"), partition = Some(i % 2))))
    val ckpt = tempDir("ckpt")
    def query(t: String) = spark.readStream
      .format("sluice")
      .option("source", "kafka")
      .option("kafka.bootstrap.servers", kafka.bootstrapServers)
      .option("subscribe", t)
      .option("startingOffsets", "earliest")
      .option("kafka.ssl.truststore.password", secret)
      .option(
        "kafka.sasl.jaas.config",
        s"""org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="$secret";""")
      .load()

    val ((progress, failure), logs) = capturingLogs {
      val ok = query(topic).writeStream
        .format("noop")
        .option("checkpointLocation", ckpt.toString)
        .trigger(Trigger.AvailableNow())
        .start()
      awaitEnd(ok, timeoutMs = 60000)
      assert(ok.exception.isEmpty, ok.exception)
      val progress = ok.recentProgress.map(_.json).mkString("\n") +
        ok.recentProgress.flatMap(_.sources.map(_.metrics.toString)).mkString("\n")
      // a failing query: its error and everything logged on the way
      kafka.deleteTopic(topic)
      val bad = query(topic).writeStream
        .format("noop")
        .option("checkpointLocation", ckpt.toString)
        .trigger(Trigger.AvailableNow())
        .start()
      val e = intercept[Exception](bad.awaitTermination(60000))
      (progress, stackTrace(e))
    }
    assert(progress.contains("recordsRead"), "the progress to check is empty")
    assert(failure.contains("is gone"), failure)
    assert(
      logs.contains("ConsumerConfig values") || logs.contains("AdminClientConfig values"),
      "the Kafka clients' configuration dump was not captured, so the log check would prove nothing")
    Seq(
      "logs" -> logs,
      "error" -> failure,
      "progress and metrics" -> progress,
      "checkpoint (offset log, commits, progress store)" -> filesUnder(ckpt)).foreach {
      case (where, text) =>
        assert(!text.contains(secret), s"the secret leaked into the $where")
    }
  }
}

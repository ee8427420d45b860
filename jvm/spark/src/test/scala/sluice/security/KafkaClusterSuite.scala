package sluice.security

import java.nio.charset.StandardCharsets
import java.time.Duration
import java.util.{Collections, Properties}
import java.util.concurrent.TimeUnit

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.admin.{Admin, ConfigEntry}
import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.config.ConfigResource
import org.apache.kafka.common.errors.{SaslAuthenticationException, SslAuthenticationException, TopicAuthorizationException}
import org.apache.kafka.common.serialization.ByteArrayDeserializer
import org.scalatest.funsuite.AnyFunSuite

import sluice.testkit.{ProducedRecord, SharedKafkaCluster}

/**
 * The test cluster is what the security and failover suites take it for: three brokers holding
 * every partition three times, each listener reachable with its own credentials, and ACLs that
 * refuse what they do not grant. Plain Kafka clients, no Spark: here rather than in the
 * connectors' tests (where the cluster's client lives) so that it shares the cluster of the
 * suites that use it, one start in a run (a start is ~25 CPU-s of four JVMs).
 */
class KafkaClusterSuite extends AnyFunSuite {
  private lazy val cluster = SharedKafkaCluster.cluster

  private val topic = "cluster-open"
  private val describeOnly = "cluster-describe-only"
  private val values = (0 until 30).map(i => s"v$i")

  private lazy val prepared: Unit = {
    Seq(topic, describeOnly).foreach { t =>
      cluster.kafka.createTopic(t, partitions = 3)
      cluster.kafka.produce(
        t,
        values.zipWithIndex.map { case (v, i) =>
          ProducedRecord.text(value = Some(v), partition = Some(i % 3))
        })
    }
    cluster.grant("reader", topic, "READ", "DESCRIBE")
    cluster.grant("reader", describeOnly, "DESCRIBE")
  }

  private def consumer(props: Map[String, String]): KafkaConsumer[Array[Byte], Array[Byte]] = {
    val p = new Properties()
    props.foreach { case (k, v) => p.setProperty(k, v) }
    p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false")
    p.setProperty(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000")
    new KafkaConsumer(p, new ByteArrayDeserializer, new ByteArrayDeserializer)
  }

  /** Every value of `t` read by a consumer with `props`, assigned all partitions from the start. */
  private def readAll(props: Map[String, String], t: String): Seq[String] = {
    val c = consumer(props)
    try {
      val partitions = (0 until 3).map(new TopicPartition(t, _))
      c.assign(partitions.asJava)
      c.seekToBeginning(partitions.asJava)
      val ends = c.endOffsets(partitions.asJava).asScala
      val out = mutable.ArrayBuffer.empty[String]
      val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30)
      while (partitions.exists(tp => c.position(tp) < ends(tp))) {
        assert(System.nanoTime() < deadline, s"timed out reading $t")
        out ++= c
          .poll(Duration.ofMillis(100))
          .asScala
          .map(r => new String(r.value(), StandardCharsets.UTF_8))
      }
      out.toSeq
    } finally c.close(Duration.ofSeconds(2))
  }

  /** What reading `t` with `props` throws, and how long it took to throw it. */
  private def refusal(props: Map[String, String], t: String): (Throwable, Long) = {
    val began = System.nanoTime()
    val e = intercept[Throwable](readAll(props, t))
    (e, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began))
  }

  test("three brokers hold each partition three times, two in sync required") {
    prepared
    val admin =
      Admin.create(Map[String, AnyRef]("bootstrap.servers" -> cluster.plaintextBootstrap).asJava)
    try {
      assert(admin.describeCluster().nodes().get().size == 3)
      val desc =
        admin.describeTopics(Collections.singletonList(topic)).allTopicNames().get().get(topic)
      assert(desc.partitions().asScala.map(_.replicas().size).toSet == Set(3))
      val resource = new ConfigResource(ConfigResource.Type.TOPIC, topic)
      val config: ConfigEntry = admin
        .describeConfigs(Collections.singletonList(resource))
        .all()
        .get()
        .get(resource)
        .get("min.insync.replicas")
      assert(config.value() == "2")
    } finally admin.close()
    info(s"the cluster started in ${cluster.kafka.startupMillis} ms")
  }

  test("a granted user reads every record over SASL_SSL (SCRAM-SHA-512) and over mutual TLS") {
    prepared
    val expected = values.sorted
    assert(
      readAll(Map("bootstrap.servers" -> cluster.plaintextBootstrap), topic).sorted == expected)
    assert(readAll(cluster.scramProperties("reader"), topic).sorted == expected)
    assert(readAll(cluster.tlsProperties("reader"), topic).sorted == expected)
  }

  test("wrong credentials and untrusted certificates are refused at once") {
    prepared
    val cases = Seq(
      "a wrong SCRAM password" -> cluster.scramProperties("reader", password = Some("wrong-pw")),
      "an unknown SCRAM user" -> cluster.scramProperties("stranger", password = Some("x")),
      "a trust store without the brokers' authority (SASL_SSL)" ->
        cluster.scramProperties("reader", trust = cluster.untrustedTruststore),
      "a trust store without the brokers' authority (SSL)" ->
        cluster.tlsProperties("reader", trust = cluster.untrustedTruststore),
      "no client certificate on the SSL listener" ->
        cluster.tlsProperties("reader").filter { case (k, _) => !k.startsWith("ssl.key") })
    cases.foreach { case (what, props) =>
      val (e, millis) = refusal(props, topic)
      val expected =
        if (what.contains("SCRAM")) classOf[SaslAuthenticationException]
        else classOf[SslAuthenticationException]
      assert(expected.isInstance(e), s"$what: ${e.getClass.getName}: ${e.getMessage}")
      assert(millis < 15000, s"$what took $millis ms to fail")
    }
  }

  test("ACLs: no READ refuses the fetch, no DESCRIBE refuses the look-up, over both listeners") {
    prepared
    Seq(
      "reader on a topic it may only describe" -> (("reader", describeOnly)),
      "nobody" -> (("nobody", topic))).foreach { case (what, (user, t)) =>
      Seq(cluster.scramProperties(user), cluster.tlsProperties(user)).foreach { props =>
        val (e, millis) = refusal(props, t)
        assert(
          e.isInstanceOf[TopicAuthorizationException],
          s"$what over ${props("security.protocol")}: ${e.getClass.getName}: ${e.getMessage}")
        assert(e.getMessage.contains(t), e.getMessage)
        assert(millis < 15000, s"$what took $millis ms to fail")
      }
    }
  }
}

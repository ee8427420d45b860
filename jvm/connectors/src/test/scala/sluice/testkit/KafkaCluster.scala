package sluice.testkit

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/** A user of the test cluster: its SCRAM password and its client certificate's key store. */
final case class ClusterUser(
    name: String,
    scramPassword: String,
    keystore: String,
    keystorePassword: String)

/**
 * The test cluster (`sluice.testkit.KafkaClusterMain`: 3 KRaft nodes in JVMs of their own,
 * replication factor 3, `min.insync.replicas=2`, PLAINTEXT, SASL_SSL with SCRAM-SHA-512 and SSL
 * with client certificates, ACLs), driven like [[EmbeddedKafka]], whose topic and record commands
 * [[kafka]] offers (over the PLAINTEXT listener, as a super user). Certificates and passwords are
 * made when it starts; users `admin` (super user), `reader` and `nobody` may do nothing else until
 * [[grant]]ed. Start it once per test JVM ([[SharedKafkaCluster]]): it costs three broker JVMs.
 */
final class KafkaCluster(startTimeoutMs: Long = 180000) {
  val kafka = new EmbeddedKafka(
    startTimeoutMs = startTimeoutMs,
    // keytool runs in that JVM (sluice.testkit.Certificates), whose class Java 17 does not export
    jvmOptions = Seq(
      "-Xmx128m",
      "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1",
      "--add-exports=java.base/sun.security.tools.keytool=ALL-UNNAMED"),
    main = Seq("sluice.testkit.KafkaClusterMain"))

  private var security: JsonNode = _

  def start(): this.type = {
    kafka.start()
    security = new ObjectMapper().readTree(kafka.command("security"))
    this
  }

  def stop(): Unit = kafka.stop()

  private def text(path: String*): String =
    path.foldLeft(security)((node, name) => node.get(name)).textValue()

  /** The listeners, as `bootstrap.servers`. */
  def plaintextBootstrap: String = text("plaintext")
  def saslSslBootstrap: String = text("saslSsl")
  def sslBootstrap: String = text("ssl")

  /** The trust store holding the authority that signed the brokers' certificates. */
  def truststore: KeyStoreFile = store("truststore")

  /** A trust store of another authority: the brokers' certificates are not trusted with it. */
  def untrustedTruststore: KeyStoreFile = store("untrustedTruststore")

  private def store(name: String): KeyStoreFile =
    KeyStoreFile(text(name, "path"), text(name, "password"))

  def user(name: String): ClusterUser = ClusterUser(
    name,
    text("users", name, "scramPassword"),
    text("users", name, "keystore"),
    text("users", name, "keystorePassword"))

  /** Allows `user` the operations (READ, DESCRIBE, ...) on `topic`; returns once every node has it. */
  def grant(user: String, topic: String, operations: String*): Unit =
    kafka.command("grant", user, topic, operations.mkString(","))

  /** The node leading the partition now, if any. */
  def leader(topic: String, partition: Int): Option[Int] =
    kafka.command("leader", topic, partition.toString).toIntOption

  def killNode(id: Int): Unit = kafka.command("kill-node", id.toString)
  def stopNode(id: Int): Unit = kafka.command("stop-node", id.toString)
  def startNode(id: Int): Unit = kafka.command("start-node", id.toString)

  /**
   * Client properties (no `kafka.` prefix) for SASL_SSL with SCRAM-SHA-512 as `user`, with its
   * password unless another is given, trusting `trust`.
   */
  def scramProperties(
      user: String,
      password: Option[String] = None,
      trust: KeyStoreFile = truststore): Map[String, String] = Map(
    "bootstrap.servers" -> saslSslBootstrap,
    "security.protocol" -> "SASL_SSL",
    "sasl.mechanism" -> "SCRAM-SHA-512",
    "sasl.jaas.config" ->
      ("org.apache.kafka.common.security.scram.ScramLoginModule required " +
        s"""username="$user" password="${password.getOrElse(
            this.user(user).scramPassword)}";""")) ++
    trustProperties(trust)

  /** Client properties for mutual TLS with `user`'s certificate, trusting `trust`. */
  def tlsProperties(user: String, trust: KeyStoreFile = truststore): Map[String, String] = {
    val u = this.user(user)
    Map(
      "bootstrap.servers" -> sslBootstrap,
      "security.protocol" -> "SSL",
      "ssl.keystore.type" -> "PKCS12",
      "ssl.keystore.location" -> u.keystore,
      "ssl.keystore.password" -> u.keystorePassword,
      "ssl.key.password" -> u.keystorePassword) ++ trustProperties(trust)
  }

  private def trustProperties(trust: KeyStoreFile): Map[String, String] = Map(
    "ssl.truststore.type" -> "PKCS12",
    "ssl.truststore.location" -> trust.path,
    "ssl.truststore.password" -> trust.password)
}

/** A key store file and its password (key and store share it). */
final case class KeyStoreFile(path: String, password: String)

/** The test JVM's one cluster, started by the first suite that needs it, stopped at JVM exit. */
object SharedKafkaCluster {
  lazy val cluster: KafkaCluster = new KafkaCluster().start()
}

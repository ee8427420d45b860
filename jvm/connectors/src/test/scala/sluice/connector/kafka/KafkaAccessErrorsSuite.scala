package sluice.connector.kafka

import java.security.cert.{CertPathValidatorException, CertificateExpiredException}
import javax.net.ssl.SSLHandshakeException

import org.apache.kafka.common.errors.{SslAuthenticationException, UnsupportedSaslMechanismException}
import org.scalatest.funsuite.AnyFunSuite

/**
 * How the brokers' refusals are explained, from exception chains as Kafka's clients raise them
 * (the ones the test cluster produces cheaply are in `KafkaSecuritySuite`); no broker.
 */
class KafkaAccessErrorsSuite extends AnyFunSuite {

  private def config(options: (String, String)*): KafkaConfig =
    KafkaConfig.fromOptions(
      Map("kafka.bootstrap.servers" -> "broker:9093", "subscribe" -> "events") ++ options)

  private val mutualTls = config(
    "kafka.security.protocol" -> "SSL",
    "kafka.ssl.keystore.location" -> "reader.p12",
    "kafka.ssl.truststore.location" -> "truststore.p12")
  private val oneWayTls =
    config(
      "kafka.security.protocol" -> "SSL",
      "kafka.ssl.truststore.location" -> "truststore.p12")

  private def handshake(cause: Throwable): SslAuthenticationException =
    new SslAuthenticationException("SSL handshake failed", cause)

  private def explained(e: Throwable, c: KafkaConfig): String =
    KafkaAccessErrors.explain(e, c, KafkaAccessErrors.Describe).getMessage

  private def assertSays(text: String, words: String*)(absent: String*): Unit = {
    words.foreach(w => assert(text.contains(w), s"'$w' not in: $text"))
    absent.foreach(w => assert(!text.contains(w), s"'$w' in: $text"))
  }

  test("a host name the brokers' certificate does not hold names the SAN and the option") {
    Seq(
      "No subject alternative names matching IP address 127.0.0.1 found",
      "No name matching broker found").foreach { why =>
      val e = handshake(new SSLHandshakeException(why))
      assertSays(
        explained(e, mutualTls),
        why,
        "subject alternative names (SAN)",
        "kafka.ssl.endpoint.identification.algorithm")("trust store", "kafka.ssl.key.password")
    }
  }

  test("an expired certificate is said to be expired") {
    val expired = new SSLHandshakeException(
      "PKIX path validation failed: java.security.cert.CertPathValidatorException: " +
        "validity check failed")
    expired.initCause(
      new CertPathValidatorException(
        "validity check failed",
        new CertificateExpiredException("NotAfter: Thu Jan 01 00:00:00 UTC 2026")))
    val text = explained(handshake(expired), mutualTls)
    assertSays(text, "has expired", "NotAfter", "kafka.ssl.keystore.location")("not trusted")
    assertSays(explained(handshake(expired), oneWayTls), "has expired")("kafka.ssl.keystore")
  }

  test("TLS against a listener of another protocol names kafka.security.protocol and the port") {
    Seq("Unsupported or unrecognized SSL message", "Remote host terminated the handshake")
      .foreach { why =>
        assertSays(
          explained(handshake(new SSLHandshakeException(why)), oneWayTls),
          "kafka.security.protocol (SSL)",
          "kafka.bootstrap.servers",
          "PLAINTEXT")("kafka.ssl.keystore")
      }
  }

  test("a SASL mechanism the brokers do not enable names kafka.sasl.mechanism") {
    val e = new UnsupportedSaslMechanismException(
      "Client SASL mechanism 'PLAIN' not enabled in the server, enabled mechanisms are " +
        "[SCRAM-SHA-512]")
    val c = config(
      "kafka.security.protocol" -> "SASL_SSL",
      "kafka.sasl.mechanism" -> "PLAIN",
      "kafka.sasl.jaas.config" ->
        ("org.apache.kafka.common.security.plain.PlainLoginModule required " +
          "username=\"reader\" password=\"secret-value\";"))
    assertSays(
      explained(e, c),
      "SASL mechanism PLAIN of kafka.sasl.mechanism",
      "[SCRAM-SHA-512]")("secret-value")
  }

  test("one-way TLS (no key store) is never told about the key store's principal") {
    val refused = handshake(new SSLHandshakeException("Received fatal alert: bad_certificate"))
    assertSays(explained(refused, oneWayTls), "has none", "set kafka.ssl.keystore.location")(
      "refused this client's certificate")
    assertSays(
      explained(refused, mutualTls),
      "refused this client's certificate",
      "kafka.ssl.keystore.location")("has none")
    val other = handshake(new SSLHandshakeException("something else"))
    assertSays(explained(other, oneWayTls), "kafka.ssl.truststore.location")("kafka.ssl.keystore")
    val denied = new org.apache.kafka.common.errors.TopicAuthorizationException(
      "denied",
      java.util.Collections.singleton("events"))
    assertSays(explained(denied, oneWayTls), "User:ANONYMOUS")("the principal of the certificate")
  }

  test("DESCRIBE_CONFIGS refused names that ACL, not DESCRIBE") {
    val denied = new org.apache.kafka.common.errors.TopicAuthorizationException(
      "denied",
      java.util.Collections.singleton("events"))
    val text = KafkaAccessErrors
      .explain(denied, mutualTls, KafkaAccessErrors.DescribeConfigs)
      .getMessage
    assertSays(
      text,
      "DESCRIBE_CONFIGS on 'events'",
      "Grant DESCRIBE_CONFIGS",
      "--operation DescribeConfigs --topic events")("READ and DESCRIBE")
  }

  /** What Kafka 3.9's clients raise when a store will not open: built inside the client's constructor. */
  private def unopened(path: String, why: Throwable): Throwable =
    new org.apache.kafka.common.KafkaException(
      "Failed to create new KafkaAdminClient",
      new org.apache.kafka.common.KafkaException(
        "Failed to create new NetworkClient",
        new org.apache.kafka.common.KafkaException(
          s"Failed to load SSL keystore $path of type PKCS12",
          why)))

  private def wrongPassword: Throwable = new java.io.IOException(
    "keystore password was incorrect",
    new java.security.UnrecoverableKeyException(
      "failed to decrypt safe contents entry: javax.crypto.BadPaddingException: Given final " +
        "block not properly padded."))

  test("a key or trust store that will not open names that store's options, told apart by path") {
    assertSays(
      explained(unopened("reader.p12", wrongPassword), mutualTls),
      "could not open the key store of kafka.ssl.keystore.location (reader.p12)",
      "keystore password was incorrect",
      "The password in kafka.ssl.keystore.password does not open it")(
      "kafka.ssl.truststore",
      "BadPadding")
    assertSays(
      explained(unopened("truststore.p12", wrongPassword), mutualTls),
      "could not open the trust store of kafka.ssl.truststore.location (truststore.p12)",
      "The password in kafka.ssl.truststore.password does not open it")("kafka.ssl.keystore")
    assertSays(
      explained(
        unopened("truststore.p12", new java.nio.file.NoSuchFileException("truststore.p12")),
        oneWayTls),
      "could not open the trust store",
      "There is no such file: kafka.ssl.truststore.location")("password")
    // another client's failure, or a store the options do not name, is left as Kafka said it
    val other = unopened("elsewhere.p12", wrongPassword)
    assert(KafkaAccessErrors.explain(other, mutualTls, KafkaAccessErrors.Describe) eq other)
  }

  test("a key store that opens but whose key will not names kafka.ssl.key.password") {
    // what Kafka's DefaultSslEngineFactory raises when KeyManagerFactory.init gets a wrong key
    // password: the JDK's exception wrapped as it is, no "Failed to load SSL keystore" around it
    val unrecoverable = new java.security.UnrecoverableKeyException(
      "Get Key failed: Given final block not properly padded.")
    val keyRefused = new org.apache.kafka.common.KafkaException(
      "Failed to create new KafkaAdminClient",
      new org.apache.kafka.common.KafkaException(unrecoverable))
    val withKeyPassword = config(
      "kafka.security.protocol" -> "SSL",
      "kafka.ssl.keystore.location" -> "reader.p12",
      "kafka.ssl.key.password" -> "secret-key-password",
      "kafka.ssl.truststore.location" -> "truststore.p12")
    assertSays(
      explained(keyRefused, withKeyPassword),
      "could not read the private key in the key store of kafka.ssl.keystore.location " +
        "(reader.p12)",
      "Get Key failed",
      "The password in kafka.ssl.key.password does not open it")(
      "secret-key-password",
      "kafka.ssl.truststore",
      "could not open the key store")
    assertSays(
      explained(keyRefused, mutualTls),
      "kafka.ssl.key.password is not set",
      "kafka.ssl.keystore.password")()
    // a store whose own password is wrong is told as that store, though its chain holds the
    // JDK's UnrecoverableKeyException too
    assertSays(
      explained(unopened("reader.p12", wrongPassword), withKeyPassword),
      "could not open the key store")("private key")
    // without a key store of the options it is not theirs to explain
    assert(
      KafkaAccessErrors.explain(keyRefused, oneWayTls, KafkaAccessErrors.Describe) eq keyRefused)
  }
}

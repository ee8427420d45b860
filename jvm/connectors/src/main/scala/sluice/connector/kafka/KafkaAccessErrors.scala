package sluice.connector.kafka

import org.apache.kafka.common.errors.{AuthenticationException, GroupAuthorizationException, SaslAuthenticationException, SslAuthenticationException, TopicAuthorizationException}

import sluice.errors.SluiceError

/**
 * The brokers refused the source: who it logged in as was rejected (authentication), or what it
 * asked for is not allowed (ACLs). Kafka's exceptions say what failed but not which option sets
 * it; these messages name the options. They hold no secret: a user name at most (never a
 * password), and the names of the options, never their values. Both kinds fail at once: Kafka's
 * clients do not retry them, and neither does Sluice.
 */
private[kafka] object KafkaAccessErrors {

  /** What the source was doing: the ACL operation it needs for it. */
  sealed abstract class Access(val operation: String, val purpose: String)
  case object Describe extends Access("DESCRIBE", "find its partitions and offsets")
  case object Read extends Access("READ", "fetch its records")

  /** `e` said with the options that fix it, if it is a refusal of the brokers; else `e`. */
  def explain(e: Throwable, config: KafkaConfig, access: Access): Throwable = e match {
    case a: SaslAuthenticationException =>
      SluiceError.sourceFault(
        s"KafkaSource: the brokers refused the SASL login of ${who(config)} " +
          s"(mechanism ${property(config, "sasl.mechanism").getOrElse("GSSAPI")}): " +
          s"${a.getMessage}. Check the user name and password in kafka.sasl.jaas.config " +
          "and the mechanism in kafka.sasl.mechanism.",
        a)
    case a: SslAuthenticationException =>
      val why = rootMessage(a)
      val untrusted = why.contains("PKIX") || why.contains("certification path")
      // the brokers' alert when they refuse the client's certificate, or got none (mutual TLS)
      val refused = why.contains("fatal alert") &&
        Seq("bad_certificate", "certificate_required", "certificate_unknown", "unknown_ca")
          .exists(why.contains)
      val trustHint =
        "the brokers' certificate must be signed by an authority in the trust store of " +
          "kafka.ssl.truststore.location (kafka.ssl.truststore.password, " +
          "kafka.ssl.truststore.type)"
      val keyHint =
        "with mutual TLS the brokers must trust the client certificate in " +
          "kafka.ssl.keystore.location (kafka.ssl.keystore.password, kafka.ssl.key.password)"
      SluiceError.sourceFault(
        s"KafkaSource: the TLS handshake with the brokers failed: $why. " +
          (if (untrusted) s"The brokers' certificate is not trusted: $trustHint."
           else if (refused)
             "The brokers refused this client's certificate, or got none: " +
               s"$keyHint (and kafka.security.protocol=SSL or SASL_SSL)."
           else s"Either $trustHint, or $keyHint."),
        a)
    case a: AuthenticationException =>
      SluiceError.sourceFault(
        s"KafkaSource: the brokers refused to authenticate ${who(config)}: ${a.getMessage}. " +
          s"Check ${identityOptions(config)} and kafka.security.protocol.",
        a)
    case t: TopicAuthorizationException =>
      val named = {
        import scala.jdk.CollectionConverters._
        Option(t.unauthorizedTopics).map(_.asScala.toSeq.sorted).getOrElse(Nil)
      }
      val topics = if (named.isEmpty) "the topic" else named.map(n => s"'$n'").mkString(", ")
      val topicArgs =
        if (named.isEmpty) "--topic <topic>" else named.map(n => s"--topic $n").mkString(" ")
      SluiceError.sourceFault(
        s"KafkaSource: the brokers do not allow ${who(config)} ${access.operation} on " +
          s"$topics, needed to ${access.purpose}. Grant READ and DESCRIBE on it to that " +
          "principal (kafka-acls.sh --add --allow-principal User:<name> --operation Read " +
          s"--operation Describe $topicArgs), or authenticate as one allowed with " +
          s"${identityOptions(config)}.",
        t)
    case g: GroupAuthorizationException =>
      SluiceError.sourceFault(
        s"KafkaSource: the brokers do not allow ${who(config)} to use the consumer group " +
          s"'${g.groupId}' (from kafka.group.id or groupIdPrefix): grant READ on that group, " +
          "or remove kafka.group.id (Sluice needs no group: it commits no offsets to Kafka).",
        g)
    case other => other
  }

  private def property(config: KafkaConfig, name: String): Option[String] =
    config.consumerProperties.collectFirst { case (k, v) if k.equalsIgnoreCase(name) => v.trim }

  private def protocol(config: KafkaConfig): String =
    property(config, "security.protocol").getOrElse("PLAINTEXT").toUpperCase

  /** The principal, as far as the options say without a secret. */
  private def who(config: KafkaConfig): String = protocol(config) match {
    case p if p.startsWith("SASL") =>
      property(config, "sasl.jaas.config")
        .flatMap(UserName.findFirstMatchIn(_))
        .map(m => s"user '${m.group(1)}'")
        .getOrElse("the user of kafka.sasl.jaas.config")
    case "SSL" => "the principal of the certificate in kafka.ssl.keystore.location"
    case _ => "this client (an anonymous one: kafka.security.protocol is PLAINTEXT)"
  }

  private def identityOptions(config: KafkaConfig): String = protocol(config) match {
    case p if p.startsWith("SASL") => "kafka.sasl.jaas.config"
    case "SSL" => "kafka.ssl.keystore.location"
    case _ =>
      "kafka.security.protocol and kafka.sasl.jaas.config (SASL) or " +
        "kafka.ssl.keystore.location (mutual TLS)"
  }

  private val UserName = """username\s*=\s*"([^"]*)"""".r

  private def rootMessage(e: Throwable): String =
    Iterator
      .iterate(e)(_.getCause)
      .takeWhile(_ != null)
      .toSeq
      .reverse
      .flatMap(t => Option(t.getMessage).filter(_.nonEmpty))
      .headOption
      .getOrElse(e.getClass.getSimpleName)
}

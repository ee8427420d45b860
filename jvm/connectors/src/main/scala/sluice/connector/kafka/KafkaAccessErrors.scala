package sluice.connector.kafka

import org.apache.kafka.common.errors.{AuthenticationException, GroupAuthorizationException, SaslAuthenticationException, SslAuthenticationException, TopicAuthorizationException, UnsupportedSaslMechanismException}

import sluice.errors.SluiceError

/**
 * The brokers refused the source: who it logged in as was rejected (authentication), or what it
 * asked for is not allowed (ACLs). Kafka's exceptions say what failed but not which option sets
 * it; these messages name the options. They hold no secret: a user name at most (never a
 * password), and the names of the options, never their values. Both kinds fail at once: Kafka's
 * clients do not retry them, and neither does Sluice.
 */
private[kafka] object KafkaAccessErrors {

  /**
   * What the source was doing: the ACL operation it needs for it, and the operations to grant
   * (`kafka-acls.sh --operation`).
   */
  sealed abstract class Access(val operation: String, val purpose: String, val grant: Seq[String])
  case object Describe
      extends Access("DESCRIBE", "find its partitions and offsets", Seq("Read", "Describe"))
  case object Read extends Access("READ", "fetch its records", Seq("Read", "Describe"))

  /** A hybrid's retention check asking a topic's `retention.ms` (Admin `describeConfigs`). */
  case object DescribeConfigs
      extends Access(
        "DESCRIBE_CONFIGS",
        "read its retention.ms (a hybrid's retention check)",
        Seq("DescribeConfigs"))

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
      SluiceError.sourceFault(
        s"KafkaSource: the TLS handshake with the brokers failed: ${rootMessage(a)}. " +
          tlsHint(a, config),
        a)
    case a: UnsupportedSaslMechanismException =>
      SluiceError.sourceFault(
        "KafkaSource: the brokers do not offer the SASL mechanism " +
          s"${property(config, "sasl.mechanism").getOrElse("GSSAPI")} of kafka.sasl.mechanism: " +
          s"${a.getMessage}. Set kafka.sasl.mechanism to one the brokers enable (their answer " +
          "lists them), with the login module of that mechanism in kafka.sasl.jaas.config " +
          "(SCRAM-SHA-256 and SCRAM-SHA-512: ScramLoginModule; PLAIN: PlainLoginModule).",
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
      val operations = access.grant.map(o => s"--operation $o").mkString(" ")
      val grant = access.grant.map(_.replaceAll("(?<=[a-z])(?=[A-Z])", "_").toUpperCase)
      SluiceError.sourceFault(
        s"KafkaSource: the brokers do not allow ${who(config)} ${access.operation} on " +
          s"$topics, needed to ${access.purpose}. Grant ${grant.mkString(" and ")} on it to " +
          "that principal (kafka-acls.sh --add --allow-principal User:<name> " +
          s"$operations $topicArgs), or authenticate as one allowed with " +
          s"${identityOptions(config)}.",
        t)
    case g: GroupAuthorizationException =>
      SluiceError.sourceFault(
        s"KafkaSource: the brokers do not allow ${who(config)} to use the consumer group " +
          s"'${g.groupId}' (from kafka.group.id or groupIdPrefix): grant READ on that group, " +
          "or remove kafka.group.id (Sluice needs no group: it commits no offsets to Kafka).",
        g)
    case other =>
      unreadableStore(other, config).orElse(unreadableKey(other, config)).getOrElse(other)
  }

  /**
   * The key store opened but its private key did not: Kafka hands the key's password to the
   * JDK's key manager while it builds the client (`KeyManagerFactory.init`, which raises
   * `UnrecoverableKeyException`), so the store's password was right and the key's is wrong -
   * `kafka.ssl.key.password`, or the store's when that is unset (keytool's PKCS12 stores use
   * the store's password for the key as well). A store that did not open is not this case
   * (its chain holds the same JDK exception): [[unreadableStore]] tells it, or leaves it as
   * Kafka said it when the options name no such store.
   */
  private def unreadableKey(e: Throwable, config: KafkaConfig): Option[Throwable] =
    causes(e).collectFirst { case k: java.security.UnrecoverableKeyException => k }.collect {
      case key if hasKeyStore(config) && !causes(e).exists(failedStoreLoad) =>
        val tried =
          if (property(config, "ssl.key.password").nonEmpty)
            "The password in kafka.ssl.key.password does not open it: give the key's own " +
              "password (a PKCS12 store made by keytool uses the store's password for its key)."
          else
            "kafka.ssl.key.password is not set, so the store's password " +
              "(kafka.ssl.keystore.password) was tried and does not open the key: set " +
              "kafka.ssl.key.password to the key's own password."
        val why = Option(key.getMessage)
          .map(_.trim.stripSuffix("."))
          .filter(_.nonEmpty)
          .getOrElse("the key is unreadable")
        SluiceError.sourceFault(
          "KafkaSource: could not read the private key in the key store of " +
            "kafka.ssl.keystore.location " +
            s"(${property(config, "ssl.keystore.location").getOrElse("")}): $why. $tried",
          e)
    }

  /**
   * The client could not even be built: Kafka could not open the key or trust store file
   * (`Failed to load SSL keystore <path> of type <type>`, said of either store, raised when a
   * client is created). Which store it was is told by its path; a wrong password is told by the
   * JDK's answer (PKCS12: "keystore password was incorrect"; JKS: "... password was incorrect").
   */
  private def unreadableStore(e: Throwable, config: KafkaConfig): Option[Throwable] =
    causes(e)
      .collectFirst {
        case k: org.apache.kafka.common.KafkaException if failedStoreLoad(k) => k
      }
      .flatMap { failed =>
        val said = failed.getMessage
        val store = Seq("keystore" -> "key store", "truststore" -> "trust store").collectFirst {
          case (name, words)
              if property(config, s"ssl.$name.location")
                .exists(path => said.startsWith(s"$StoreLoadPrefix$path of type ")) =>
            (name, words)
        }
        store.map { case (name, words) =>
          // the JDK's reason (the root cause is the cipher's, e.g. BadPaddingException)
          val why = Option(failed.getCause)
            .flatMap(c => Option(c.getMessage))
            .filter(_.nonEmpty)
            .getOrElse(rootMessage(failed))
          val wrongPassword = causes(failed)
            .flatMap(c => Option(c.getMessage))
            .exists(_.toLowerCase.contains("password was incorrect"))
          val missing = causes(failed).exists(_.isInstanceOf[java.nio.file.NoSuchFileException])
          val hint =
            if (wrongPassword)
              s"The password in kafka.ssl.$name.password does not open it: give that file's " +
                "password."
            else if (missing)
              s"There is no such file: kafka.ssl.$name.location must name a file present on " +
                "the driver and on every executor."
            else
              s"Check kafka.ssl.$name.location, kafka.ssl.$name.type (the file's format: " +
                s"PKCS12 or JKS) and kafka.ssl.$name.password."
          SluiceError.sourceFault(
            s"KafkaSource: could not open the $words of kafka.ssl.$name.location " +
              s"(${property(config, s"ssl.$name.location").getOrElse("")}): $why. $hint",
            e)
        }
      }

  /** How Kafka's clients begin the message of a key or trust store they could not load. */
  private val StoreLoadPrefix = "Failed to load SSL keystore "

  private def failedStoreLoad(t: Throwable): Boolean =
    t.isInstanceOf[org.apache.kafka.common.KafkaException] &&
      Option(t.getMessage).exists(_.startsWith(StoreLoadPrefix))

  /** Why a TLS handshake failed, read from the exceptions' messages, and what fixes it. */
  private[kafka] def tlsHint(e: Throwable, config: KafkaConfig): String = {
    val chain = causes(e)
    val text = chain.flatMap(t => Option(t.getMessage)).mkString("\n")
    val keyStore = hasKeyStore(config)
    val trustHint =
      "the brokers' certificate must be signed by an authority in the trust store of " +
        "kafka.ssl.truststore.location (kafka.ssl.truststore.password, " +
        "kafka.ssl.truststore.type)"
    val keyHint =
      "with mutual TLS the brokers must trust the client certificate in " +
        "kafka.ssl.keystore.location (kafka.ssl.keystore.password, kafka.ssl.key.password)"
    val expired = text.contains("NotAfter") || text.contains("certificate_expired") ||
      chain.exists(_.isInstanceOf[java.security.cert.CertificateExpiredException])
    val hostName = text.contains("No subject alternative") || text.contains("No name matching")
    val notTls = text.contains("Unsupported or unrecognized SSL message") ||
      text.contains("Remote host terminated the handshake")
    val untrusted = text.contains("PKIX") || text.contains("certification path")
    // the brokers' alert when they refuse the client's certificate, or got none (mutual TLS)
    val refused = text.contains("fatal alert") &&
      Seq("bad_certificate", "certificate_required", "certificate_unknown", "unknown_ca")
        .exists(text.contains)
    if (expired)
      "A certificate has expired (its NotAfter date has passed): when it is the brokers' or " +
        "their authority's, the brokers need a renewed one" +
        (if (keyStore)
           "; when the brokers refused this client's (alert certificate_expired), renew the " +
             "certificate in kafka.ssl.keystore.location."
         else ".")
    else if (hostName)
      "The brokers' certificate does not name the host this client connected to (from " +
        "kafka.bootstrap.servers, then the host each broker advertises): its subject " +
        "alternative names (SAN) must hold that host name or IP address. Connect by a name the " +
        "certificate holds, or have it re-issued with one; " +
        "kafka.ssl.endpoint.identification.algorithm set empty turns the check off, which " +
        "lets any holder of a certificate of that authority pose as the brokers."
    else if (notTls)
      "The other end did not speak TLS, or closed the connection during the handshake: the " +
        "port in kafka.bootstrap.servers is probably a listener of another protocol " +
        s"(PLAINTEXT or SASL_PLAINTEXT); kafka.security.protocol (${protocol(config)}) must " +
        "be the protocol of the listener on that port."
    else if (untrusted) s"The brokers' certificate is not trusted: $trustHint."
    else if (refused && keyStore)
      "The brokers refused this client's certificate: " +
        s"$keyHint (and kafka.security.protocol=SSL or SASL_SSL)."
    else if (refused)
      "The brokers require a client certificate (mutual TLS) and this client has none: " +
        "set kafka.ssl.keystore.location (kafka.ssl.keystore.password, " +
        "kafka.ssl.key.password) to a key store whose certificate the brokers trust."
    else if (keyStore) s"Either $trustHint, or $keyHint."
    else
      s"Check that $trustHint, and that kafka.security.protocol (${protocol(config)}) is the " +
        "protocol of the listener on the port of kafka.bootstrap.servers."
  }

  private def hasKeyStore(config: KafkaConfig): Boolean =
    property(config, "ssl.keystore.location")
      .orElse(property(config, "ssl.keystore.key"))
      .nonEmpty

  private def causes(e: Throwable): Seq[Throwable] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20).toSeq

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
    case "SSL" if hasKeyStore(config) =>
      "the principal of the certificate in kafka.ssl.keystore.location"
    case "SSL" =>
      "this client (one-way TLS: no certificate in kafka.ssl.keystore.location, so the " +
        "brokers see it as User:ANONYMOUS)"
    case _ => "this client (an anonymous one: kafka.security.protocol is PLAINTEXT)"
  }

  private def identityOptions(config: KafkaConfig): String = protocol(config) match {
    case p if p.startsWith("SASL") => "kafka.sasl.jaas.config"
    case "SSL" if hasKeyStore(config) => "kafka.ssl.keystore.location"
    case "SSL" =>
      "kafka.ssl.keystore.location (a client certificate: mutual TLS) or " +
        "kafka.security.protocol=SASL_SSL with kafka.sasl.jaas.config"
    case _ =>
      "kafka.security.protocol and kafka.sasl.jaas.config (SASL) or " +
        "kafka.ssl.keystore.location (mutual TLS)"
  }

  private val UserName = """username\s*=\s*"([^"]*)"""".r

  private def rootMessage(e: Throwable): String =
    causes(e).reverse
      .flatMap(t => Option(t.getMessage).filter(_.nonEmpty))
      .headOption
      .getOrElse(e.getClass.getSimpleName)
}

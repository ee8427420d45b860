package sluice.testkit

import java.nio.file.{Files, Path}
import java.security.SecureRandom

/**
 * A PKCS12 key store and its password. Key and store share the password (PKCS12 keeps one).
 */
final case class KeyStoreFile(path: Path, password: String)

/**
 * The TLS material of a test cluster, made at test time by the JDK's keytool in a temporary
 * folder (no key is ever kept in git): a certificate authority, a key store per name in
 * `entities` (its certificate signed by the authority, valid for 127.0.0.1 and localhost, with
 * `CN=<name>`, which the brokers map to the principal `User:<name>`), a trust store holding the
 * authority, and an `untrustedTruststore` holding another authority that signed nothing here.
 */
final class Certificates private (
    val truststore: KeyStoreFile,
    val untrustedTruststore: KeyStoreFile,
    val keystores: Map[String, KeyStoreFile])

object Certificates {
  private val ValidityDays = "7"
  // EC keys: generated and used in TLS handshakes much faster than RSA keys on a small machine.
  private val KeyAlgorithm =
    Seq("-keyalg", "EC", "-groupname", "secp256r1", "-validity", ValidityDays)

  def create(dir: Path, entities: Seq[String]): Certificates = {
    Files.createDirectories(dir)
    val random = new SecureRandom()
    def password(): String = s"ks-${java.lang.Long.toHexString(random.nextLong())}"
    val caPassword = password()
    val ca = dir.resolve("ca.p12")
    val caPem = dir.resolve("ca.pem")
    val truststore = KeyStoreFile(dir.resolve("truststore.p12"), password())
    val untrusted = KeyStoreFile(dir.resolve("untrusted-truststore.p12"), password())
    val keystores = entities.map(e => e -> KeyStoreFile(dir.resolve(s"$e.p12"), password())).toMap

    keytool(
      Seq("-genkeypair", "-alias", "ca", "-dname", "CN=sluice-test-ca", "-ext", "bc:c") ++
        KeyAlgorithm ++ store(ca, caPassword, create = true))
    keytool(
      Seq("-exportcert", "-rfc", "-alias", "ca", "-file", caPem.toString) ++
        store(ca, caPassword))
    keytool(
      Seq("-importcert", "-noprompt", "-alias", "ca", "-file", caPem.toString) ++
        store(truststore.path, truststore.password, create = true))

    // another authority, which signs nothing here: a trust store of it trusts no broker
    val other = dir.resolve("other-ca.p12")
    val otherPem = dir.resolve("other-ca.pem")
    keytool(
      Seq("-genkeypair", "-alias", "other", "-dname", "CN=sluice-untrusted-ca", "-ext", "bc:c") ++
        KeyAlgorithm ++ store(other, caPassword, create = true))
    keytool(
      Seq("-exportcert", "-rfc", "-alias", "other", "-file", otherPem.toString) ++
        store(other, caPassword))
    keytool(
      Seq("-importcert", "-noprompt", "-alias", "other-ca", "-file", otherPem.toString) ++
        store(untrusted.path, untrusted.password, create = true))

    keystores.foreach { case (name, ks) =>
      val csr = dir.resolve(s"$name.csr")
      val pem = dir.resolve(s"$name.pem")
      keytool(
        Seq("-genkeypair", "-alias", name, "-dname", s"CN=$name,OU=sluice-test") ++
          KeyAlgorithm ++ store(ks.path, ks.password, create = true))
      keytool(
        Seq("-certreq", "-alias", name, "-file", csr.toString) ++ store(ks.path, ks.password))
      keytool(
        Seq(
          "-gencert",
          "-alias",
          "ca",
          "-infile",
          csr.toString,
          "-outfile",
          pem.toString,
          "-rfc",
          "-validity",
          ValidityDays,
          "-ext",
          "san=ip:127.0.0.1,dns:localhost") ++ store(ca, caPassword))
      // the signed certificate followed by the authority: keytool installs the whole chain
      val chain = dir.resolve(s"$name-chain.pem")
      Files.write(chain, (Files.readString(pem) + Files.readString(caPem)).getBytes("UTF-8"))
      keytool(
        Seq("-importcert", "-noprompt", "-alias", name, "-file", chain.toString) ++
          store(ks.path, ks.password))
    }
    new Certificates(truststore, untrusted, keystores)
  }

  private def store(path: Path, password: String, create: Boolean = false): Seq[String] =
    Seq("-keystore", path.toString, "-storepass", password) ++
      (if (create) Seq("-storetype", "PKCS12") else Nil)

  /**
   * Runs the JDK's keytool in this JVM: twenty runs as processes of their own took 15 s on a busy
   * 2-core machine, in this JVM well under one. Its class is not exported: the JVM running this
   * needs `--add-exports java.base/sun.security.tools.keytool=ALL-UNNAMED` ([[AddExports]]).
   * `-debug` makes a failure throw instead of ending the JVM. Not thread-safe (it borrows
   * `System.out`): one run at a time.
   */
  private def keytool(args: Seq[String]): Unit = {
    val main =
      try
        Class.forName("sun.security.tools.keytool.Main").getMethod("main", classOf[Array[String]])
      catch {
        case e: ReflectiveOperationException =>
          throw new IllegalStateException(s"the JDK's keytool is not available: $e", e)
      }
    // what it prints (with -debug: its arguments, passwords too) is kept for a failure's message
    val printed = new java.io.ByteArrayOutputStream()
    val out = System.out
    System.setOut(new java.io.PrintStream(printed, true, "UTF-8"))
    try main.invoke(null, ("-debug" +: args).toArray)
    catch {
      case e: IllegalAccessException =>
        throw new IllegalStateException(s"keytool needs the JVM option $AddExports", e)
      case e: java.lang.reflect.InvocationTargetException =>
        throw new IllegalStateException(
          s"keytool ${args.head} failed: ${e.getCause}\n${printed.toString("UTF-8")}",
          e.getCause)
    } finally System.setOut(out)
  }

  /** The JVM option [[create]] needs. */
  val AddExports = "--add-exports=java.base/sun.security.tools.keytool=ALL-UNNAMED"
}

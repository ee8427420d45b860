package sluice.testkit

import java.nio.file.{Files, Path}
import java.security.SecureRandom

/**
 * A PKCS12 key store and its password. Key and store share the password (PKCS12 keeps one).
 */
final case class KeyStoreFile(path: Path, password: String)

/**
 * The TLS material of a test cluster, made at test time by the JDK's keytool in a temporary
 * folder (no key is ever kept in git): a certificate authority and a trust store holding it
 * (`Certificates.authority`), a key store per name ([[sign]]: its certificate signed by the
 * authority, valid for 127.0.0.1 and localhost, with `CN=<name>`, which the brokers map to the
 * principal `User:<name>`), and a trust store of another authority that signed nothing here
 * ([[untrustedTruststore]]). Passwords are made here too. Not thread-safe: keytool runs one at a
 * time (see `keytool`).
 */
final class Certificates private (dir: Path, ca: KeyStoreFile, caPem: Path) {
  import Certificates._

  /** The trust store holding the authority. */
  val truststore: KeyStoreFile = {
    val t = KeyStoreFile(dir.resolve("truststore.p12"), password())
    keytool(
      Seq("-importcert", "-noprompt", "-alias", "ca", "-file", caPem.toString) ++
        store(t.path, t.password, create = true))
    t
  }

  /** A key store holding a key and a certificate for `CN=<name>`, signed by the authority. */
  def sign(name: String): KeyStoreFile = {
    val ks = KeyStoreFile(dir.resolve(s"$name.p12"), password())
    val csr = dir.resolve(s"$name.csr")
    val pem = dir.resolve(s"$name.pem")
    keytool(
      Seq("-genkeypair", "-alias", name, "-dname", s"CN=$name,OU=sluice-test") ++
        KeyAlgorithm ++ store(ks.path, ks.password, create = true))
    keytool(Seq("-certreq", "-alias", name, "-file", csr.toString) ++ store(ks.path, ks.password))
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
        "san=ip:127.0.0.1,dns:localhost") ++ store(ca.path, ca.password))
    // the signed certificate followed by the authority: keytool installs the whole chain
    val chain = dir.resolve(s"$name-chain.pem")
    Files.write(chain, (Files.readString(pem) + Files.readString(caPem)).getBytes("UTF-8"))
    keytool(
      Seq("-importcert", "-noprompt", "-alias", name, "-file", chain.toString) ++
        store(ks.path, ks.password))
    ks
  }

  /** A trust store of another authority, which signs nothing here: it trusts no broker. */
  def untrustedTruststore(): KeyStoreFile = {
    val t = KeyStoreFile(dir.resolve("untrusted-truststore.p12"), password())
    val other = KeyStoreFile(dir.resolve("other-ca.p12"), password())
    val otherPem = dir.resolve("other-ca.pem")
    keytool(
      Seq("-genkeypair", "-alias", "other", "-dname", "CN=sluice-untrusted-ca", "-ext", "bc:c") ++
        KeyAlgorithm ++ store(other.path, other.password, create = true))
    keytool(
      Seq("-exportcert", "-rfc", "-alias", "other", "-file", otherPem.toString) ++
        store(other.path, other.password))
    keytool(
      Seq("-importcert", "-noprompt", "-alias", "other-ca", "-file", otherPem.toString) ++
        store(t.path, t.password, create = true))
    t
  }
}

object Certificates {
  private val ValidityDays = "7"
  // EC keys: generated and used in TLS handshakes much faster than RSA keys on a small machine.
  private val KeyAlgorithm =
    Seq("-keyalg", "EC", "-groupname", "secp256r1", "-validity", ValidityDays)
  private val random = new SecureRandom()

  private def password(): String = s"ks-${java.lang.Long.toHexString(random.nextLong())}"

  /** A new certificate authority in `dir`, and its trust store. */
  def authority(dir: Path): Certificates = {
    Files.createDirectories(dir)
    val ca = KeyStoreFile(dir.resolve("ca.p12"), password())
    val caPem = dir.resolve("ca.pem")
    keytool(
      Seq("-genkeypair", "-alias", "ca", "-dname", "CN=sluice-test-ca", "-ext", "bc:c") ++
        KeyAlgorithm ++ store(ca.path, ca.password, create = true))
    keytool(
      Seq("-exportcert", "-rfc", "-alias", "ca", "-file", caPem.toString) ++
        store(ca.path, ca.password))
    new Certificates(dir, ca, caPem)
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
    val earlier = StoreIterations.map(p => p -> Option(System.getProperty(p)))
    StoreIterations.foreach(System.setProperty(_, "1"))
    try main.invoke(null, ("-debug" +: args).toArray)
    catch {
      case e: IllegalAccessException =>
        throw new IllegalStateException(s"keytool needs the JVM option $AddExports", e)
      case e: java.lang.reflect.InvocationTargetException =>
        throw new IllegalStateException(
          s"keytool ${args.head} failed: ${e.getCause}\n${printed.toString("UTF-8")}",
          e.getCause)
    } finally {
      System.setOut(out)
      earlier.foreach {
        case (p, Some(v)) => System.setProperty(p, v)
        case (p, None) => System.clearProperty(p)
      }
    }
  }

  /**
   * How often PKCS12 derives the keys of a store's integrity check, its certificates and its key
   * from the password (the JDK's default: 10,000 times each). Every Kafka client over TLS loads its
   * stores again, and at the default that was 6% of the Spark suites' CPU (a profile of them), so
   * the stores made here derive once: still a PKCS12 store whose wrong password fails as before.
   */
  private val StoreIterations = Seq(
    "keystore.pkcs12.macIterationCount",
    "keystore.pkcs12.certPbeIterationCount",
    "keystore.pkcs12.keyPbeIterationCount")

  /** The JVM option keytool needs, run in this JVM (`keytool`): every certificate made here. */
  val AddExports = "--add-exports=java.base/sun.security.tools.keytool=ALL-UNNAMED"
}

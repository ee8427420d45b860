package sluice.testkit

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}
import java.security.SecureRandom
import java.util.concurrent.{Executors, TimeUnit}

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

/**
 * A PKCS12 key store and its password. Key and store share the password (PKCS12 keeps one).
 */
final case class KeyStoreFile(path: Path, password: String)

/**
 * The TLS material of a test cluster, made at test time by the JDK's `keytool` in a temporary
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

    // one keytool at a time per chain of steps; the independent chains run side by side
    val pool = Executors.newFixedThreadPool(3)
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    try {
      val caReady = Future {
        keytool(
          Seq("-genkeypair", "-alias", "ca", "-dname", "CN=sluice-test-ca", "-ext", "bc:c") ++
            KeyAlgorithm ++ store(ca, caPassword, create = true))
        keytool(Seq("-exportcert", "-rfc", "-alias", "ca", "-file", caPem.toString) ++
          store(ca, caPassword))
        keytool(
          Seq("-importcert", "-noprompt", "-alias", "ca", "-file", caPem.toString) ++
            store(truststore.path, truststore.password, create = true))
      }
      val otherCa = Future {
        val other = dir.resolve("other-ca.p12")
        val otherPem = dir.resolve("other-ca.pem")
        keytool(
          Seq("-genkeypair", "-alias", "other", "-dname", "CN=sluice-untrusted-ca", "-ext", "bc:c") ++
            KeyAlgorithm ++ store(other, caPassword, create = true))
        keytool(Seq("-exportcert", "-rfc", "-alias", "other", "-file", otherPem.toString) ++
          store(other, caPassword))
        keytool(
          Seq("-importcert", "-noprompt", "-alias", "other-ca", "-file", otherPem.toString) ++
            store(untrusted.path, untrusted.password, create = true))
      }
      val signed = keystores.toSeq.map { case (name, ks) =>
        val csr = dir.resolve(s"$name.csr")
        val keyMade = Future {
          keytool(
            Seq("-genkeypair", "-alias", name, "-dname", s"CN=$name,OU=sluice-test") ++
              KeyAlgorithm ++ store(ks.path, ks.password, create = true))
          keytool(
            Seq("-certreq", "-alias", name, "-file", csr.toString) ++
              store(ks.path, ks.password))
        }
        for { _ <- keyMade; _ <- caReady } yield {
          val pem = dir.resolve(s"$name.pem")
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
      }
      Await.result(Future.sequence(otherCa +: caReady +: signed), 2.minutes)
    } finally pool.shutdownNow()
    new Certificates(truststore, untrusted, keystores)
  }

  private def store(path: Path, password: String, create: Boolean = false): Seq[String] =
    Seq("-keystore", path.toString, "-storepass", password) ++
      (if (create) Seq("-storetype", "PKCS12") else Nil)

  /** Runs the JDK's keytool (C1 only: each run is short); fails with its output. */
  private def keytool(args: Seq[String]): Unit = {
    val exe = Paths.get(System.getProperty("java.home"), "bin", "keytool").toString
    val command = Seq(exe, "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC") ++ args
    val process = new ProcessBuilder(command.asJava).redirectErrorStream(true).start()
    process.getOutputStream.close()
    val output = new String(process.getInputStream.readAllBytes(), StandardCharsets.UTF_8)
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly()
      throw new IllegalStateException(s"keytool ${args.head} did not finish within 60 s")
    }
    if (process.exitValue() != 0)
      throw new IllegalStateException(
        s"keytool ${args.head} failed (exit ${process.exitValue()}): ${output.trim}")
  }
}

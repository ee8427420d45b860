package sluice.testkit

import java.security.SecureRandom
import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import org.apache.kafka.clients.admin.{Admin, ScramCredentialInfo, ScramMechanism, UserScramCredentialAlteration, UserScramCredentialUpsertion}
import org.apache.kafka.common.acl.{AccessControlEntry, AclBinding, AclOperation, AclPermissionType}
import org.apache.kafka.common.resource.{PatternType, ResourcePattern, ResourceType}

/**
 * Who may do what on the test cluster: SCRAM-SHA-512 users (passwords made at start, never
 * fixed) and topic ACLs, set over the harness's PLAINTEXT listener (a super user's). Each change
 * waits until every node has it, so a test does not race its own set-up: an ACL until each
 * running node's own authorizer allows it (`nodeAcls`), users until every node's metadata log
 * holds them.
 */
final class ClusterAccess(
    plaintextBootstrap: String,
    users: Seq[String],
    nodeAcls: (String, String, Long) => Map[Int, Set[String]])
    extends AutoCloseable {
  private val timeoutMs = 30000L
  private val admin = Admin.create(Broker.adminProps(plaintextBootstrap))
  private val random = new SecureRandom()

  /** Each user's SCRAM password. */
  val passwords: Map[String, String] =
    users.map(u => u -> s"scram-$u-${java.lang.Long.toHexString(random.nextLong())}").toMap

  def createUsers(): Unit = {
    val upserts = passwords.toSeq.map { case (user, password) =>
      new UserScramCredentialUpsertion(
        user,
        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
        password): UserScramCredentialAlteration
    }
    admin.alterUserScramCredentials(upserts.asJava).all().get(timeoutMs, TimeUnit.MILLISECONDS)
    awaitOnEveryNode("the SCRAM users")
  }

  /** Allows `user` the operations (e.g. READ, DESCRIBE) on the topic `topic` (literal name). */
  def grant(user: String, topic: String, operations: Seq[AclOperation]): Unit = {
    val bindings = operations.map { op =>
      new AclBinding(
        new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
        new AccessControlEntry(s"User:$user", "*", op, AclPermissionType.ALLOW))
    }
    admin.createAcls(bindings.asJava).all().get(timeoutMs, TimeUnit.MILLISECONDS)
    // a node's log holding the ACL is not its authorizer applying it: ask each node's own
    val wanted = operations.map(_.name).toSet
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    def lacking = nodeAcls(s"User:$user", topic, timeoutMs).filterNot { case (_, ops) =>
      wanted.subsetOf(ops)
    }
    var behind = lacking
    while (behind.nonEmpty) {
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(
          s"the ACLs of $user on $topic did not reach the authorizers of nodes " +
            s"${behind.keys.toSeq.sorted.mkString(", ")} in time")
      Thread.sleep(20) // polling the nodes' authorizers, which notify no one
      behind = lacking
    }
  }

  /**
   * Waits until every node's metadata log holds what the controllers committed so far (the
   * quorum leader's high watermark): users and ACLs are metadata records, which a node applies
   * as soon as its log has them. Changes are made one at a time, so this follows each.
   */
  private def awaitOnEveryNode(what: String): Unit = {
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    def quorum = admin.describeMetadataQuorum().quorumInfo().get(timeoutMs, TimeUnit.MILLISECONDS)
    val committed = quorum.highWatermark()
    var behind = quorum.voters().asScala.filter(_.logEndOffset() < committed)
    while (behind.nonEmpty) {
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(
          s"$what did not reach nodes ${behind.map(_.replicaId()).mkString(", ")} in time")
      Thread.sleep(20)
      behind = quorum.voters().asScala.filter(_.logEndOffset() < committed)
    }
  }

  override def close(): Unit = admin.close(java.time.Duration.ofSeconds(5))
}

object ClusterAccess {

  /** `READ,DESCRIBE` into Kafka's operations; names what is allowed otherwise. */
  def operations(text: String): Seq[AclOperation] =
    text.split(",").map(_.trim).filter(_.nonEmpty).toSeq.map { name =>
      try AclOperation.valueOf(name.toUpperCase)
      catch {
        case _: IllegalArgumentException =>
          throw new IllegalArgumentException(
            s"unknown ACL operation '$name' (e.g. READ, DESCRIBE, WRITE, ALL)")
      }
    }
}

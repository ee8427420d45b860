package sluice.testkit

import java.io.{BufferedReader, FileDescriptor, FileInputStream, FileOutputStream, InputStreamReader, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.Paths
import java.util.Properties

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import kafka.server.{BrokerServer, KafkaConfig, KafkaRaftServer}
import org.apache.kafka.common.acl.{AccessControlEntryFilter, AclBindingFilter, AclOperation, AclPermissionType}
import org.apache.kafka.common.resource.{PatternType, ResourcePatternFilter, ResourceType}
import org.apache.kafka.common.utils.Time
import org.apache.kafka.server.authorizer.Authorizer

/**
 * One node (broker and controller) of the test cluster, in a JVM of its own so that a test can
 * kill it; started by [[KafkaClusterMain]].
 *
 * {{{
 * java -cp <broker classpath> sluice.testkit.ClusterNodeMain <properties file> <cluster id>
 * }}}
 *
 * Formats its log directory on first start (a restarted node keeps its data), prints
 * `SLUICE_KAFKA_NODE_READY` once the node has joined the cluster, answers
 * `acls <principal> <topic>` with the operations its own authorizer allows (`SLUICE_KAFKA_NODE_ACLS
 * READ,DESCRIBE`) and `partitions <topic>` with the partitions its own metadata knows
 * (`SLUICE_KAFKA_NODE_PARTITIONS 2`), and shuts down cleanly
 * (controlled shutdown: leaders move away first) on `stop`, answering `OK`. When stdin ends (the
 * cluster's process is gone) it halts at once: the other nodes are going too, and a controlled
 * shutdown without a controller quorum would wait for one; so it does while it still starts.
 */
object ClusterNodeMain {
  val ReadyLine = "SLUICE_KAFKA_NODE_READY"

  /** The answer to `acls <principal> <topic>`: this line, then the operations, comma-separated. */
  val AclsLine = "SLUICE_KAFKA_NODE_ACLS"

  /** The answer to `partitions <topic>`: this line, then the count (-1: the topic is unknown). */
  val PartitionsLine = "SLUICE_KAFKA_NODE_PARTITIONS"

  /** The node's broker (KafkaRaftServer keeps it private; a test kit may look). */
  private def brokerOf(server: KafkaRaftServer): Option[BrokerServer] = {
    val field = classOf[KafkaRaftServer].getDeclaredField("broker")
    field.setAccessible(true)
    field.get(server).asInstanceOf[Option[BrokerServer]]
  }

  /** The operations the authorizer has ACLs allowing `principal` on the literal topic. */
  private def allowed(
      authorizer: Option[Authorizer],
      principal: String,
      topic: String): Seq[String] = authorizer.toSeq.flatMap { a =>
    val filter = new AclBindingFilter(
      new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
      new AccessControlEntryFilter(principal, null, AclOperation.ANY, AclPermissionType.ALLOW))
    a.acls(filter).asScala.map(_.entry.operation.name).toSeq.sorted
  }

  def main(args: Array[String]): Unit = {
    val protocol =
      new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8)
    System.setOut(System.err)
    StderrLogging.configure()
    if (args.length != 2) {
      System.err.println("usage: ClusterNodeMain <properties file> <cluster id>")
      sys.exit(2)
    }
    val props = new Properties()
    val in = new FileInputStream(args(0))
    try props.load(in)
    finally in.close()
    val config = new KafkaConfig(props, false)
    // stdin is read from the start: when it ends (the cluster's process is gone, even while this
    // node still starts, which without a quorum may never finish) the node halts at once
    val stop = new java.util.concurrent.CountDownLatch(1)
    @volatile var broker: Option[BrokerServer] = None
    val watcher = new Thread(
      () => {
        val stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
        var line = stdin.readLine()
        while (line != null && line.trim != "stop") {
          line.trim.split("\\s+").toSeq match {
            // what this node's own authorizer allows: ClusterAccess waits for a grant on each
            case Seq("acls", principal, topic) =>
              val ops = allowed(broker.flatMap(_.authorizer), principal, topic)
              protocol.println(s"$AclsLine ${ops.mkString(",")}")
            // how many partitions this node's own metadata gives the topic (-1: none known)
            case Seq("partitions", topic) =>
              val n = broker.flatMap(_.metadataCache.numPartitions(topic)).getOrElse(-1)
              protocol.println(s"$PartitionsLine $n")
            case _ =>
          }
          line = stdin.readLine()
        }
        if (line == null) Runtime.getRuntime.halt(0)
        stop.countDown()
      },
      "sluice-node-stdin")
    watcher.setDaemon(true)
    watcher.start()
    val server =
      try {
        Broker.formatOnce(config, Paths.get(props.getProperty("log.dirs")), args(1))
        val s = new KafkaRaftServer(config, Time.SYSTEM)
        s.startup()
        broker = brokerOf(s)
        s
      } catch {
        case NonFatal(e) =>
          e.printStackTrace(System.err)
          System.err.println(
            s"sluice-testkit: node ${config.nodeId} failed to start: ${CommandLoop.describe(e)}")
          Runtime.getRuntime.halt(1)
          throw e
      }
    protocol.println(ReadyLine)
    stop.await()
    try {
      server.shutdown()
      server.awaitShutdown()
    } catch {
      case NonFatal(e) =>
        System.err.println(s"sluice-testkit: node ${config.nodeId} stopping: $e")
    }
    protocol.println("OK")
    // Kafka leaves non-daemon threads behind a shutdown: halt, as the shutdown is done
    Runtime.getRuntime.halt(0)
  }
}

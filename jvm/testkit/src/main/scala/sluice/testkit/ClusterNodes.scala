package sluice.testkit

import java.io.{BufferedReader, InputStreamReader, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}
import java.util.Properties
import java.util.concurrent.{LinkedBlockingQueue, TimeUnit}

import scala.jdk.CollectionConverters._

import org.apache.kafka.common.Uuid

/**
 * A node's JVM ended before it was ready: most often a port taken between being found free
 * (`Broker.freePort`) and being bound by the node (its log says); the cluster starts again on
 * other ports.
 */
final class NodeExitedWhileStarting(id: Int)
    extends IllegalStateException(s"node $id exited while starting (its log above says why)")

/** The loopback ports of one node: one per listener. */
final case class NodePorts(plaintext: Int, saslSsl: Int, ssl: Int, controller: Int)

/**
 * The JVMs of a test cluster's nodes ([[ClusterNodeMain]]), each broker and controller (a
 * combined quorum of all nodes: one node down leaves a majority), with three client listeners:
 *
 *   - PLAINTEXT, the harness's and the brokers' own (its principal `User:ANONYMOUS` is a super
 *     user, as the brokers replicate over it);
 *   - SASL_SSL with SCRAM-SHA-512 (users are created by [[KafkaClusterMain]]);
 *   - SSL requiring a client certificate (`CN=<name>` is the principal `User:<name>`).
 *
 * ACLs are enforced by KRaft's `StandardAuthorizer`, denying what no ACL allows. Topics get 3
 * replicas and `min.insync.replicas=2`.
 */
final class ClusterNodes(
    size: Int,
    dir: Path,
    brokerKeystore: KeyStoreFile,
    truststore: KeyStoreFile,
    superUsers: Seq[String],
    jvmOptions: Seq[String]) {
  import Broker.Host

  val clusterId: String = Uuid.randomUuid().toString
  val ports: IndexedSeq[NodePorts] = {
    val taken = scala.collection.mutable.Set.empty[Int]
    def fresh(): Int = {
      var p = Broker.freePort()
      while (taken.contains(p)) p = Broker.freePort()
      taken += p
      p
    }
    (1 to size).map(_ => NodePorts(fresh(), fresh(), fresh(), fresh()))
  }
  val ids: Seq[Int] = 1 to size

  def bootstrap(port: NodePorts => Int): String =
    ports.map(p => s"$Host:${port(p)}").mkString(",")

  private final class Running(val process: Process, val stdin: PrintStream) {
    val lines = new LinkedBlockingQueue[Option[String]]()
  }
  private val running = scala.collection.mutable.Map.empty[Int, Running]

  private def propertiesFile(id: Int): Path = dir.resolve(s"node-$id.properties")

  private def writeProperties(id: Int): Unit = {
    val p = new Properties()
    def set(key: String, value: Any): Unit = p.setProperty(key, value.toString)
    val mine = ports(id - 1)
    set("process.roles", "broker,controller")
    set("node.id", id)
    set(
      "controller.quorum.voters",
      ids.map(i => s"$i@$Host:${ports(i - 1).controller}").mkString(","))
    set(
      "listeners",
      s"PLAINTEXT://$Host:${mine.plaintext},SASL_SSL://$Host:${mine.saslSsl}," +
        s"SSL://$Host:${mine.ssl},CONTROLLER://$Host:${mine.controller}")
    set(
      "advertised.listeners",
      s"PLAINTEXT://$Host:${mine.plaintext},SASL_SSL://$Host:${mine.saslSsl},SSL://$Host:${mine.ssl}")
    set(
      "listener.security.protocol.map",
      "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT")
    set("controller.listener.names", "CONTROLLER")
    set("inter.broker.listener.name", "PLAINTEXT")
    set("log.dirs", dir.resolve(s"node-$id-logs"))

    set("sasl.enabled.mechanisms", "SCRAM-SHA-512")
    set(
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
      "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    val own = brokerKeystore
    set("ssl.keystore.type", "PKCS12")
    set("ssl.keystore.location", own.path)
    set("ssl.keystore.password", own.password)
    set("ssl.key.password", own.password)
    set("ssl.truststore.type", "PKCS12")
    set("ssl.truststore.location", truststore.path)
    set("ssl.truststore.password", truststore.password)
    set("listener.name.ssl.ssl.client.auth", "required")
    set("ssl.principal.mapping.rules", "RULE:^CN=([a-zA-Z0-9._-]+),.*$/$1/,DEFAULT")

    set("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    set("super.users", ("User:ANONYMOUS" +: superUsers.map(u => s"User:$u")).mkString(";"))
    set("allow.everyone.if.no.acl.found", false)

    set("default.replication.factor", size)
    set("min.insync.replicas", math.min(2, size))
    set("offsets.topic.replication.factor", size)
    set("offsets.topic.num.partitions", 1)
    set("offsets.topic.segment.bytes", 4 * 1024 * 1024)
    set("transaction.state.log.replication.factor", size)
    set("transaction.state.log.min.isr", math.min(2, size))
    set("transaction.state.log.num.partitions", 1)
    set("transaction.state.log.segment.bytes", 4 * 1024 * 1024)
    set("num.partitions", 1)
    Broker.commonSettings(set)
    // a killed node's partitions elect a new leader within a couple of seconds
    set("broker.session.timeout.ms", 3000)
    val out = Files.newOutputStream(propertiesFile(id))
    try p.store(out, "a node of the sluice test cluster")
    finally out.close()
  }

  /** Starts every node side by side (a node's start waits for a quorum) and waits for all. */
  def startAll(timeoutMs: Long): Unit = {
    ids.foreach(writeProperties)
    ids.foreach(launch)
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    ids.foreach(awaitReady(_, deadline))
  }

  /**
   * Starts nodes stopped or killed before, side by side (they keep their data): after the whole
   * cluster was down, no node is ready before a quorum of them runs.
   */
  def start(nodes: Seq[Int], timeoutMs: Long): Unit = synchronized {
    nodes.find(id => running.get(id).exists(_.process.isAlive)).foreach { id =>
      throw new IllegalArgumentException(s"node $id is running")
    }
    nodes.foreach(launch)
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    nodes.foreach(awaitReady(_, deadline))
  }

  /** SIGKILL: the node gets no chance to hand its leaderships over. */
  def kill(id: Int): Unit = synchronized {
    val node =
      running.remove(id).getOrElse(throw new IllegalArgumentException(s"node $id is not running"))
    node.process.destroyForcibly()
    if (!node.process.waitFor(30, TimeUnit.SECONDS))
      throw new IllegalStateException(s"node $id did not die within 30 s of SIGKILL")
  }

  /** A clean stop (controlled shutdown), as in a rolling restart. */
  def stop(id: Int, timeoutMs: Long): Unit = synchronized {
    val node =
      running.remove(id).getOrElse(throw new IllegalArgumentException(s"node $id is not running"))
    node.stdin.println("stop")
    node.stdin.flush()
    if (!node.process.waitFor(timeoutMs, TimeUnit.MILLISECONDS)) {
      node.process.destroyForcibly().waitFor(30, TimeUnit.SECONDS)
      throw new IllegalStateException(s"node $id did not stop within $timeoutMs ms; killed it")
    }
  }

  /**
   * The operations each running node's own authorizer allows `principal` on the literal topic
   * (a node down is left out: it replays the metadata log when it starts again).
   */
  def acls(principal: String, topic: String, timeoutMs: Long): Map[Int, Set[String]] =
    ask(s"acls $principal $topic", ClusterNodeMain.AclsLine, timeoutMs).map { case (id, a) =>
      id -> (a.split(",").map(_.trim).toSet - "")
    }

  /** How many partitions each running node's own metadata gives the topic (-1: unknown). */
  def partitions(topic: String, timeoutMs: Long): Map[Int, Int] =
    ask(s"partitions $topic", ClusterNodeMain.PartitionsLine, timeoutMs).map { case (id, a) =>
      id -> a.trim.toInt
    }

  /** Each running node's answer to `command`: the rest of its line opening with `answer`. */
  private def ask(command: String, answer: String, timeoutMs: Long): Map[Int, String] =
    synchronized {
      running.toSeq
        .filter(_._2.process.isAlive)
        .map { case (id, node) =>
          node.stdin.println(command)
          node.stdin.flush()
          val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
          var got: Option[String] = None
          while (got.isEmpty) {
            val left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())
            node.lines.poll(math.max(1L, left), TimeUnit.MILLISECONDS) match {
              case null => throw new IllegalStateException(s"node $id did not answer '$command'")
              case None => throw new IllegalStateException(s"node $id exited")
              case Some(line) if line.startsWith(answer) => got = Some(line.drop(answer.length))
              case Some(_) =>
            }
          }
          id -> got.get
        }
        .toMap
    }

  def isRunning(id: Int): Boolean = synchronized(running.get(id).exists(_.process.isAlive))

  /** Kills every node: at the end of a test session their data goes with the folder. */
  def close(): Unit = synchronized {
    running.values.foreach(_.process.destroyForcibly())
    running.values.foreach(_.process.waitFor(30, TimeUnit.SECONDS))
    running.clear()
  }

  private def launch(id: Int): Unit = synchronized {
    val java = Paths.get(System.getProperty("java.home"), "bin", "java").toString
    val command = Seq(java) ++ jvmOptions ++ Seq(
      "-cp",
      System.getProperty("java.class.path"),
      "sluice.testkit.ClusterNodeMain",
      propertiesFile(id).toString,
      clusterId)
    val process = new ProcessBuilder(command.asJava).start()
    val node =
      new Running(process, new PrintStream(process.getOutputStream, true, StandardCharsets.UTF_8))
    running(id) = node
    pump(s"node-$id-stdout", new BufferedReader(new InputStreamReader(process.getInputStream))) {
      line => node.lines.put(Some(line))
    } { node.lines.put(None) }
    // the node's log reaches the harness's stderr, each line saying which node wrote it
    pump(s"node-$id-stderr", new BufferedReader(new InputStreamReader(process.getErrorStream))) {
      line => System.err.println(s"[node $id] $line")
    } {}
  }

  private def awaitReady(id: Int, deadline: Long): Unit = {
    val node = synchronized(running(id))
    var ready = false
    while (!ready) {
      val left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())
      node.lines.poll(math.max(1L, left), TimeUnit.MILLISECONDS) match {
        case null => throw new IllegalStateException(s"node $id did not start in time")
        case None => throw new NodeExitedWhileStarting(id)
        case Some(ClusterNodeMain.ReadyLine) => ready = true
        case Some(_) =>
      }
    }
  }

  private def pump(name: String, in: BufferedReader)(onLine: String => Unit)(
      onEnd: => Unit): Unit = {
    val t = new Thread(
      () =>
        try Iterator.continually(in.readLine()).takeWhile(_ != null).foreach(onLine)
        catch { case _: java.io.IOException => () }
        finally onEnd,
      s"sluice-cluster-$name")
    t.setDaemon(true)
    t.start()
  }
}

package sluice.testkit

import java.io.{BufferedReader, FileDescriptor, FileOutputStream, InputStreamReader, IOException, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.concurrent.TimeUnit

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.kafka.common.utils.Utils

/**
 * A Kafka cluster for tests like those users run (see [[ClusterNodes]]): 3 KRaft nodes, each in
 * its own JVM, replication factor 3, `min.insync.replicas=2`, PLAINTEXT, SASL_SSL (SCRAM-SHA-512)
 * and SSL (client certificates) listeners, ACLs; certificates and passwords made at start in a
 * temporary folder, deleted when it stops (or, after a SIGKILL, when the next cluster starts).
 *
 * {{{
 * java -cp <broker classpath> sluice.testkit.KafkaClusterMain [--nodes N]
 * }}}
 *
 * Speaks [[KafkaBrokerMain]]'s protocol (its ready line names the PLAINTEXT listeners; every
 * command of [[Commands]] works, topics get one replica per node) plus:
 *
 *   - `security`: a JSON object of the listeners, the trust stores, each user's key store and
 *     SCRAM password;
 *   - `grant <user> <topic> <OPERATION,...>`: an ACL allowing the user those operations on the
 *     topic;
 *   - `leader <topic> <partition>`: the node id of the partition's leader (`none` if it has
 *     none); `placement <topic>`: each partition's leader and replicas (`p0=1:1,2,3 ...`);
 *   - `reassign <topic> <partition> <id,...>`: moves the partition's replicas to those nodes
 *     (the first leads) and waits until they are in sync; answers the leader;
 *   - `elect-leaders <topic,...>`: each partition led by its preferred replica again (a node
 *     restarted leads nothing until then); `await-in-sync`: waits until every replica of every
 *     topic is in sync (a rolling restart's step between two nodes);
 *   - `kill-node <id>` (SIGKILL), `stop-node <id>` (a clean stop), `start-node <id>[,<id>...]`
 *     (side by side, as after the whole cluster was down; waits until each has joined again).
 *
 * Users: `admin` (a super user), `reader` and `nobody`, each with a SCRAM password and a client
 * certificate (`CN=<user>`); none but `admin` may do anything until granted. Stops every node
 * on `stop`, at the end of stdin and on SIGTERM; a node whose cluster process died halts itself.
 */
object KafkaClusterMain {
  val Users: Seq[String] = Seq("admin", "reader", "nobody")
  private val StartTimeoutMs = 120000L
  private val NodeTimeoutMs = 90000L

  /** How often the nodes are started on new ports when one exits while starting. */
  private val StartAttempts = 3

  /** Small heaps and C1 only: three of these share a 2-core machine with Spark. */
  private val NodeJvmOptions = Seq("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

  def main(args: Array[String]): Unit = {
    val protocol =
      new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8)
    System.setOut(System.err)
    StderrLogging.configure()
    val size = args.toList match {
      case Nil => 3
      case "--nodes" :: n :: Nil if n.toIntOption.exists(_ >= 1) => n.toInt
      case _ =>
        System.err.println("usage: KafkaClusterMain [--nodes N (>= 1)]")
        sys.exit(2)
    }

    val began = System.nanoTime()
    sweepDeadClusters()
    val dir = Files.createTempDirectory(FolderPrefix)
    Files.write(dir.resolve(PidFile), ProcessHandle.current().pid().toString.getBytes("UTF-8"))
    var nodes: ClusterNodes = null
    var access: ClusterAccess = null
    var commands: Commands = null
    var placement: ClusterPlacement = null
    val cleanUp = new Thread(
      () => {
        try Option(commands).foreach(_.close())
        catch { case NonFatal(_) => }
        try Option(placement).foreach(_.close())
        catch { case NonFatal(_) => }
        try Option(access).foreach(_.close())
        catch { case NonFatal(_) => }
        Option(nodes).foreach(_.close())
        try Utils.delete(dir.toFile)
        catch {
          case e: IOException => System.err.println(s"sluice-testkit: could not delete $dir: $e")
        }
      },
      "sluice-kafka-cluster-stop")
    Runtime.getRuntime.addShutdownHook(cleanUp)

    val tls =
      try {
        // what each step took goes to stderr: a slow start says where its time went
        def step[T](what: String)(body: => T): T = {
          val t0 = System.nanoTime()
          try body
          finally
            System.err.println(
              s"sluice-testkit: $what in ${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)} ms")
        }
        val (authority, broker) = step("the brokers' certificate made") {
          val a = Certificates.authority(dir.resolve("tls"))
          (a, a.sign("broker"))
        }
        // the clients' material is made while the nodes start: they need only the brokers'
        val clients = Future(step("the clients' certificates made") {
          TlsMaterial(
            authority.truststore,
            authority.untrustedTruststore(),
            Users.map(u => u -> authority.sign(u)).toMap)
        })(ExecutionContext.global)
        // free ports are found before the nodes bind them, so another process may take one
        // meanwhile: the node fails to bind and exits, and the cluster starts again on others
        var attempt = 1
        while (nodes == null) {
          val n = new ClusterNodes(
            size,
            Files.createDirectories(dir.resolve(s"start-$attempt")),
            broker,
            authority.truststore,
            Seq("admin"),
            NodeJvmOptions)
          nodes = n
          try step(s"$size nodes started")(n.startAll(StartTimeoutMs))
          catch {
            case e: NodeExitedWhileStarting if attempt < StartAttempts =>
              System.err.println(
                s"sluice-testkit: ${e.getMessage}; starting again on other ports")
              n.close()
              nodes = null
              attempt += 1
          }
        }
        val plaintext = nodes.bootstrap(_.plaintext)
        step("the cluster usable")(
          Broker.awaitUsable(Broker.adminProps(plaintext), size, StartTimeoutMs))
        access = new ClusterAccess(plaintext, Users, nodes.acls)
        step("SCRAM users created")(access.createUsers())
        Await.result(clients, StartTimeoutMs.millis)
      } catch {
        case NonFatal(e) =>
          e.printStackTrace(System.err)
          System.err.println(
            s"sluice-testkit: the Kafka cluster failed to start: ${CommandLoop.describe(e)}")
          sys.exit(1)
      }
    val plaintext = nodes.bootstrap(_.plaintext)
    System.err.println(
      s"sluice-testkit: Kafka cluster of $size nodes ready at $plaintext in " +
        s"${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began)} ms")

    // one node answered that the topic has its partitions; another may not know it yet, and the
    // Admin and producer calls that follow may ask that one: wait for each node's own metadata
    commands = new Commands(
      plaintext,
      size.toShort,
      (topic, count) => {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(NodeTimeoutMs)
        def behind = nodes.partitions(topic, NodeTimeoutMs).filter(_._2 != count).keys
        while (behind.nonEmpty) {
          if (System.nanoTime() > deadline)
            throw new IllegalStateException(
              s"nodes ${behind.mkString(", ")} did not learn $count partitions of $topic in time")
          Thread.sleep(20) // polling the nodes' metadata, which notifies no one
        }
      })
    val security = describe(nodes, tls, access)
    placement = new ClusterPlacement(plaintext, NodeTimeoutMs)
    def run(line: String): String = {
      val words = line.trim.split("\\s+").toSeq
      def id = words
        .lift(1)
        .flatMap(_.toIntOption)
        .filter(nodes.ids.contains)
        .getOrElse(throw new IllegalArgumentException(
          s"usage: ${words.head} <node id: ${nodes.ids.mkString(", ")}>"))
      words.head match {
        case "security" => security
        case "grant" =>
          if (words.size != 4)
            throw new IllegalArgumentException("usage: grant <user> <topic> <OPERATION,...>")
          access.grant(words(1), words(2), ClusterAccess.operations(words(3)))
          ""
        case "leader" =>
          if (words.size != 3 || words(2).toIntOption.isEmpty)
            throw new IllegalArgumentException("usage: leader <topic> <partition>")
          placement.leader(words(1), words(2).toInt)
        case "placement" =>
          if (words.size != 2) throw new IllegalArgumentException("usage: placement <topic>")
          placement.placement(words(1))
        case "reassign" =>
          val replicas = words.lift(3).toSeq.flatMap(_.split(",")).flatMap(_.toIntOption)
          if (words.size != 4 || words(2).toIntOption.isEmpty || replicas.isEmpty ||
            !replicas.forall(nodes.ids.contains))
            throw new IllegalArgumentException(
              s"usage: reassign <topic> <partition> <node ids among ${nodes.ids.mkString(",")}, " +
                "comma-separated, the first to lead>")
          placement.reassign(words(1), words(2).toInt, replicas)
        case "elect-leaders" =>
          if (words.size != 2)
            throw new IllegalArgumentException("usage: elect-leaders <topic,...>")
          placement.electPreferredLeaders(words(1).split(",").toSeq.filter(_.nonEmpty))
          ""
        case "await-in-sync" => placement.awaitInSync(); ""
        case "kill-node" => nodes.kill(id); ""
        case "stop-node" => nodes.stop(id, NodeTimeoutMs); ""
        case "start-node" =>
          val ids = words.lift(1).toSeq.flatMap(_.split(",")).map(_.toIntOption)
          if (words.size != 2 || ids.isEmpty || !ids.forall(_.exists(nodes.ids.contains)))
            throw new IllegalArgumentException(
              s"usage: start-node <node id: ${nodes.ids.mkString(", ")}>[,<node id>...]")
          nodes.start(ids.flatten, NodeTimeoutMs)
          ""
        case _ =>
          try commands.run(line)
          catch {
            case e: IllegalArgumentException if e.getMessage.startsWith("unknown command") =>
              throw new IllegalArgumentException(
                s"${e.getMessage}; the cluster's own: security, grant, leader, placement, " +
                  "reassign, elect-leaders, await-in-sync, kill-node, stop-node, start-node")
          }
      }
    }

    protocol.println(s"SLUICE_KAFKA_READY bootstrap=$plaintext")
    val stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
    val stopCommand =
      try new CommandLoop(stdin, protocol, run).run()
      catch {
        case NonFatal(e) =>
          System.err.println(
            s"sluice-testkit: reading commands failed: ${CommandLoop.describe(e)}")
          false
      }
    Runtime.getRuntime.removeShutdownHook(cleanUp)
    cleanUp.run()
    if (stopCommand) protocol.println("OK")
    sys.exit(0)
  }

  private val FolderPrefix = "sluice-kafka-cluster-"
  private val PidFile = "cluster.pid"

  /**
   * Deletes the folders of clusters whose process is gone without cleaning up (SIGKILL): they
   * hold the authority's private key, the key stores and the nodes' properties with the stores'
   * passwords. A folder is a dead cluster's when no process with the pid its `cluster.pid` names
   * runs; one without that file (still being made) is left alone for an hour.
   */
  private def sweepDeadClusters(): Unit = {
    val tmp = java.nio.file.Paths.get(System.getProperty("java.io.tmpdir"))
    // any live process with that pid keeps the folder: the JDK may report a long command line
    // cut short (the broker's class path comes before the main class), and a cluster running
    // beside this one (another test JVM, the chaos run) had its folder deleted under it; a pid
    // reused by another process only leaves a dead cluster's folder until a later sweep
    def running(pid: Long): Boolean = ProcessHandle.of(pid).filter(_.isAlive).isPresent
    val stale = System.currentTimeMillis() - TimeUnit.HOURS.toMillis(1)
    val folders =
      try {
        val listing = Files.list(tmp)
        try
          listing
            .iterator()
            .asScala
            .filter(_.getFileName.toString.startsWith(FolderPrefix))
            .toList
        finally listing.close()
      } catch { case _: IOException => Nil }
    folders.foreach { folder =>
      val pidFile = folder.resolve(PidFile)
      val dead =
        try {
          if (Files.exists(pidFile))
            new String(Files.readAllBytes(pidFile), "UTF-8").trim.toLongOption.forall(!running(_))
          else Files.getLastModifiedTime(folder).toMillis < stale
        } catch { case _: IOException => false }
      if (dead) {
        try {
          Utils.delete(folder.toFile)
          System.err.println(s"sluice-testkit: deleted $folder, left by a cluster that died")
        } catch {
          case e: IOException =>
            System.err.println(s"sluice-testkit: could not delete $folder: $e")
        }
      }
    }
  }

  /** What clients of the cluster need for TLS. */
  private final case class TlsMaterial(
      truststore: KeyStoreFile,
      untrustedTruststore: KeyStoreFile,
      keystores: Map[String, KeyStoreFile])

  private def describe(nodes: ClusterNodes, c: TlsMaterial, access: ClusterAccess): String = {
    val mapper = new ObjectMapper()
    val root = mapper.createObjectNode()
    root.put("plaintext", nodes.bootstrap(_.plaintext))
    root.put("saslSsl", nodes.bootstrap(_.saslSsl))
    root.put("ssl", nodes.bootstrap(_.ssl))
    def store(name: String, ks: KeyStoreFile): Unit = {
      val o = root.putObject(name)
      o.put("path", ks.path.toString)
      o.put("password", ks.password)
    }
    store("truststore", c.truststore)
    store("untrustedTruststore", c.untrustedTruststore)
    val users = root.putObject("users")
    Users.foreach { u =>
      val o = users.putObject(u)
      o.put("scramPassword", access.passwords(u))
      o.put("keystore", c.keystores(u).path.toString)
      o.put("keystorePassword", c.keystores(u).password)
    }
    mapper.writeValueAsString(root)
  }
}

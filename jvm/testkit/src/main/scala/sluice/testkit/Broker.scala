package sluice.testkit

import java.io.{File, IOException, PrintStream}
import java.net.{InetAddress, InetSocketAddress, ServerSocket}
import java.nio.file.{Files, Path}
import java.util.{Collections, Properties}
import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

import kafka.server.{KafkaConfig, KafkaRaftServer}
import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, CreateTopicsOptions, DescribeClusterOptions, NewTopic}
import org.apache.kafka.common.Uuid
import org.apache.kafka.common.utils.{Time, Utils}
import org.apache.kafka.metadata.storage.Formatter
import org.apache.kafka.server.common.MetadataVersion

/**
 * One single-node Kafka (KRaft, broker and controller in this JVM), bound to 127.0.0.1 only.
 *
 * @param port
 *   the client (PLAINTEXT) listener port
 * @param controllerPort
 *   the KRaft controller listener port
 * @param dataDir
 *   the directory holding the logs; formatted on first use
 * @param ownsDataDir
 *   whether [[stop]] deletes `dataDir` (true for a temporary directory)
 */
final class Broker(
    val port: Int,
    val controllerPort: Int,
    val dataDir: Path,
    ownsDataDir: Boolean) {
  import Broker.Host

  val bootstrapServers: String = s"$Host:$port"

  private val logDir: Path = dataDir.resolve("kafka-logs")
  private var server: Option[KafkaRaftServer] = None
  private var stopped = false

  private def config: KafkaConfig = {
    val p = new Properties()
    def set(key: String, value: Any): Unit = p.setProperty(key, value.toString)
    set("process.roles", "broker,controller")
    set("node.id", Broker.NodeId)
    set("controller.quorum.voters", s"${Broker.NodeId}@$Host:$controllerPort")
    set("listeners", s"PLAINTEXT://$Host:$port,CONTROLLER://$Host:$controllerPort")
    set("advertised.listeners", s"PLAINTEXT://$Host:$port")
    set("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
    set("controller.listener.names", "CONTROLLER")
    set("inter.broker.listener.name", "PLAINTEXT")
    set("log.dirs", logDir.toString)
    // A single replica everywhere: there is only one broker.
    set("default.replication.factor", 1)
    set("min.insync.replicas", 1)
    set("offsets.topic.replication.factor", 1)
    set("offsets.topic.num.partitions", 1)
    set("offsets.topic.segment.bytes", 4 * 1024 * 1024)
    set("transaction.state.log.replication.factor", 1)
    set("transaction.state.log.min.isr", 1)
    set("transaction.state.log.num.partitions", 1)
    set("transaction.state.log.segment.bytes", 4 * 1024 * 1024)
    set("num.partitions", 1)
    Broker.commonSettings(set)
    // A test run keeps several of these brokers up for minutes, mostly idle, on two cores: by
    // default the controller appends a no-op metadata record every 500 ms, which a single node has
    // no peer to need. Idle, 1.16 CPU-s a minute with it, 0.82 without (2-minute samples side by
    // side). The heartbeat stays at 500 ms: a starting broker is unfenced by one.
    set("metadata.max.idle.interval.ms", 10000)
    new KafkaConfig(p, false)
  }

  /**
   * Formats `dataDir` unless done before, starts the server and waits until a client can use it.
   */
  def start(timeoutMs: Long): Unit = synchronized {
    require(server.isEmpty && !stopped, "broker already started")
    val cfg = config
    format(cfg)
    val s = new KafkaRaftServer(cfg, Time.SYSTEM)
    server = Some(s)
    s.startup()
    awaitUsable(timeoutMs)
  }

  private def format(cfg: KafkaConfig): Unit =
    // A directory given with --data-dir keeps its data (and cluster id) across runs.
    Broker.formatOnce(cfg, logDir, Uuid.randomUuid().toString)

  private def awaitUsable(timeoutMs: Long): Unit =
    Broker.awaitUsable(Broker.adminProps(bootstrapServers), brokers = 1, timeoutMs)

  /**
   * Shuts the server down (idempotent) and deletes the data directory if it is a temporary one.
   */
  def stop(): Unit = synchronized {
    if (!stopped) {
      stopped = true
      server.foreach { s =>
        try {
          s.shutdown()
          s.awaitShutdown()
        } catch {
          case NonFatal(e) =>
            System.err.println(s"sluice-testkit: error while stopping Kafka: $e")
        }
      }
      server = None
      if (ownsDataDir) {
        try Utils.delete(dataDir.toFile)
        catch {
          case e: IOException =>
            System.err.println(s"sluice-testkit: could not delete $dataDir: $e")
        }
      }
    }
  }
}

object Broker {
  val Host = "127.0.0.1"
  val NodeId = 1

  /**
   * What every broker of the testkit sets, alone or in a cluster: tuned for tests on a 2-core
   * machine running Spark beside it.
   */
  def commonSettings(set: (String, Any) => Unit): Unit = {
    // Tests create every topic they use, so a typo in a topic name fails instead of creating one.
    set("auto.create.topics.enable", false)
    set("group.initial.rebalance.delay.ms", 0)
    // Tests write records with old timestamps: only topics setting retention.ms lose data by age.
    set("log.retention.ms", -1)
    // Retention and compaction must act within a test's lifetime, not after minutes.
    set("log.initial.task.delay.ms", 0)
    set("log.retention.check.interval.ms", 1000)
    set("log.segment.delete.delay.ms", 1000)
    set("log.segment.bytes", 16 * 1024 * 1024)
    set("log.index.size.max.bytes", 1024 * 1024)
    set("log.cleaner.backoff.ms", 1000)
    set("log.cleaner.dedupe.buffer.size", 8 * 1024 * 1024)
    set("log.cleaner.threads", 1)
    // Sized for a 2-core machine running Spark next to the broker.
    set("num.network.threads", 2)
    set("num.io.threads", 4)
    set("background.threads", 2)
    set("num.recovery.threads.per.data.dir", 1)
    set("num.replica.fetchers", 1)
    set("group.coordinator.threads", 1)
    set("auto.leader.rebalance.enable", false)
    set("broker.heartbeat.interval.ms", 500)
    set("controlled.shutdown.enable", true)
  }

  /** Formats `logDir` for the node of `cfg` unless it was formatted before. */
  def formatOnce(cfg: KafkaConfig, logDir: Path, clusterId: String): Unit = {
    if (Files.exists(logDir.resolve("meta.properties"))) return
    Files.createDirectories(logDir)
    new Formatter()
      // Kafka reports what it formats on this stream; stdout belongs to the command protocol.
      .setPrintStream(new PrintStream(java.io.OutputStream.nullOutputStream()))
      .setNodeId(cfg.nodeId)
      .setClusterId(clusterId)
      .setControllerListenerName("CONTROLLER")
      .setMetadataLogDirectory(cfg.metadataLogDir)
      .setDirectories(Collections.singletonList(logDir.toString))
      .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
      .run()
  }

  /**
   * Waits until `brokers` brokers are registered and unfenced and accept a topic of as many
   * replicas.
   */
  def awaitUsable(adminProps: Properties, brokers: Int, timeoutMs: Long): Unit = {
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    val admin = Admin.create(adminProps)
    try {
      var last: Throwable = null
      var ready = false
      while (!ready && System.nanoTime() < deadline) {
        try {
          val nodes =
            admin.describeCluster(new DescribeClusterOptions().timeoutMs(2000)).nodes().get()
          if (nodes.size >= brokers) {
            val probe = new NewTopic("sluice-readiness-probe", 1, brokers.toShort)
            admin
              .createTopics(
                Collections.singletonList(probe),
                new CreateTopicsOptions().validateOnly(true).timeoutMs(2000))
              .all()
              .get()
            ready = true
          }
        } catch {
          case NonFatal(e) => last = e
        }
        if (!ready) Thread.sleep(50)
      }
      if (!ready)
        throw new IllegalStateException(
          s"Kafka ($brokers broker(s)) did not become ready within $timeoutMs ms",
          last)
    } finally admin.close(java.time.Duration.ofSeconds(2))
  }

  /**
   * A port that was free on 127.0.0.1 a moment ago, below the kernel's ephemeral range where one
   * can be found. A node or broker restarted after a kill binds its old ports again (a cluster's
   * controller quorum names them), and a port from the ephemeral range (what binding port 0
   * gives) may meanwhile be the local end of any process's outgoing connection: under load a
   * restarted node then failed to bind and exited. The kernel never hands out ports below that
   * range by itself.
   */
  def freePort(): Int = {
    val below = ephemeralLow.getOrElse(0)
    val random = java.util.concurrent.ThreadLocalRandom.current()
    Iterator
      .fill(if (below > FixedPortsFrom) 50 else 0)(random.nextInt(FixedPortsFrom, below))
      .find(bindable)
      .getOrElse(bind(0))
  }

  // ports below the ephemeral range chosen from here up (above the well-known and most
  // registered services' ports)
  private val FixedPortsFrom = 20000

  /** The first port of the kernel's ephemeral range (Linux), if known. */
  private lazy val ephemeralLow: Option[Int] =
    try {
      // read as a stream: a /proc file says it is empty, and a read by its size gets one byte
      val in =
        Files.newBufferedReader(java.nio.file.Paths.get("/proc/sys/net/ipv4/ip_local_port_range"))
      try Option(in.readLine()).flatMap(_.trim.split("\\s+").headOption).map(_.toInt)
      finally in.close()
    } catch { case NonFatal(_) => None }

  private def bindable(port: Int): Boolean =
    try { bind(port); true }
    catch { case _: IOException => false }

  private def bind(port: Int): Int = {
    val socket = new ServerSocket()
    try {
      socket.setReuseAddress(true)
      socket.bind(new InetSocketAddress(InetAddress.getByName(Host), port))
      socket.getLocalPort
    } finally socket.close()
  }

  /**
   * A broker on the given ports (free ones if not given) and directory (a new temporary one,
   * deleted on stop, if not given).
   */
  def create(port: Option[Int], dataDir: Option[File]): Broker = {
    val brokerPort = port.getOrElse(freePort())
    var controllerPort = freePort()
    while (controllerPort == brokerPort) controllerPort = freePort()
    dataDir match {
      case Some(dir) =>
        new Broker(brokerPort, controllerPort, dir.toPath.toAbsolutePath, ownsDataDir = false)
      case None =>
        new Broker(
          brokerPort,
          controllerPort,
          Files.createTempDirectory("sluice-kafka-"),
          ownsDataDir = true)
    }
  }

  def adminProps(bootstrapServers: String): Properties = {
    val p = new Properties()
    p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000")
    p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000")
    p.setProperty(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "50")
    p
  }
}

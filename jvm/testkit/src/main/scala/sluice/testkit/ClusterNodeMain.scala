package sluice.testkit

import java.io.{BufferedReader, FileDescriptor, FileInputStream, FileOutputStream, InputStreamReader, PrintStream}
import java.nio.charset.StandardCharsets
import java.nio.file.Paths
import java.util.Properties

import scala.util.control.NonFatal

import kafka.server.{KafkaConfig, KafkaRaftServer}
import org.apache.kafka.common.utils.Time

/**
 * One node (broker and controller) of the test cluster, in a JVM of its own so that a test can
 * kill it; started by [[KafkaClusterMain]].
 *
 * {{{
 * java -cp <broker classpath> sluice.testkit.ClusterNodeMain <properties file> <cluster id>
 * }}}
 *
 * Formats its log directory on first start (a restarted node keeps its data), prints
 * `SLUICE_KAFKA_NODE_READY` once the node has joined the cluster, then shuts down cleanly
 * (controlled shutdown: leaders move away first) on `stop`, answering `OK`. When stdin ends (the
 * cluster's process is gone) it halts at once: the other nodes are going too, and a controlled
 * shutdown without a controller quorum would wait for one.
 */
object ClusterNodeMain {
  val ReadyLine = "SLUICE_KAFKA_NODE_READY"

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
    val server =
      try {
        Broker.formatOnce(config, Paths.get(props.getProperty("log.dirs")), args(1))
        val s = new KafkaRaftServer(config, Time.SYSTEM)
        s.startup()
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
    val stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
    var line = stdin.readLine()
    while (line != null && line.trim != "stop") line = stdin.readLine()
    if (line == null) Runtime.getRuntime.halt(0)
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

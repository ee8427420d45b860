package sluice.testkit

import java.io.{BufferedReader, File, FileDescriptor, FileOutputStream, InputStreamReader, PrintStream}
import java.nio.charset.StandardCharsets
import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

/**
 * A single-node Kafka broker for tests, the demo and benchmarks, driven over stdin/stdout.
 *
 * {{{
 * java -cp <broker classpath> sluice.testkit.KafkaBrokerMain [--port N] [--data-dir DIR]
 * }}}
 *
 * Prints `SLUICE_KAFKA_READY bootstrap=127.0.0.1:PORT` once clients can use the broker, then
 * answers the commands of [[Commands]] (one per line) with `OK ...` or `ERR <message>`. Stops,
 * deleting its temporary data directory, on `stop`, at the end of stdin (the parent died) and on
 * SIGTERM. Kafka's log goes to stderr (WARN and above). Exits with [[ExitPortInUse]] if a port it
 * chose was taken before Kafka could bind it.
 */
object KafkaBrokerMain {
  private val StartTimeoutMs = 60000L

  /**
   * The exit code when a port was taken: a parent that let this choose free ports may just retry.
   */
  val ExitPortInUse = 3

  final case class Options(port: Option[Int] = None, dataDir: Option[File] = None)

  def parseArgs(args: List[String], opts: Options = Options()): Options = args match {
    case Nil => opts
    case "--port" :: n :: rest if n.toIntOption.exists(p => p > 0 && p < 65536) =>
      parseArgs(rest, opts.copy(port = Some(n.toInt)))
    case "--data-dir" :: dir :: rest => parseArgs(rest, opts.copy(dataDir = Some(new File(dir))))
    case other :: _ =>
      throw new IllegalArgumentException(
        s"unexpected argument '$other'; " +
          "usage: KafkaBrokerMain [--port N (1-65535)] [--data-dir DIR]")
  }

  def main(args: Array[String]): Unit = {
    // Only protocol lines may reach stdout: whatever else prints there goes to stderr instead.
    val protocol =
      new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8)
    System.setOut(System.err)
    StderrLogging.configure()

    val opts =
      try parseArgs(args.toList)
      catch {
        case e: IllegalArgumentException =>
          System.err.println(s"sluice-testkit: ${e.getMessage}")
          sys.exit(2)
      }

    val began = System.nanoTime()
    val broker = Broker.create(opts.port, opts.dataDir)
    Runtime.getRuntime.addShutdownHook(new Thread(() => broker.stop(), "sluice-kafka-shutdown"))
    try broker.start(StartTimeoutMs)
    catch {
      case NonFatal(e) =>
        e.printStackTrace(System.err)
        broker.stop()
        val causes = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq
        def message(t: Throwable) = Option(t.getMessage).getOrElse("")
        // The deepest cause says what went wrong; a parent repeating it may add the address.
        val root = causes match {
          case _ :+ parent :+ last
              if message(last).nonEmpty && message(parent).contains(message(last)) =>
            parent
          case _ => causes.last
        }
        // Last, so that it ends the stderr tail a parent process shows.
        System.err.println(
          s"sluice-testkit: Kafka failed to start: ${CommandLoop.describe(e)}" +
            (if (root ne e) s" (root cause: ${CommandLoop.describe(root)})" else ""))
        sys.exit(if (causes.exists(_.isInstanceOf[java.net.BindException])) ExitPortInUse else 1)
    }
    val startMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began)
    System.err.println(
      s"sluice-testkit: Kafka ready at ${broker.bootstrapServers} in $startMs ms " +
        s"(data in ${broker.dataDir})")

    val commands = new Commands(broker.bootstrapServers)
    protocol.println(s"SLUICE_KAFKA_READY bootstrap=${broker.bootstrapServers}")
    val stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
    val stopCommand =
      try new CommandLoop(stdin, protocol, commands.run).run()
      catch {
        case NonFatal(e) =>
          System.err.println(
            s"sluice-testkit: reading commands failed: ${CommandLoop.describe(e)}")
          false
      }
    try commands.close()
    catch {
      case NonFatal(e) =>
        System.err.println(s"sluice-testkit: closing clients: ${CommandLoop.describe(e)}")
    }
    broker.stop()
    if (stopCommand) protocol.println("OK")
    sys.exit(0)
  }
}

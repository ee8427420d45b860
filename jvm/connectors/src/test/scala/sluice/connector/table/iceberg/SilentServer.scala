package sluice.connector.table.iceberg

import java.net.{InetAddress, ServerSocket, Socket}
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

/**
 * A server on 127.0.0.1 that accepts every connection and never answers: what a catalog whose
 * host is up but whose service hangs looks like to a client. `close()` closes the connections,
 * which ends a client's wait with an error.
 */
final class SilentServer extends AutoCloseable {
  private val server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress)
  private val accepted = new ConcurrentLinkedQueue[Socket]()

  val port: Int = server.getLocalPort

  /** How many connections it accepted so far. */
  def connections: Int = accepted.size

  private val acceptor = new Thread(
    () =>
      try while (true) accepted.add(server.accept())
      catch { case _: java.io.IOException => () }, // closed
    s"silent-server-$port")
  acceptor.setDaemon(true)
  acceptor.start()

  override def close(): Unit = {
    server.close()
    accepted.asScala.foreach(_.close())
  }
}

package sluice.connector.table.iceberg

import java.net.{InetAddress, InetSocketAddress}
import java.nio.charset.StandardCharsets
import java.util.concurrent.{CountDownLatch, Executors}
import java.util.concurrent.atomic.AtomicInteger

import com.sun.net.httpserver.HttpServer

/**
 * An Iceberg REST catalog server on 127.0.0.1 that answers the catalog's configuration request
 * (`GET /v1/config`, which building a REST catalog sends) and never answers any other request
 * (loading a table) until it is closed: a catalog service that hangs after a client connected.
 */
final class StallingRestServer extends AutoCloseable {
  private val released = new CountDownLatch(1)
  private val stalledCount = new AtomicInteger()
  private val server =
    HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress, 0), 0)
  server.setExecutor(Executors.newCachedThreadPool { r =>
    val t = new Thread(r, "stalling-rest-server")
    t.setDaemon(true)
    t
  })
  server.createContext(
    "/",
    exchange =>
      try {
        if (exchange.getRequestURI.getPath.endsWith("/v1/config")) {
          val body = """{"defaults": {}, "overrides": {}}""".getBytes(StandardCharsets.UTF_8)
          exchange.getResponseHeaders.add("Content-Type", "application/json")
          exchange.sendResponseHeaders(200, body.length.toLong)
          exchange.getResponseBody.write(body)
        } else {
          stalledCount.incrementAndGet()
          released.await()
          exchange.sendResponseHeaders(503, -1L)
        }
      } finally exchange.close())
  server.start()

  val uri: String = s"http://127.0.0.1:${server.getAddress.getPort}"

  /** How many requests it holds (or held) unanswered. */
  def stalled: Int = stalledCount.get

  override def close(): Unit = {
    released.countDown()
    server.stop(0)
  }
}

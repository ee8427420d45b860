package sluice.connector.table.iceberg

import java.net.{InetAddress, InetSocketAddress, URLDecoder}
import java.nio.charset.StandardCharsets
import java.util.concurrent.{CountDownLatch, Executors}
import java.util.concurrent.atomic.AtomicInteger

import com.sun.net.httpserver.{HttpExchange, HttpServer}
import org.apache.iceberg.HasTableOperations
import org.apache.iceberg.catalog.{Catalog, Namespace, TableIdentifier}
import org.apache.iceberg.rest.responses.{LoadTableResponse, LoadTableResponseParser}

/**
 * An Iceberg REST catalog server on 127.0.0.1 that answers the catalog's configuration request
 * (`GET /v1/config`, which building a REST catalog sends) and a scan's metrics report, and while
 * it stalls no other request (loading a table): a catalog service that hangs after a client
 * connected. A request it stalled
 * stays unanswered until the server is closed, also once it answers again (`recover()`): as a
 * pooled connection whose reads a service that came back never answers. Without `tables` it
 * stalls from the start; with them it answers a table's load from that catalog (its current
 * metadata, as a REST catalog service answers it) until `stall()`.
 */
final class StallingRestServer(tables: Option[Catalog] = None) extends AutoCloseable {
  private val released = new CountDownLatch(1)
  private val stalledCount = new AtomicInteger()
  @volatile private var stalling = tables.isEmpty
  private val TablePath = """.*/v1/namespaces/([^/]+)/tables/([^/]+)""".r
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
        val path = exchange.getRequestURI.getPath
        // a scan's metrics report (Iceberg's REST client sends one after planning): taken
        if (path.endsWith("/metrics")) exchange.sendResponseHeaders(204, -1L)
        else if (path.endsWith("/v1/config"))
          answer(exchange, 200, """{"defaults": {}, "overrides": {}}""")
        else if (stalling) {
          stalledCount.incrementAndGet()
          released.await()
          exchange.sendResponseHeaders(503, -1L)
        } else
          (path, tables) match {
            case (TablePath(namespace, name), Some(catalog)) =>
              val levels = URLDecoder.decode(namespace, StandardCharsets.UTF_8).split('\u001f')
              val table = catalog.loadTable(TableIdentifier.of(Namespace.of(levels: _*), name))
              val metadata = table.asInstanceOf[HasTableOperations].operations.current
              answer(
                exchange,
                200,
                LoadTableResponseParser.toJson(
                  LoadTableResponse.builder().withTableMetadata(metadata).build()))
            case _ => exchange.sendResponseHeaders(404, -1L)
          }
      } finally exchange.close())
  server.start()

  private def answer(exchange: HttpExchange, status: Int, json: String): Unit = {
    val body = json.getBytes(StandardCharsets.UTF_8)
    exchange.getResponseHeaders.add("Content-Type", "application/json")
    exchange.sendResponseHeaders(status, body.length.toLong)
    exchange.getResponseBody.write(body)
  }

  val uri: String = s"http://127.0.0.1:${server.getAddress.getPort}"

  /** How many requests it holds (or held) unanswered. */
  def stalled: Int = stalledCount.get

  /** From now on requests other than the configuration's go unanswered. */
  def stall(): Unit = stalling = true

  /** From now on table loads are answered (with `tables`); those stalled before still are not. */
  def recover(): Unit = stalling = false

  override def close(): Unit = {
    released.countDown()
    server.stop(0)
  }
}

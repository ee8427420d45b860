package sluice.connector.table.iceberg

import java.util.concurrent.{ConcurrentHashMap, CountDownLatch}
import java.util.concurrent.atomic.AtomicInteger

import org.apache.iceberg.{PartitionSpec, Schema, Table}
import org.apache.iceberg.catalog.{Namespace, TableIdentifier}
import org.apache.iceberg.inmemory.InMemoryCatalog
import org.apache.iceberg.types.Types

/**
 * A catalog (`catalog-impl`) holding table `db.t`, whose loads the gate its property `test.gate`
 * names can hold (as a pooled connection whose reads the service never answers) or fail, and
 * which counts its closes on that gate. Closing it ends the loads it holds, with an error, so a
 * test ends; Iceberg's own JDBC and Hive pools do not (their close waits for every lent
 * connection: docs/connectors.md, Still so).
 */
final class GatedCatalog extends InMemoryCatalog {
  private var gate: GatedCatalog.Gate = _
  private val closed = new CountDownLatch(1)

  override def initialize(name: String, properties: java.util.Map[String, String]): Unit = {
    super.initialize(name, properties)
    gate = GatedCatalog.gate(properties.get("test.gate"))
    createNamespace(Namespace.of("db"))
    createTable(
      TableIdentifier.of("db", "t"),
      new Schema(Types.NestedField.optional(1, "id", Types.LongType.get)),
      PartitionSpec.unpartitioned)
  }

  override def loadTable(identifier: TableIdentifier): Table = {
    if (gate.holding) {
      gate.held.incrementAndGet()
      closed.await()
      throw new IllegalStateException("the catalog was closed")
    }
    if (gate.failing) throw new IllegalStateException("the catalog's service failed")
    super.loadTable(identifier)
  }

  override def close(): Unit = {
    if (gate.inUse) gate.closedInUse = true
    gate.closes.incrementAndGet()
    closed.countDown()
    super.close()
  }
}

object GatedCatalog {

  /** What the catalogs of one `test.gate` do, and what was done to them. */
  final class Gate {

    /** Loads wait until their catalog is closed, then fail. */
    @volatile var holding = false

    /** Loads fail at once. */
    @volatile var failing = false

    /** Set by a test while it uses a table loaded from such a catalog. */
    @volatile var inUse = false

    /** A catalog was closed while `inUse`. */
    @volatile var closedInUse = false
    val held = new AtomicInteger()
    val closes = new AtomicInteger()
  }

  private val gates = new ConcurrentHashMap[String, Gate]()

  def gate(name: String): Gate = gates.computeIfAbsent(name, _ => new Gate)
}

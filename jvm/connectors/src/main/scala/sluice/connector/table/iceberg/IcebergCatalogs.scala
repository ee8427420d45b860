package sluice.connector.table.iceberg

import java.util.concurrent.ConcurrentHashMap
import java.util.regex.Pattern

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{CatalogUtil, Table}
import org.apache.iceberg.catalog.{Catalog, TableIdentifier}

import sluice.config.ConfigOption
import sluice.errors.SluiceError

/**
 * Iceberg catalogs given by properties (`catalog.<property>`), built by iceberg-core's
 * `CatalogUtil.buildIcebergCatalog` as Spark's Iceberg catalogs build theirs, and a table loaded
 * from one by its identifier. A catalog is built once per name and properties in this JVM (the
 * driver) and kept: an unbounded read loads its table again at every monitor interval, and a JDBC
 * catalog holds a connection pool that would otherwise be opened each time.
 */
private[iceberg] object IcebergCatalogs {
  import IcebergConfig.Context

  /** A catalog's name and properties (the `catalog.` prefix removed). */
  final case class CatalogSpec(name: String, properties: Map[String, String]) {

    /** For messages: the name and which properties were given, never their values (credentials). */
    override def toString: String =
      s"catalog '$name' (properties ${properties.keys.toSeq.sorted.mkString(", ")})"
  }

  private val built = new ConcurrentHashMap[CatalogSpec, Catalog]()

  /** What the cache keeps a catalog by. */
  private[iceberg] def keyOf(spec: CatalogSpec, conf: Configuration): CatalogSpec = spec

  /**
   * The catalog `spec` describes, built once and kept. It is built outside the map: building
   * inside `computeIfAbsent` holds the map's bin while the catalog connects, so one catalog that
   * never answers would block every caller whose catalog hashes to the same bin. Two callers may
   * then build the same catalog at once; the one that loses the race closes its own. Building
   * is bounded by `timeoutMs` (a catalog built after it is closed once built).
   */
  def catalog(
      spec: CatalogSpec,
      conf: Configuration,
      timeoutMs: Long,
      identifier: String): Catalog = {
    val key = keyOf(spec, conf)
    Option(built.get(key)).getOrElse {
      val made = BoundedCalls
        .within(timeoutMs)(build(spec, conf))(closeQuietly(_, spec))
        .getOrElse(throw timedOut("building it", spec, identifier, timeoutMs))
      Option(built.putIfAbsent(key, made)).fold(made) { kept =>
        closeQuietly(made, spec)
        kept
      }
    }
  }

  private def build(spec: CatalogSpec, conf: Configuration): Catalog =
    try CatalogUtil.buildIcebergCatalog(spec.name, spec.properties.asJava, conf)
    catch {
      case NonFatal(e) =>
        throw SluiceError.config(
          s"$Context: cannot build Iceberg $spec: ${redact(String.valueOf(e.getMessage), spec)}. " +
            s"Give '${IcebergConfig.CatalogProperty.name}' options as an Iceberg catalog takes its " +
            "properties: catalog.type (hadoop, hive, rest, jdbc, ...) or catalog.catalog-impl, and " +
            "catalog.uri, catalog.warehouse; a catalog's own jars (a JDBC driver) go on the class " +
            "path with --packages.",
          redacted(e, spec))
    }

  /** A catalog nobody will use (a connection pool, an HTTP client): its resources released. */
  private def closeQuietly(c: Catalog, spec: CatalogSpec): Unit = c match {
    case closeable: java.io.Closeable =>
      try closeable.close()
      catch {
        case NonFatal(
              e
            ) => // its message only, masked: a stack trace's causes could name a credential
          log.warn(
            s"$Context: closing an unused Iceberg $spec failed: ${redact(String.valueOf(e.getMessage), spec)}")
      }
    case _ =>
  }

  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  /**
   * The table `identifier` (`db.name`) as the catalog has it now: loaded again on every call,
   * the catalog's build and the load each bounded by `timeoutMs`.
   */
  def load(spec: CatalogSpec, identifier: String, conf: Configuration, timeoutMs: Long): Table = {
    val c = catalog(spec, conf, timeoutMs, identifier)
    BoundedCalls
      .within(timeoutMs)(loadFrom(c, spec, identifier))(_ => ())
      .getOrElse(throw timedOut("loading the table", spec, identifier, timeoutMs))
  }

  private def timedOut(doing: String, spec: CatalogSpec, identifier: String, timeoutMs: Long) =
    SluiceError.sourceFault(
      s"$Context: Iceberg $spec did not answer within $timeoutMs ms (option " +
        s"'${IcebergConfig.CatalogTimeoutMs.name}') while $doing for table '$identifier'. Check that " +
        "the catalog's service answers (catalog.uri); if it is only slow, give the option a longer " +
        "time. A running query fails; restarted from its checkpoint once the catalog answers, it " +
        "goes on where it stopped.")

  private def loadFrom(c: Catalog, spec: CatalogSpec, identifier: String): Table =
    try c.loadTable(TableIdentifier.parse(identifier))
    catch {
      case NonFatal(e) =>
        throw SluiceError.config(
          s"$Context: cannot load table '$identifier' from Iceberg $spec: " +
            s"${redact(String.valueOf(e.getMessage), spec)}. Give option '${IcebergConfig.Table.name}' " +
            "the table's identifier in that catalog (namespace.name, e.g. db.events).",
          redacted(e, spec))
    }

  /**
   * Names of properties whose values are credentials or may hold them (a JDBC URI can carry a
   * password): a message quoting a library's error never shows their values.
   */
  private val Credential =
    Pattern.compile("(?i)password|secret|token|credential|key|auth|uri|user")

  /** `text` with the values of `spec`'s credential properties masked. */
  def redact(text: String, spec: CatalogSpec): String =
    spec.properties
      .collect { case (k, v) if Credential.matcher(k).find() && v.nonEmpty => v }
      .toSeq
      .sortBy(-_.length) // a value inside another is masked after it
      .foldLeft(text)((t, v) => t.replace(v, ConfigOption.Mask))

  /**
   * The library's exception is kept as the cause only when its messages show no credential:
   * a cause's message is printed with the stack trace.
   */
  private def redacted(e: Throwable, spec: CatalogSpec): Throwable = {
    val messages = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20)
    if (messages.forall(t =>
        redact(String.valueOf(t.getMessage), spec) == String.valueOf(t.getMessage))) e
    else null
  }
}

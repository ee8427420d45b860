package sluice.connector.table.iceberg

import java.nio.charset.StandardCharsets
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{CatalogUtil, Table}
import org.apache.iceberg.catalog.{Catalog, TableIdentifier}

import sluice.errors.SluiceError

/**
 * Iceberg catalogs given by properties (`catalog.<property>`), built by iceberg-core's
 * `CatalogUtil.buildIcebergCatalog` as Spark's Iceberg catalogs build theirs, and a table loaded
 * from one by its identifier. A catalog is built once per name, properties and Hadoop settings
 * in this JVM (the driver) and kept: an unbounded read loads its table again at every monitor
 * interval, and a JDBC catalog holds a connection pool that would otherwise be opened each time.
 * Building a catalog and loading a table are each bounded by the source's `catalogTimeoutMs`.
 */
private[iceberg] object IcebergCatalogs {
  import IcebergConfig.Context

  private val log = org.slf4j.LoggerFactory.getLogger(getClass)

  /** A catalog's name and properties (the `catalog.` prefix removed). */
  final case class CatalogSpec(name: String, properties: Map[String, String]) {

    /** For messages: the name and which properties were given, never their values (credentials). */
    override def toString: String =
      s"catalog '$name' (properties ${properties.keys.toSeq.sorted.mkString(", ")})"
  }

  /**
   * What a catalog is built from: its spec and the Hadoop settings it is handed (its FileIO and
   * a Hadoop catalog read files with them), the latter as a digest, so the key holds no copy of
   * them (they may hold credentials) and prints none. Spark's own settings (`spark.*`), which
   * Spark copies into a session's Hadoop settings and a streaming query's session changes
   * (adaptive execution off), are left out: no catalog reads them; so are Hadoop's defaults.
   */
  private[iceberg] final class CatalogKey(val spec: CatalogSpec, val hadoop: String) {
    override def equals(o: Any): Boolean = o match {
      case k: CatalogKey => k.spec == spec && k.hadoop == hadoop
      case _ => false
    }
    override def hashCode: Int = (spec, hadoop).##
    override def toString: String = s"$spec with Hadoop settings ${hadoop.take(12)}"
  }

  private val built = new ConcurrentHashMap[CatalogKey, Catalog]()

  /**
   * A setting only Hadoop's defaults give (`core-default.xml`, `hdfs-default.xml`, ...): left out
   * of the key, since a JVM adds default files to every configuration as it loads more of Hadoop
   * (a file system's first use), which changes no setting a session gave.
   */
  private def hadoopDefault(conf: Configuration, key: String): Boolean =
    Option(conf.getPropertySources(key)).exists(s =>
      s.nonEmpty && s.forall(_.endsWith("-default.xml")))

  private[iceberg] def keyOf(spec: CatalogSpec, conf: Configuration): CatalogKey = {
    val digest = MessageDigest.getInstance("SHA-256")
    conf.iterator.asScala
      .filterNot(e => e.getKey.startsWith("spark.") || hadoopDefault(conf, e.getKey))
      .map(e => s"${e.getKey}=${e.getValue}")
      .toSeq
      .sorted
      .foreach(s => digest.update((s + "\n").getBytes(StandardCharsets.UTF_8)))
    new CatalogKey(spec, digest.digest.map(b => f"$b%02x").mkString)
  }

  /**
   * The catalog `spec` describes with `conf`, built once and kept. It is built outside the map:
   * building inside `computeIfAbsent` holds the map's bin while the catalog connects, so one
   * catalog that never answers would block every caller whose catalog hashes to the same bin.
   * Two callers may then build the same catalog at once; the one that loses the race closes its
   * own. `later`: the table was loaded before (a plan of a running query), so a failure is a fault
   * of the catalog now, not of the options.
   */
  def catalog(
      spec: CatalogSpec,
      conf: Configuration,
      timeoutMs: Long,
      identifier: String,
      later: Boolean): Catalog = {
    val key = keyOf(spec, conf)
    Option(built.get(key)).getOrElse {
      val made = BoundedCalls
        .within(timeoutMs)(build(spec, conf, identifier, later))(closeQuietly(_, spec))
        .getOrElse(throw timedOut("building it", spec, identifier, timeoutMs))
      Option(built.putIfAbsent(key, made)).fold(made) { kept =>
        closeQuietly(made, spec)
        kept
      }
    }
  }

  private def build(
      spec: CatalogSpec,
      conf: Configuration,
      identifier: String,
      later: Boolean): Catalog =
    // a copy: a catalog may change the settings it is handed (a file system's initialization
    // does), and the caller's would then no longer find it by them
    try
      CatalogUtil.buildIcebergCatalog(spec.name, spec.properties.asJava, new Configuration(conf))
    catch {
      case NonFatal(e) =>
        val why = CatalogSecrets.redact(String.valueOf(e.getMessage), spec)
        val cause = CatalogSecrets.maskedCause(e, spec)
        if (later)
          throw SluiceError.sourceFault(
            s"$Context: cannot build Iceberg $spec for table '$identifier' at this plan, though the " +
              s"source was built with it: $why. $Retry",
            cause)
        throw SluiceError.config(
          s"$Context: cannot build Iceberg $spec: $why. " +
            s"Give '${IcebergConfig.CatalogProperty.name}' options as an Iceberg catalog takes its " +
            "properties: catalog.type (hadoop, hive, rest, jdbc, ...) or catalog.catalog-impl, and " +
            "catalog.uri, catalog.warehouse; a catalog's own jars (a JDBC driver) go on the class " +
            "path with --packages.",
          cause)
    }

  /**
   * The table `identifier` (`db.name`) as the catalog has it now: loaded again on every call.
   * `later`: it was loaded before, when the source was built (a later plan of a query).
   */
  def load(
      spec: CatalogSpec,
      identifier: String,
      conf: Configuration,
      timeoutMs: Long,
      later: Boolean): Table = {
    val c = catalog(spec, conf, timeoutMs, identifier, later)
    BoundedCalls
      .within(timeoutMs)(loadFrom(c, spec, identifier, later))(_ => ())
      .getOrElse(throw timedOut("loading the table", spec, identifier, timeoutMs))
  }

  private def loadFrom(c: Catalog, spec: CatalogSpec, identifier: String, later: Boolean): Table =
    try c.loadTable(TableIdentifier.parse(identifier))
    catch {
      case NonFatal(e) =>
        val why = CatalogSecrets.redact(String.valueOf(e.getMessage), spec)
        val cause = CatalogSecrets.maskedCause(e, spec)
        if (later)
          throw SluiceError.sourceFault(
            s"$Context: cannot load table '$identifier' from Iceberg $spec at this plan, though it " +
              s"loaded when the source was built: $why. $Retry",
            cause)
        throw SluiceError.config(
          s"$Context: cannot load table '$identifier' from Iceberg $spec: $why. Give option " +
            s"'${IcebergConfig.Table.name}' the table's identifier in that catalog (namespace.name, " +
            "e.g. db.events).",
          cause)
    }

  /** What to do about a catalog that failed at a later plan. */
  private val Retry =
    "If the catalog is unreachable for now, restart the query once it answers: it goes on from " +
      "its checkpoint where it stopped. If the table was dropped or renamed, or the catalog's " +
      "properties no longer work, fix that, or read the table again on a new checkpoint."

  private def timedOut(doing: String, spec: CatalogSpec, identifier: String, timeoutMs: Long) =
    SluiceError.sourceFault(
      s"$Context: Iceberg $spec did not answer within $timeoutMs ms (option " +
        s"'${IcebergConfig.CatalogTimeoutMs.name}') while $doing for table '$identifier'. Check that " +
        "the catalog's service answers (catalog.uri); if it is only slow, give the option a longer " +
        "time. A running query fails; restarted from its checkpoint once the catalog answers, it " +
        "goes on where it stopped.")

  /** A catalog nobody will use (a connection pool, an HTTP client): its resources released. */
  private def closeQuietly(c: Catalog, spec: CatalogSpec): Unit = c match {
    case closeable: java.io.Closeable =>
      try closeable.close()
      catch {
        case NonFatal(
              e
            ) => // its message only, masked: a stack trace's causes could name a credential
          log.warn(
            s"$Context: closing an unused Iceberg $spec failed: " +
              CatalogSecrets.redact(String.valueOf(e.getMessage), spec))
      }
    case _ =>
  }
}

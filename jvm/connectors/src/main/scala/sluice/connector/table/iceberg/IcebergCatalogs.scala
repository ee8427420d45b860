package sluice.connector.table.iceberg

import java.nio.charset.StandardCharsets
import java.security.MessageDigest
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.iceberg.{CatalogUtil, Table}
import org.apache.iceberg.catalog.{Catalog, TableIdentifier}
import org.apache.iceberg.exceptions.{ForbiddenException, NoSuchNamespaceException, NoSuchTableException, NotAuthorizedException}

import sluice.errors.SluiceError

/**
 * Iceberg catalogs given by properties (`catalog.<property>`), built by iceberg-core's
 * `CatalogUtil.buildIcebergCatalog` as Spark's Iceberg catalogs build theirs, and a table loaded
 * from one by its identifier. A catalog is built once per name, properties and Hadoop settings
 * in this JVM (the driver) and kept: an unbounded read loads its table again at every monitor
 * interval, and a JDBC catalog holds a connection pool that would otherwise be opened each time.
 * Building a catalog and loading a table are each bounded by the source's `catalogTimeoutMs`. A
 * catalog whose table load ran out of that time, failed in its service or connection, or was
 * left by a caller that stopped while it waited is dropped (closed once no caller uses a table
 * loaded from it), so the next load builds a fresh one: a pool whose connections hang in reads
 * the service never answers would otherwise fail every later load in this JVM. A load the
 * catalog refused (no such table or namespace, not allowed) keeps it: the catalog answered, and
 * other queries may share it.
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

  /**
   * A kept catalog and the callers using a table loaded from it now (a table reads its manifests
   * through the catalog's FileIO, which closing the catalog may close). Once dropped from the
   * cache it is closed when the last of them is done.
   */
  private final class Kept(val catalog: Catalog, spec: CatalogSpec) {
    private var users = 0
    private var dropped = false

    /** False once dropped: the caller takes the cache's catalog again. */
    def use(): Boolean = synchronized {
      if (!dropped) users += 1
      !dropped
    }

    def done(): Unit =
      if (synchronized { users -= 1; dropped && users == 0 }) close(catalog, spec)

    def drop(): Unit =
      if (synchronized { val first = !dropped; dropped = true; first && users == 0 })
        close(catalog, spec)
  }

  private val built = new ConcurrentHashMap[CatalogKey, Kept]()

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
      later: Boolean): Catalog =
    kept(keyOf(spec, conf), spec, conf, timeoutMs, identifier, later).catalog

  private def kept(
      key: CatalogKey,
      spec: CatalogSpec,
      conf: Configuration,
      timeoutMs: Long,
      identifier: String,
      later: Boolean): Kept =
    Option(built.get(key)).getOrElse {
      val made = BoundedCalls
        .within(timeoutMs)(build(spec, conf, identifier, later))(close(_, spec))
        .getOrElse(throw timedOut("building it", spec, identifier, timeoutMs))
      val mine = new Kept(made, spec)
      Option(built.putIfAbsent(key, mine)).fold(mine) { other =>
        mine.drop()
        other
      }
    }

  /** The kept catalog, marked in use (see `Kept`); one dropped meanwhile is passed over. */
  @annotation.tailrec
  private def using(
      key: CatalogKey,
      spec: CatalogSpec,
      conf: Configuration,
      timeoutMs: Long,
      identifier: String,
      later: Boolean): Kept = {
    val k = kept(key, spec, conf, timeoutMs, identifier, later)
    if (k.use()) k else using(key, spec, conf, timeoutMs, identifier, later)
  }

  /** `k` out of the cache, if it is still there, and closed once no caller uses it. */
  private def drop(key: CatalogKey, k: Kept): Unit = {
    built.remove(key, k)
    k.drop()
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
        throw failure(
          e,
          spec,
          later,
          s"cannot build Iceberg $spec for table '$identifier' at this plan, though the source " +
            "was built with it",
          s"cannot build Iceberg $spec",
          s"Give '${IcebergConfig.CatalogProperty.name}' options as an Iceberg catalog takes its " +
            "properties: catalog.type (hadoop, hive, rest, jdbc, ...) or catalog.catalog-impl, and " +
            "catalog.uri, catalog.warehouse; a catalog's own jars (a JDBC driver) go on the class " +
            "path with --packages.")
    }

  /**
   * `use` of the table `identifier` (`db.name`) as the catalog has it now: loaded again on every
   * call; the catalog is not closed while `use` runs. `later`: it was loaded before, when the
   * source was built (a later plan of a query). A load that runs out of `timeoutMs`, fails other
   * than by the catalog's refusal (`refused`), or is interrupted (the caller's query stopped while
   * it waited; the interrupt is rethrown) drops the catalog, so the next call builds a fresh one.
   */
  def withTable[T](
      spec: CatalogSpec,
      identifier: String,
      conf: Configuration,
      timeoutMs: Long,
      later: Boolean)(use: Table => T): T = {
    val key = keyOf(spec, conf)
    val k = using(key, spec, conf, timeoutMs, identifier, later)
    try {
      val loaded =
        try BoundedCalls.within(timeoutMs)(loadFrom(k.catalog, spec, identifier, later))(_ => ())
        catch {
          // an interrupt is no NonFatal: the abandoned load may still hold a pooled connection
          case e @ (NonFatal(_) | _: InterruptedException) =>
            drop(key, k)
            throw e
        }
      loaded match {
        case Some(Right(table)) => use(table)
        case Some(Left(refusal)) => throw refusal // the catalog answered: kept
        case None =>
          drop(key, k)
          throw timedOut("loading the table", spec, identifier, timeoutMs)
      }
    } finally k.done()
  }

  /**
   * A catalog's answer that the table is not there or not for this caller: the catalog works (a
   * typo in one query's `table` must not rebuild a catalog other queries share).
   */
  private def refused(e: Throwable): Boolean = e match {
    case _: NoSuchTableException | _: NoSuchNamespaceException | _: ForbiddenException |
        _: NotAuthorizedException =>
      true
    case _ => false
  }

  /** The table, or the catalog's refusal (`refused`) as Sluice's error; another failure thrown. */
  private def loadFrom(
      c: Catalog,
      spec: CatalogSpec,
      identifier: String,
      later: Boolean): Either[Throwable, Table] =
    try Right(c.loadTable(TableIdentifier.parse(identifier)))
    catch {
      case NonFatal(e) =>
        val error = failure(
          e,
          spec,
          later,
          s"cannot load table '$identifier' from Iceberg $spec at this plan, though it loaded " +
            "when the source was built",
          s"cannot load table '$identifier' from Iceberg $spec",
          s"Give option '${IcebergConfig.Table.name}' the table's identifier in that catalog " +
            "(namespace.name, e.g. db.events).")
        if (refused(e)) Left(error) else throw error
    }

  /**
   * A catalog library's failure `e`, its message and causes masked: at a later plan a source
   * fault (`atPlan`, then what to do), else a configuration error (`atBuild`, then `fix`).
   */
  private def failure(
      e: Throwable,
      spec: CatalogSpec,
      later: Boolean,
      atPlan: String,
      atBuild: String,
      fix: String): Throwable = {
    val why = CatalogSecrets.redact(String.valueOf(e.getMessage), spec)
    val cause = CatalogSecrets.maskedCause(e, spec)
    if (later) SluiceError.sourceFault(s"$Context: $atPlan: $why. $Retry", cause)
    else SluiceError.config(s"$Context: $atBuild: $why. $fix", cause)
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

  /**
   * A catalog nobody will use (a connection pool, an HTTP client): its resources released, on a
   * thread of its own, since closing a connection that hangs may hang too.
   */
  private def close(c: Catalog, spec: CatalogSpec): Unit = c match {
    case closeable: java.io.Closeable =>
      BoundedCalls.detached {
        try closeable.close()
        catch {
          // its message only, masked: a stack trace's causes could name a credential
          case NonFatal(e) =>
            log.warn(
              s"$Context: closing an unused Iceberg $spec failed: " +
                CatalogSecrets.redact(String.valueOf(e.getMessage), spec))
        }
      }
    case _ =>
  }
}

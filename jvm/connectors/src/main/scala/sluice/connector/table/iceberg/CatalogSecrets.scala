package sluice.connector.table.iceberg

import java.net.URLEncoder
import java.nio.charset.StandardCharsets
import java.util.regex.Pattern

import com.fasterxml.jackson.core.io.JsonStringEncoder

import sluice.config.ConfigOption
import sluice.connector.table.iceberg.IcebergCatalogs.CatalogSpec

/**
 * A catalog library's error text with the values of the catalog's credential properties masked,
 * also where the library wrote them encoded: a URL or a form carries a value URL-encoded, a JSON
 * body (a REST catalog's request or error) JSON-escaped.
 */
private[iceberg] object CatalogSecrets {

  /**
   * Names of properties whose values are credentials or may hold them (a JDBC URI can carry a
   * password): a message quoting a library's error never shows their values.
   */
  private val Credential =
    Pattern.compile("(?i)password|secret|token|credential|key|auth|uri|user|header")

  private val PercentEscape = Pattern.compile("%[0-9A-F]{2}")

  /** `value` and the forms a library may write it in. */
  private def forms(value: String): Seq[String] = {
    val url = URLEncoder.encode(value, StandardCharsets.UTF_8)
    val json = new String(JsonStringEncoder.getInstance.quoteAsString(value))
    val lowerHex = {
      val m = PercentEscape.matcher(url)
      val out = new StringBuilder
      var at = 0
      while (m.find()) {
        out ++= url.substring(at, m.start) ++= m.group.toLowerCase
        at = m.end
      }
      (out ++= url.substring(at)).toString
    }
    Seq(value, url, url.replace("+", "%20"), lowerHex, json, json.replace("/", "\\/")).distinct
  }

  /** `text` with the values of `spec`'s credential properties masked, in every form of them. */
  def redact(text: String, spec: CatalogSpec): String =
    spec.properties
      .collect { case (k, v) if Credential.matcher(k).find() && v.nonEmpty => forms(v) }
      .flatten
      .toSeq
      .distinct
      .sortBy(-_.length) // a value inside another is masked after it
      .foldLeft(text)((t, v) => t.replace(v, ConfigOption.Mask))

  /**
   * A library's exception to keep as a cause: itself when no message of it, its causes or the
   * exceptions they suppressed (a stack trace prints all of them) shows a credential; else a copy
   * of that tree whose messages are masked, each naming the class it copies.
   */
  def maskedCause(e: Throwable, spec: CatalogSpec): Throwable =
    if (tree(e).forall(t => clean(t, spec))) e else masked(e, spec, depth = 0)

  private def clean(t: Throwable, spec: CatalogSpec): Boolean = {
    val m = String.valueOf(t.getMessage)
    redact(m, spec) == m
  }

  /** `e`, its causes and suppressed exceptions, each once (a cycle is possible), 100 at most. */
  private def tree(e: Throwable): Seq[Throwable] = {
    val seen = new java.util.IdentityHashMap[Throwable, Unit]()
    def walk(t: Throwable): Unit =
      if (t != null && !seen.containsKey(t) && seen.size < 100) {
        seen.put(t, ())
        walk(t.getCause)
        t.getSuppressed.foreach(walk)
      }
    walk(e)
    import scala.jdk.CollectionConverters._
    seen.keySet.asScala.toSeq
  }

  private def masked(t: Throwable, spec: CatalogSpec, depth: Int): Throwable = {
    val copy = new CatalogLibraryException(
      s"${t.getClass.getName}: ${redact(String.valueOf(t.getMessage), spec)}",
      Option(t.getCause)
        .filter(c => depth < 20 && (c ne t))
        .map(masked(_, spec, depth + 1))
        .orNull)
    copy.setStackTrace(t.getStackTrace)
    if (depth < 20) t.getSuppressed.foreach(s => copy.addSuppressed(masked(s, spec, depth + 1)))
    copy
  }

  /** A catalog library's exception whose message was masked; the message names its class. */
  final class CatalogLibraryException(message: String, cause: Throwable)
      extends RuntimeException(message, cause)
}

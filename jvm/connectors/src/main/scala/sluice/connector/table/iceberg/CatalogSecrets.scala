package sluice.connector.table.iceberg

import java.net.URLEncoder
import java.nio.charset.StandardCharsets
import java.util.regex.Pattern

import com.fasterxml.jackson.core.io.JsonStringEncoder

import sluice.config.ConfigOption
import sluice.connector.table.iceberg.IcebergCatalogs.CatalogSpec

/**
 * A catalog library's error text with the values of the catalog's credential properties masked,
 * also where the library wrote them encoded: a form carries a value URL-encoded, a URI's path or
 * query percent-encoded (`@`, `/`, `:` left as they are), a JSON body (a REST catalog's request
 * or error) JSON-escaped; and the secret of a `credential` given as
 * `id:secret` (an OAuth2 client's), which a library may print alone.
 */
private[iceberg] object CatalogSecrets {

  /**
   * Names of properties whose values are credentials or may hold them (a JDBC URI can carry a
   * password): a message quoting a library's error never shows their values.
   */
  private val Credential =
    Pattern.compile("(?i)password|secret|token|credential|key|auth|uri|user|header")

  private val PercentEscape = Pattern.compile("%[0-9A-F]{2}")

  /** What a URI's path or query keeps as it is (RFC 3986: unreserved, sub-delims, `:@/?`). */
  private def uriKeeps(c: Char): Boolean =
    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
      "-._~!$&'()*+,;=:@/?".indexOf(c) >= 0

  /** `value` as a URI writes it: each UTF-8 byte of another character as `%XX`. */
  private def uriEncoded(value: String): String = {
    val out = new StringBuilder
    value.codePoints.forEach { cp =>
      if (cp < 128 && uriKeeps(cp.toChar)) out += cp.toChar
      else
        new String(Character.toChars(cp))
          .getBytes(StandardCharsets.UTF_8)
          .foreach(b => out ++= f"%%${b & 0xff}%02X")
    }
    out.toString
  }

  /** Its `%XX` escapes in lower case, as some libraries write them. */
  private def lowerHex(encoded: String): String = {
    val m = PercentEscape.matcher(encoded)
    val out = new StringBuilder
    var at = 0
    while (m.find()) {
      out ++= encoded.substring(at, m.start) ++= m.group.toLowerCase
      at = m.end
    }
    (out ++= encoded.substring(at)).toString
  }

  /** `value` and the forms a library may write it in. */
  private def forms(value: String): Seq[String] = {
    val url = URLEncoder.encode(value, StandardCharsets.UTF_8)
    val uri = uriEncoded(value)
    val json = new String(JsonStringEncoder.getInstance.quoteAsString(value))
    Seq(
      value,
      url,
      url.replace("+", "%20"),
      lowerHex(url),
      uri,
      lowerHex(uri),
      json,
      json.replace("/", "\\/")).distinct
  }

  /**
   * The values of `spec`'s credential properties to mask: each, and of a `credential` given as
   * `id:secret` (Iceberg's OAuth2 client credential) its secret too.
   */
  private def secrets(spec: CatalogSpec): Seq[String] =
    spec.properties.toSeq.flatMap {
      case (k, v) if Credential.matcher(k).find() && v.nonEmpty =>
        val secretHalf =
          if (k.toLowerCase(java.util.Locale.ROOT).split('.').last == "credential" && v.indexOf(
              ':') >= 0)
            Some(v.substring(v.indexOf(':') + 1)).filter(_.nonEmpty)
          else None
        v +: secretHalf.toSeq
      case _ => Nil
    }

  /** `text` with the values of `spec`'s credential properties masked, in every form of them. */
  def redact(text: String, spec: CatalogSpec): String =
    secrets(spec)
      .flatMap(forms)
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

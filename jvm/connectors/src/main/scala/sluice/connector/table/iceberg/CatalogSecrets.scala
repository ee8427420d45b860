package sluice.connector.table.iceberg

import java.nio.charset.StandardCharsets
import java.util.regex.{Matcher, Pattern}

import com.fasterxml.jackson.core.io.JsonStringEncoder

import sluice.config.ConfigOption
import sluice.connector.table.iceberg.IcebergCatalogs.CatalogSpec

/**
 * A catalog library's error text with the values of the catalog's credential properties masked,
 * also where the library wrote them encoded, in whatever mix: each character as it is or
 * percent-encoded (a form's URL-encoding, a URI's path or query, an HTTP client's user
 * information: each library leaves another set of characters as they are), a space also as `+`,
 * or JSON-escaped (a REST catalog's request or error); and the secret of a `credential` given as
 * `id:secret` (an OAuth2 client's), which a library may print alone.
 */
private[iceberg] object CatalogSecrets {

  /**
   * Names of properties whose values are credentials or may hold them (a JDBC URI can carry a
   * password): a message quoting a library's error never shows their values.
   */
  private val Credential =
    Pattern.compile("(?i)password|secret|token|credential|key|auth|uri|user|header")

  private val Json = JsonStringEncoder.getInstance

  /**
   * A pattern of `value` written any of those ways: per character, the character, its UTF-8
   * bytes as `%XX` (hex digits in either case), for a space `+`, and its JSON escapes (`\"`,
   * `\\`, `\/`, `\uXXXX`). Per character rather than per encoder: an encoder that leaves `@`
   * as it is but not `[`, or `+` but not `@`, writes a mix no list of encoders foresees.
   */
  private def anyForm(value: String): Pattern = {
    val out = new StringBuilder
    value.codePoints.forEach { cp =>
      val c = new String(Character.toChars(cp))
      val percent = c.getBytes(StandardCharsets.UTF_8).map(b => f"%%${b & 0xff}%02X").mkString
      val forms = Seq(Pattern.quote(c), s"(?i:$percent)") ++
        Option(new String(Json.quoteAsString(c))).filter(_ != c).map(Pattern.quote) ++
        (if (cp == ' ') Seq("\\+") else Nil) ++
        (if (cp == '/') Seq(Pattern.quote("\\/")) else Nil) ++
        (if (cp < 0x10000) Seq(f"(?i:\\\\u$cp%04X)") else Nil)
      out ++= forms.distinct.mkString("(?:", "|", ")")
    }
    Pattern.compile(out.toString)
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

  /**
   * `text` with the values of `spec`'s credential properties masked, in every form of them; all
   * of it withheld if masking one would take too long (`Withheld`).
   */
  def redact(text: String, spec: CatalogSpec): String =
    try
      secrets(spec).distinct
        .sortBy(-_.length) // a value inside another is masked after it
        .foldLeft(text)((t, v) =>
          anyForm(v)
            .matcher(new Bounded(t, new Array[Long](1)))
            .replaceAll(Matcher.quoteReplacement(ConfigOption.Mask)))
    catch { case _: TooLong => Withheld }

  /**
   * What a message says when masking it was stopped: a secret whose characters each have forms of
   * different lengths (a run of `\` is `\` or JSON's `\\`, a run of `%` is `%` or `%25`) lets a
   * pattern backtrack exponentially over a text that nearly holds it, and a hung mask would hang
   * the query's error path.
   */
  val Withheld =
    "(the catalog library's message is withheld: masking the credentials in it took too long)"

  /** Characters a mask may read of one text, in all its attempts: 200 times a message of 50,000. */
  private val MaxReads = 10000000L

  private final class TooLong extends RuntimeException(null, null, false, false)

  /** `text` read by a pattern, counting every character read (`reads`, shared by subsequences). */
  private final class Bounded(text: CharSequence, reads: Array[Long]) extends CharSequence {
    override def charAt(i: Int): Char = {
      reads(0) += 1
      if (reads(0) > MaxReads) throw new TooLong
      text.charAt(i)
    }
    override def length: Int = text.length
    override def subSequence(start: Int, end: Int): CharSequence =
      new Bounded(text.subSequence(start, end), reads)
    override def toString: String = text.toString
  }

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

package sluice.connector.table.iceberg

import java.net.URLEncoder
import java.nio.charset.StandardCharsets

import org.apache.iceberg.inmemory.InMemoryCatalog

/**
 * A catalog (`catalog-impl`) whose initialization fails the ways a library's error may carry a
 * credential property's value (`token`) where a message does not show it as given: property
 * `test.failure` `encoded` puts it in the message URL-encoded (a request URL) and JSON-escaped
 * (a request body), `uri` percent-encoded as `java.net.URI` writes a path and a query, `suppressed`
 * only in an exception the failure suppressed (a close that failed on the way out), `userinfo` as
 * an HTTP client writes a URL's password (`@`, `/`, `:`, `[`, `]` and a space percent-encoded in
 * lower case, `+` and `&` left as they are: a mix neither URL- nor URI-encoding writes); `credential`
 * names the secret of property `credential` (`id:secret`) alone, as an OAuth2 client's error may.
 */
final class FailingCatalog extends InMemoryCatalog {
  override def initialize(name: String, properties: java.util.Map[String, String]): Unit = {
    val token = properties.get("token")
    properties.get("test.failure") match {
      case "encoded" =>
        val url = URLEncoder.encode(token, StandardCharsets.UTF_8)
        val json = token.replace("\\", "\\\\").replace("\"", "\\\"")
        throw new IllegalStateException(
          s"""GET https://catalog.test/v1/config?token=$url failed; body {"token": "$json"}""")
      case "uri" =>
        val uri =
          new java.net.URI(
            "https",
            null,
            "catalog.test",
            -1,
            s"/v1/tokens/$token",
            s"token=$token",
            null)
        throw new IllegalStateException(s"GET ${uri.toASCIIString} failed")
      case "userinfo" =>
        val encoded = token.flatMap { c =>
          if (" \"':;<=>@[]^`{}|/\\?#%".indexOf(c) >= 0) f"%%${c.toInt}%02x" else c.toString
        }
        throw new IllegalStateException(
          s"GET https://reader:$encoded@catalog.test/v1/config failed")
      case "credential" =>
        val Array(id, secret) = properties.get("credential").split(":", 2)
        throw new IllegalStateException(s"client '$id' rejected: secret $secret is not valid")
      case "suppressed" =>
        val failure = new IllegalStateException("cannot reach the catalog")
        failure.addSuppressed(new IllegalStateException(s"closing the session of $token failed"))
        throw failure
      case other => throw new IllegalArgumentException(s"test.failure: $other")
    }
  }
}

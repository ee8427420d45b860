package sluice.connector.file

import org.scalatest.funsuite.AnyFunSuite

/** When a file a listing cannot read is waited for, and when it fails the query. */
class NotReadyFilesSuite extends AnyFunSuite {
  private var now = 1000000000L
  private val cause = new java.io.EOFException("Unexpected end of input stream")
  private def file(path: String, modifiedMsAgo: Long) = DiscoveredFile(path, 10L, now - modifiedMsAgo)

  test("monitored: waited for while it keeps being modified; unmodified for the limit, it fails naming it") {
    val files = new NotReadyFiles("FileSource", monitored = true, () => now)
    assert(files.metrics == Map("filesNotReady" -> "0"))
    assert(files.retryLater(file("x.json.gz", 0L), "could not decompress file 'x.json.gz'", "it is corrupt or truncated", cause))
    now += 9 * 60 * 1000L // its writer wrote again a moment ago
    assert(files.retryLater(file("x.json.gz", 1000L), "could not decompress file 'x.json.gz'", "it is corrupt or truncated", cause))
    assert(files.retryLater(file("y.json.gz", 5000L), "could not decompress file 'y.json.gz'", "it is corrupt or truncated", cause))
    assert(files.metrics == Map("filesNotReady" -> "2"))
    files.ready("x.json.gz")
    files.retainFound(Nil) // y was removed
    assert(files.metrics == Map("filesNotReady" -> "0"))

    val e = intercept[IllegalStateException](files.retryLater(file("z.json.gz", NotReadyFiles.LimitMs),
      "could not decompress file 'z.json.gz'", "it is corrupt or truncated", cause))
    assert(e.getMessage.startsWith("FileSource: could not decompress file 'z.json.gz', unmodified for 600 s: it is " +
      "corrupt or truncated. Files must be complete when they appear"), e.getMessage)
    assert(e.getMessage.contains("Unexpected end of input stream") && (e.getCause eq cause))
  }

  test("bounded: an unreadable file fails at once, however new") {
    val files = new NotReadyFiles("FileSource", monitored = false, () => now)
    val e = intercept[IllegalStateException](files.retryLater(file("x.json.gz", 0L), "could not decompress file " +
      "'x.json.gz'", "it is corrupt or truncated", cause))
    assert(e.getMessage.startsWith("FileSource: could not decompress file 'x.json.gz': it is corrupt or truncated."))
    assert(files.metrics.isEmpty)
  }
}

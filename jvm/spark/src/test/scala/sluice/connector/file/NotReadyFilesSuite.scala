package sluice.connector.file

import org.scalatest.funsuite.AnyFunSuite

/** When a file a listing cannot read is waited for, and when it fails the query. */
class NotReadyFilesSuite extends AnyFunSuite {
  private var now = 1000000000L
  private val cause = new java.io.EOFException("Unexpected end of input stream")
  private def file(path: String, modifiedMsAgo: Long) =
    DiscoveredFile(path, 10L, now - modifiedMsAgo)

  test(
    "monitored: waited for while it changes, not read again while it does not; unchanged for the limit, it fails naming it") {
    val files = new NotReadyFiles("FileSource", monitored = true, () => now)
    assert(files.metrics == Map("filesNotReady" -> "0"))
    val x = file("x.json.gz", 0L)
    assert(!files.unchangedSinceFailure(x), "never failed: it is read")
    assert(
      files.retryLater(
        x,
        "could not decompress file 'x.json.gz'",
        "it is corrupt or truncated",
        cause))
    now += 9 * 60 * 1000L
    assert(files.unchangedSinceFailure(x), "unchanged since it failed: not read again")
    val grown = x.copy(length = 20L, modificationTime = now - 1000L) // its writer wrote again
    assert(!files.unchangedSinceFailure(grown))
    assert(
      files.retryLater(
        grown,
        "could not decompress file 'x.json.gz'",
        "it is corrupt or truncated",
        cause))
    now += 9 * 60 * 1000L // 18 minutes since it first failed, 9 since it changed: still waited for
    assert(files.unchangedSinceFailure(grown))
    // a modification time far in the past (a file system clock behind the driver's) does not matter
    assert(
      files.retryLater(
        file("y.json.gz", 3600000L),
        "could not decompress file 'y.json.gz'",
        "it is corrupt or truncated",
        cause))
    assert(files.metrics == Map("filesNotReady" -> "2"))
    files.ready("x.json.gz")
    files.retainFound(Nil) // y was removed
    assert(files.metrics == Map("filesNotReady" -> "0"))

    val z = file("z.json.gz", 0L)
    assert(
      files.retryLater(
        z,
        "could not decompress file 'z.json.gz'",
        "it is corrupt or truncated",
        cause))
    now += NotReadyFiles.LimitMs
    val e = intercept[IllegalStateException](files.unchangedSinceFailure(z))
    assert(
      e.getMessage.startsWith(
        "FileSource: could not decompress file 'z.json.gz', unchanged for 600 s: it is " +
          "corrupt or truncated. Files must be complete when they appear"),
      e.getMessage)
    assert(e.getMessage.contains("Unexpected end of input stream") && (e.getCause eq cause))
    assert(e.getMessage.contains("raise option 'notReadyTimeoutMs', now 600000"), e.getMessage)
  }

  test("notReadyTimeoutMs sets how long a file may stay unreadable and unchanged") {
    val config = FileConfig.fromOptions(
      Map(
        "path" -> "/x",
        "format" -> "text",
        "monitorIntervalMs" -> "1000",
        "notReadyTimeoutMs" -> "5000"))
    assert(
      config.notReadyTimeoutMs == 5000L && FileConfig
        .fromOptions(Map("path" -> "/x", "format" -> "text"))
        .notReadyTimeoutMs == 600000L)
    val files =
      new NotReadyFiles("FileSource", monitored = true, () => now, config.notReadyTimeoutMs)
    val f = file("w.json.gz", 0L)
    assert(files.retryLater(f, "could not decompress file 'w.json.gz'", "it is truncated", cause))
    now += 4999
    assert(files.unchangedSinceFailure(f))
    now += 1
    val e = intercept[IllegalStateException](files.unchangedSinceFailure(f))
    assert(
      e.getMessage.contains("unchanged for 5 s") && e.getMessage.contains("now 5000"),
      e.getMessage)
  }

  test("bounded: an unreadable file fails at once, however new") {
    val files = new NotReadyFiles("FileSource", monitored = false, () => now)
    val e = intercept[IllegalStateException](
      files.retryLater(
        file("x.json.gz", 0L),
        "could not decompress file " +
          "'x.json.gz'",
        "it is corrupt or truncated",
        cause))
    assert(
      e.getMessage.startsWith(
        "FileSource: could not decompress file 'x.json.gz': it is corrupt or truncated."))
    assert(files.metrics.isEmpty)
  }
}

package sluice.connector.file

import java.io.InputStream

/**
 * Reads lines as Hadoop's `LineRecordReader` does (so as Spark's text-based file sources do): a
 * line ends at `\n`, `\r\n` or `\r`, the terminator is not part of it, and a last line without
 * terminator counts. It tracks the byte position of every line start, and hands out each line as
 * a slice of its own buffer (copied only when a line spans buffer refills).
 *
 * `in` is positioned at byte `position` of the file.
 */
private[file] final class LineReader(
    in: InputStream,
    private var pos: Long,
    bufferSize: Int = 64 * 1024) {
  private val buf = new Array[Byte](bufferSize)
  private var bufLen = 0
  private var bufPos = 0
  private var acc = new Array[Byte](1024)
  private var accLen = 0

  /** The current line: `bytes(offset until offset + length)`; valid until the next call. */
  var bytes: Array[Byte] = buf
  var offset: Int = 0
  var length: Int = 0

  /** Byte position of the current line's start. */
  var lineStart: Long = 0L

  /** The position of the next line's start (after the current line's terminator). */
  def position: Long = pos

  private def fill(): Boolean = {
    bufPos = 0
    bufLen = in.read(buf, 0, buf.length)
    while (bufLen == 0) bufLen = in.read(buf, 0, buf.length)
    bufLen > 0
  }

  private def append(from: Int, until: Int): Unit = {
    val n = until - from
    if (accLen + n > acc.length)
      acc = java.util.Arrays.copyOf(acc, math.max(acc.length * 2, accLen + n))
    System.arraycopy(buf, from, acc, accLen, n)
    accLen += n
  }

  /** Moves to the next line; false at the end of the input. */
  def next(): Boolean = {
    val found = readLine()
    // As Hadoop's LineRecordReader: a UTF-8 byte-order mark opening the file is not data, and a
    // file that holds nothing else has no line at all.
    if (found && lineStart == 0 && length >= 3 && bytes(offset) == 0xef.toByte && bytes(
        offset + 1) == 0xbb.toByte &&
      bytes(offset + 2) == 0xbf.toByte) {
      offset += 3
      length -= 3
      if (length == 0 && pos == 3) return false
    }
    found
  }

  private def readLine(): Boolean = {
    lineStart = pos
    accLen = 0
    var spanning = false
    while (true) {
      if (bufPos >= bufLen && !fill()) {
        if (pos == lineStart) return false
        bytes = acc; offset = 0; length = accLen // a last line without terminator
        return true
      }
      var i = bufPos
      while (i < bufLen && buf(i) != '\n' && buf(i) != '\r') i += 1
      if (i < bufLen) {
        val cr = buf(i) == '\r'
        if (spanning) { append(bufPos, i); bytes = acc; offset = 0; length = accLen }
        else { bytes = buf; offset = bufPos; length = i - bufPos }
        pos += i - bufPos + 1
        bufPos = i + 1
        if (cr) {
          if (bufPos >= bufLen) {
            // The '\n' of a '\r\n' may be in the next buffer: keep the line before refilling.
            if (!spanning) {
              append(offset, offset + length); bytes = acc; offset = 0; length = accLen
            }
            if (fill() && buf(0) == '\n') { bufPos = 1; pos += 1 }
          } else if (buf(bufPos) == '\n') { bufPos += 1; pos += 1 }
        }
        return true
      }
      append(bufPos, bufLen)
      pos += bufLen - bufPos
      bufPos = bufLen
      spanning = true
    }
    false
  }

  /**
   * Makes the reader, positioned at `position` - 1 of the file, stand at the first line that
   * starts at or after `position` (the byte before tells whether a line starts right there).
   */
  def skipToLineStartAfterPreviousByte(): Unit = {
    if (bufPos >= bufLen && !fill()) return
    val previous = buf(bufPos)
    bufPos += 1
    pos += 1
    previous match {
      case '\n' =>
      case '\r' =>
        if (bufPos < bufLen || fill()) { if (buf(bufPos) == '\n') { bufPos += 1; pos += 1 } }
      case _ => next() // the rest of a line that started before `position`
    }
  }
}

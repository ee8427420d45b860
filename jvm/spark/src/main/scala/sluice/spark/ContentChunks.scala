package sluice.spark

import scala.collection.mutable.ArrayBuffer

/**
 * Cuts bytes into chunks where the content says, not at fixed offsets (content-defined chunking,
 * with a gear rolling hash): a cut falls after a byte where the hash of the bytes just before it
 * has its top bits zero. Two texts that share a long stretch cut it the same way, whatever comes
 * before it, so a checkpoint that differs from the previous one in a few places (a split's
 * position, files appended to the list of those found) shares all its chunks but a few with it,
 * and only those few are written again.
 *
 * Chunks are `MinBytes` long at least (the last may be shorter) and `MaxBytes` at most, about
 * `MinBytes` + 8 KiB on average. The cut points depend only on the bytes: the same in every JVM
 * and every release that keeps these constants (a test holds them to fixed cut points; changing
 * them costs only writing chunks again once).
 */
object ContentChunks {
  val MinBytes = 2048
  val MaxBytes = 65536

  /**
   * A cut after a byte whose hash has its top 13 bits zero: one byte in 8,192 on random content.
   * The top bits, not the bottom ones: shifted left once per byte, bit k of the hash depends on
   * the last k + 1 bytes, so the top bits see the last 64 bytes. A checkpoint repeats the same
   * text with different numbers in it (paths, positions): windows of 13 bytes would mostly be
   * the repeated text, and might never cut; windows of 64 bytes take in the numbers.
   */
  private val CutShift = 64 - 13

  /**
   * One random word per byte value, the same in every JVM: SplitMix64 from a fixed seed, written
   * out here rather than taken from a JDK generator whose sequence the JDK does not promise.
   */
  private val gear: Array[Long] = {
    var state = 0x511ce5L
    Array.fill(256) {
      state += 0x9e3779b97f4a7c15L
      var z = state
      z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
      z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
      z ^ (z >>> 31)
    }
  }

  /** The chunks of `bytes`, in order: concatenated, they are `bytes`. */
  def split(bytes: Array[Byte]): Seq[Array[Byte]] = {
    val chunks = ArrayBuffer[Array[Byte]]()
    var start = 0
    while (start < bytes.length) {
      val end = cut(bytes, start)
      chunks += java.util.Arrays.copyOfRange(bytes, start, end)
      start = end
    }
    chunks.toSeq
  }

  /** Where the chunk starting at `start` ends (exclusive): a cut depends on the 64 bytes before it only. */
  private def cut(bytes: Array[Byte], start: Int): Int = {
    val limit = math.min(bytes.length, start + MaxBytes)
    var hash = 0L
    var i = start
    while (i < limit) {
      hash = (hash << 1) + gear(bytes(i) & 0xff)
      i += 1
      if (i - start >= MinBytes && (hash >>> CutShift) == 0) return i
    }
    limit
  }
}

package sluice.connector.file

import java.io.{FileNotFoundException, FilterInputStream, InputStream, IOException}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.hadoop.io.compress.{CodecPool, CompressionCodec, Decompressor}
import org.apache.spark.io.HadoopCodecStreams

import sluice.errors.SluiceError

/**
 * Compressed line files, decompressed as Spark's own line reader (`HadoopLineRecordReader`)
 * decompresses them: the codec is Spark's choice for the file name (Hadoop's
 * `CompressionCodecFactory` by extension, plus `.zstd` and `.gzip`), and where Hadoop's zstd
 * codec needs native libraries Spark does not ship, Spark's own zstd stream (zstd-jni) reads it.
 * Nothing here decompresses by hand.
 *
 * Positions in a compressed file are byte offsets in its decompressed stream: a compressed file
 * cannot be entered mid-way, so a read that starts past its beginning decompresses up to there,
 * unless the range before it left the file open there (`OpenDecompressedFiles`).
 */
private[file] object Compression {

  /** Extensions of compression formats Spark cannot decompress either: refused, rather than read as bytes. */
  private val Undecodable = Seq(".xz", ".br", ".lzo", ".lzma", ".lz")

  /** The codec Spark would decompress `path` with; None for a file that is not compressed. */
  def codecOf(path: Path, conf: Configuration): Option[CompressionCodec] =
    HadoopCodecStreams.getDecompressionCodec(conf, path)

  /** Refuses a file whose name says it is compressed in a format no codec decompresses. */
  def checkDecodable(path: Path, conf: Configuration): Unit = {
    val name = path.getName.toLowerCase(java.util.Locale.ROOT)
    Undecodable.find(name.endsWith).filter(_ => codecOf(path, conf).isEmpty).foreach { suffix =>
      throw SluiceError.config(
        s"FileSource: '$path' is compressed ($suffix), a format neither Spark " +
          "nor Hadoop can decompress (spark.read would return its compressed bytes as text). Supported: gzip (.gz), " +
          "bzip2 (.bz2), zstd (.zst), deflate (.deflate) and Hadoop's lz4 and snappy formats. Recompress the files, " +
          "or narrow option 'path' to leave them out.")
    }
  }

  /**
   * The decompressed bytes of `raw` (the file `path`, opened at its start). Closing the result
   * closes `raw` and gives the decompressor back to Hadoop's pool.
   */
  def decompress(path: Path, raw: InputStream, codec: CompressionCodec): InputStream = {
    var decompressor: Decompressor = null
    try {
      decompressor = CodecPool.getDecompressor(codec)
      new Pooled(codec.createInputStream(raw, decompressor), decompressor)
    } catch {
      // as Spark: Hadoop's zstd codec without its native library; Spark's zstd-jni stream reads the file
      case e: RuntimeException =>
        if (decompressor != null) CodecPool.returnDecompressor(decompressor)
        HadoopCodecStreams.createZstdInputStream(path, raw).getOrElse { raw.close(); throw e }
      case e: IOException =>
        if (decompressor != null) CodecPool.returnDecompressor(decompressor)
        raw.close()
        throw e
    }
  }

  private final class Pooled(in: InputStream, decompressor: Decompressor)
      extends FilterInputStream(in) {
    private var closed = false
    override def close(): Unit = if (!closed) {
      closed = true
      try super.close()
      finally if (decompressor != null) CodecPool.returnDecompressor(decompressor)
    }
  }

  /**
   * Reads and drops the next `n` bytes of a decompressed stream: the way to a position inside it.
   * Never `InputStream.skip`: Hadoop's decompressor streams narrow its count to an int, so past
   * 2 GiB a skip fails or never ends.
   */
  def discard(in: InputStream, n: Long): Unit = {
    val buffer = new Array[Byte](64 * 1024)
    var left = n
    while (left > 0) {
      val read = in.read(buffer, 0, math.min(buffer.length.toLong, left).toInt)
      if (read < 0)
        throw new java.io.EOFException(
          s"the decompressed stream ended ${left} bytes before position $n")
      left -= read
    }
  }

  /** Why a compressed file could not be read, naming it: corrupt or truncated. */
  def unreadable(path: String, codec: CompressionCodec, cause: Throwable): IOException =
    new IOException(
      s"FileSource: could not decompress '$path' (${codec.getClass.getSimpleName}): " +
        s"${cause.getMessage}. The file is corrupt or truncated; files must be complete when they appear (write them " +
        "elsewhere, then rename them in). Replace or remove it.",
      cause)

  /** Opens `path` and decompresses it with `codec`. */
  def open(
      path: Path,
      conf: Configuration,
      codec: CompressionCodec,
      bufferBytes: Int): InputStream =
    decompress(path, path.getFileSystem(conf).open(path, bufferBytes), codec)

  /**
   * The decompressed length of the compressed file `path` as it was listed (`listedLength` bytes,
   * modified at `listedModificationTime`), which is where its positions end: a compressed stream
   * does not say it, so those bytes are decompressed to their end. None for a file that vanished;
   * an error for one that cannot be decompressed to its end (corrupt, or still being written) or
   * that changed while it was measured (the length would not be the listed file's).
   */
  def decompressedLength(
      path: Path,
      conf: Configuration,
      listedLength: Long,
      listedModificationTime: Long): Option[Long] = {
    val codec = codecOf(path, conf).getOrElse(
      throw new IllegalStateException(s"FileSource: '$path' is not compressed"))
    try {
      val fs = path.getFileSystem(conf)
      val in = decompress(path, new LimitedStream(fs.open(path, 64 * 1024), listedLength), codec)
      val total =
        try {
          val buf = new Array[Byte](64 * 1024)
          var total = 0L
          var n = in.read(buf)
          while (n >= 0) { total += n; n = in.read(buf) }
          total
        } finally in.close()
      val now = fs.getFileStatus(path)
      if (now.getLen != listedLength || now.getModificationTime != listedModificationTime) {
        throw new IOException(
          s"the file changed while it was measured (${now.getLen} bytes now, $listedLength listed)")
      }
      Some(total)
    } catch { case _: FileNotFoundException => None }
  }

  /** The first `limit` bytes of `in`: a file measured as listed, whatever was appended since. */
  private final class LimitedStream(in: InputStream, limit: Long) extends FilterInputStream(in) {
    private var left = limit
    override def read(): Int =
      if (left <= 0) -1 else { val b = super.read(); if (b >= 0) left -= 1; b }
    override def read(b: Array[Byte], off: Int, len: Int): Int =
      if (left <= 0) -1
      else {
        val n = super.read(b, off, math.min(len.toLong, left).toInt)
        if (n > 0) left -= n
        n
      }
    override def skip(n: Long): Long = { val s = super.skip(math.min(n, left)); left -= s; s }
    override def available(): Int = math.min(super.available().toLong, left).toInt
    override def markSupported(): Boolean = false
  }
}

package sluice.connector.file

import java.io.{ByteArrayOutputStream, OutputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.util.zip.{DeflaterOutputStream, GZIPOutputStream}

import com.github.luben.zstd.ZstdOutputStream
import org.apache.commons.compress.compressors.bzip2.BZip2CompressorOutputStream

/** Compressed files as the usual tools write them (gzip, bzip2, zstd, zlib-deflate). */
object CompressedTestData {

  /** Extensions the tests compress with, and what writes each. */
  val Codecs: Seq[String] = Seq("gz", "bz2", "zst")

  def compress(bytes: Array[Byte], ext: String): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val z: OutputStream = ext match {
      case "gz" => new GZIPOutputStream(out)
      case "bz2" => new BZip2CompressorOutputStream(out)
      case "zst" => new ZstdOutputStream(out)
      case "deflate" => new DeflaterOutputStream(out)
    }
    try z.write(bytes)
    finally z.close()
    out.toByteArray
  }

  /** Each file compressed, named `<name>.<ext>`, under `dir`. */
  def writeCompressed(dir: Path, files: Seq[(String, Array[Byte])], ext: String): Path = {
    files.foreach { case (name, content) =>
      val f = dir.resolve(s"$name.$ext")
      Files.createDirectories(f.getParent)
      Files.write(f, compress(content, ext))
    }
    dir
  }

  def utf8(files: Seq[(String, String)]): Seq[(String, Array[Byte])] = files.map { case (n, c) =>
    n -> c.getBytes(UTF_8)
  }

  /** `n` JSON lines `{"id": i, ...}` from `first`, padded so that lines differ in length. */
  def jsonLines(first: Int, n: Int): String =
    (first until first + n)
      .map(i => s"""{"id": $i, "pad": "${"x" * (i % 17)}"}""")
      .mkString("", "\n", "\n")
}

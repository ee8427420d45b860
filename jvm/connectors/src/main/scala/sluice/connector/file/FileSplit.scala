package sluice.connector.file

import sluice.api.{SourceSplit, VersionedSerializer}

/**
 * A file, or a byte range `[start, end)` of a large one. Positions are byte offsets of line
 * starts; the range owns every line that starts inside it (a line crossing `end` is read whole,
 * by this split), so ranges of one file partition its lines exactly.
 *
 * A compressed file is one split, and its positions are offsets in its decompressed stream:
 * `end` is its decompressed length, while `fileLength` stays what was listed (compressed), the
 * length the changed-file check compares.
 */
final case class FileSplit(
    path: String,
    start: Long,
    end: Long,
    fileLength: Long,
    modificationTime: Long,
    compressed: Boolean = false)
    extends SourceSplit {

  /** The path for a whole file; a byte range adds `#start-end`. */
  override val splitId: String =
    if (start == 0 && (compressed || end == fileLength)) path else s"$path#$start-$end"

  override def startPosition: Long = start
  override def stopPosition: Option[Long] = Some(end)
  override def positionsCountRecords: Boolean = false

  /** Whether this split reaches the end of its file (a compressed file is always read to its end). */
  def endsFile: Boolean = compressed || end == fileLength

  /**
   * A compressed file: its next range reads on from where the last one left the file open, on
   * the executor that read it (`OpenDecompressedFiles`), instead of decompressing it from its start.
   */
  override def localityKey: Option[String] = if (compressed) Some(path) else None
}

private[file] object FileSplitSerializer extends VersionedSerializer[FileSplit] {

  /** 2: a compressed flag (version 1 splits are uncompressed files). */
  override val version: Int = 2

  // The path goes last: it may contain any character but a newline.
  override def serialize(s: FileSplit): String =
    s"${s.start}:${s.end}:${s.fileLength}:${s.modificationTime}:${if (s.compressed) 1 else 0}:${s.path}"

  override def deserialize(version: Int, text: String): FileSplit = {
    if (version > this.version)
      throw VersionedSerializer.unsupported("a file split", version, this.version)
    if (version == 1) {
      val Array(start, end, length, mtime, path) = text.split(":", 5)
      FileSplit(path, start.toLong, end.toLong, length.toLong, mtime.toLong)
    } else {
      val Array(start, end, length, mtime, compressed, path) = text.split(":", 6)
      FileSplit(path, start.toLong, end.toLong, length.toLong, mtime.toLong, compressed == "1")
    }
  }
}

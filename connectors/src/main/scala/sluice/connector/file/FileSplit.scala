package sluice.connector.file

import sluice.api.{SourceSplit, VersionedSerializer}

/**
 * A file, or a byte range `[start, end)` of a large one. Positions are byte offsets of line
 * starts; the range owns every line that starts inside it (a line crossing `end` is read whole,
 * by this split), so ranges of one file partition its lines exactly.
 */
final case class FileSplit(path: String, start: Long, end: Long, fileLength: Long, modificationTime: Long)
  extends SourceSplit {

  /** The path for a whole file; a byte range adds `#start-end`. */
  override val splitId: String =
    if (start == 0 && end == fileLength) path else s"$path#$start-$end"

  override def startPosition: Long = start
  override def stopPosition: Option[Long] = Some(end)
  override def positionsCountRecords: Boolean = false
}

private[file] object FileSplitSerializer extends VersionedSerializer[FileSplit] {
  override val version: Int = 1

  // The path goes last: it may contain any character but a newline.
  override def serialize(s: FileSplit): String =
    s"${s.start}:${s.end}:${s.fileLength}:${s.modificationTime}:${s.path}"

  override def deserialize(version: Int, text: String): FileSplit = {
    if (version > this.version) throw VersionedSerializer.unsupported("a file split", version, this.version)
    val Array(start, end, length, mtime, path) = text.split(":", 5)
    FileSplit(path, start.toLong, end.toLong, length.toLong, mtime.toLong)
  }
}

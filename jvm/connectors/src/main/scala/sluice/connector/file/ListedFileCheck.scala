package sluice.connector.file

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import sluice.api.ReaderCounters
import sluice.errors.SluiceError

/**
 * Whether a file is no longer what was listed (length or modification time), for every file
 * format: positions were planned on the listed file, and a file still being written would give
 * half records. An error naming the way out, or with `ignoreChangedFiles` true (the caller then
 * skips the unread part and counts it).
 */
private[file] object ListedFileCheck {
  def changed(
      context: String,
      path: String,
      listedLength: Long,
      listedModificationTime: Long,
      ignoreChangedFiles: Boolean,
      conf: Configuration): Boolean = {
    val p = new Path(path)
    val now = p.getFileSystem(conf).getFileStatus(p)
    // seconds: object stores answer a listing in milliseconds and a HEAD request in seconds
    val same =
      now.getLen == listedLength && now.getModificationTime / 1000 == listedModificationTime / 1000
    if (!same && !ignoreChangedFiles) {
      throw SluiceError.sourceFault(s"$context: file '$path' changed after it was listed " +
        s"(length $listedLength -> ${now.getLen} bytes, modified at $listedModificationTime -> " +
        s"${now.getModificationTime} ms). Files must be complete when they appear: write them elsewhere " +
        "or under a hidden name (starting with '.' or '_'), then rename them into the folder. Set option " +
        s"'ignoreChangedFiles' to true to skip the unread part of such files (counted as " +
        s"${ReaderCounters.ChangedFilesSkipped}).")
    }
    !same
  }
}

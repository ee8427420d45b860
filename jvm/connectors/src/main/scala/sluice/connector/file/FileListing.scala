package sluice.connector.file

import java.io.FileNotFoundException

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, FileSystem, Path}

/** Lists the files under paths and globs through Hadoop's FileSystem (local, hdfs, s3a, ...). */
private[file] object FileListing {

  /** The files under `paths` that `filter` accepts (Spark's `pathGlobFilter`, `modifiedBefore`, ...). */
  def list(
      paths: Seq[String],
      conf: Configuration,
      mustExist: Boolean,
      filter: FileListingFilter): Seq[DiscoveredFile] = {
    val out = mutable.LinkedHashMap[String, DiscoveredFile]()
    paths.foreach { p =>
      val path = new Path(p)
      val fs = path.getFileSystem(conf)
      val matched = Option(fs.globStatus(path)).map(_.toSeq).getOrElse(Nil)
      if (matched.isEmpty && mustExist) {
        throw new FileNotFoundException(
          s"FileSource: path '$p' matches no file or directory. " +
            "Check option 'path', or set 'monitorIntervalMs' to wait for files to appear.")
      }
      matched.foreach(s =>
        leafFiles(fs, s).filter(filter.accepts).foreach { f =>
          val name = f.getPath.toString
          Compression.checkDecodable(f.getPath, conf)
          out(name) = DiscoveredFile(name, f.getLen, f.getModificationTime)
        })
    }
    out.values.toSeq
  }

  private def leafFiles(fs: FileSystem, status: FileStatus): Seq[FileStatus] =
    if (status.isFile) Seq(status)
    else {
      val children =
        try fs.listStatus(status.getPath).toSeq
        catch { case _: FileNotFoundException => Nil }
      children.filterNot(c => hidden(c.getPath.getName)).flatMap(leafFiles(fs, _))
    }

  // As Spark's file index: `_SUCCESS`, `.crc` files, `_temporary/` and files being copied are not data.
  private def hidden(name: String): Boolean =
    name.startsWith("_") || name.startsWith(".") || name.endsWith("._COPYING_")
}

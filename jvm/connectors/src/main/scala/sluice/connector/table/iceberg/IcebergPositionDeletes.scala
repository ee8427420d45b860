package sluice.connector.table.iceberg

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.iceberg.{DeleteFile, FileFormat, MetadataColumns}
import org.apache.iceberg.deletes.PositionDeleteIndex
import org.apache.iceberg.io.FileIO
import org.apache.parquet.example.data.Group
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.ColumnIOFactory
import org.apache.parquet.schema.MessageType

import sluice.connector.file.{DeletedRows, DiscoveredFile, ListedFileReads}
import sluice.errors.SluiceError

/**
 * The rows Iceberg position deletes delete, per data file. Iceberg's scan says which delete
 * files apply to which data file (`FileScanTask.deletes`: sequence numbers and partitions already
 * weighed); what they delete is read here, on the driver, each delete file once however many data
 * files it names:
 *  - a v2 position delete file is Parquet rows `(file_path, pos)` (the spec's reserved columns,
 *    and an optional `row` not read). iceberg-core cannot read Parquet (that is iceberg-parquet,
 *    not bundled), so they are read with parquet-hadoop's own record reader, which Spark carries;
 *  - a v3 deletion vector is a blob of a Puffin file, for one data file: its bytes are read at the
 *    offset the manifest gives and decoded by iceberg-core (`PositionDeleteIndex.deserialize`,
 *    which checks its length, checksum and cardinality).
 */
private[iceberg] object IcebergPositionDeletes {
  import IcebergConfig.Context

  private val FilePath = MetadataColumns.DELETE_FILE_PATH.name
  private val Pos = MetadataColumns.DELETE_FILE_POS.name

  /** Whether Sluice applies this delete file: position deletes in Parquet, or a deletion vector. */
  def applied(d: DeleteFile): Boolean =
    d.content == org.apache.iceberg.FileContent.POSITION_DELETES &&
      (d.format == FileFormat.PARQUET || d.format == FileFormat.PUFFIN)

  /** Each data file's deleted rows, from the delete files `deletes` says apply to it. */
  def of(deletes: Map[String, Seq[DeleteFile]], io: FileIO): Map[String, DeletedRows] = {
    val conf = confOf(io)
    // one read per delete file (a deletion vector is its own: blobs of a Puffin file are read apart)
    val distinct = deletes.values.flatten
      .map(d => key(d) -> d)
      .toMap
    val read = ListedFileReads
      .inParallel(
        distinct.keys.toSeq.sorted.map(k => DiscoveredFile(k, 0L, -1L)),
        8,
        "sluice-iceberg-deletes") { k =>
        val d = distinct(k.path)
        if (d.format == FileFormat.PUFFIN) vector(d, io) else positions(d.location, conf)
      }
      .map {
        case (k, Right(p)) => k.path -> p
        case (k, Left(e)) =>
          val d = distinct(k.path)
          throw SluiceError.sourceFault(
            s"$Context: delete file '${d.location}' (${if (d.format == FileFormat.PUFFIN) "a deletion vector"
              else "position deletes"}) cannot be read: ${e.getMessage}. Its deleted rows are part " +
              "of the snapshot: read a snapshot whose files are all kept.",
            e)
      }
      .toMap
    deletes.collect {
      case (path, ds) if ds.nonEmpty =>
        path -> DeletedRows.of(ds.iterator.flatMap(d => read(key(d)).get(path)).flatten)
    }
  }

  /** A delete file's identity: its location, and for a deletion vector its blob's offset. */
  private def key(d: DeleteFile): String =
    if (d.format == FileFormat.PUFFIN) s"${d.location}#${d.contentOffset}" else d.location

  /** The positions a deletion vector deletes, under the data file it names. */
  private def vector(d: DeleteFile, io: FileIO): Map[String, Seq[Long]] = {
    if (d.referencedDataFile == null || d.contentOffset == null || d.contentSizeInBytes == null)
      throw new IllegalStateException(
        "its manifest entry lacks the data file it deletes from, or where its blob is")
    val bytes = new Array[Byte](Math.toIntExact(d.contentSizeInBytes))
    val in = io.newInputFile(d.location).newStream()
    try {
      in.seek(d.contentOffset)
      var read = 0
      while (read < bytes.length) {
        val n = in.read(bytes, read, bytes.length - read)
        if (n < 0)
          throw new java.io.EOFException(s"the file ends inside the blob at ${d.contentOffset}")
        read += n
      }
    } finally in.close()
    val positions = mutable.ArrayBuffer[Long]()
    PositionDeleteIndex.deserialize(bytes, d).forEach(p => positions += p)
    Map(d.referencedDataFile -> positions.toSeq)
  }

  /** The positions a position delete file deletes, by the data file they are in. */
  private def positions(location: String, conf: Configuration): Map[String, Seq[Long]] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(location), conf))
    try {
      val schema = reader.getFooter.getFileMetaData.getSchema
      if (!schema.containsField(FilePath) || !schema.containsField(Pos))
        throw new IllegalStateException(
          s"it has no '$FilePath' and '$Pos' columns (schema ${schema.toString.trim})")
      val projection = new MessageType(
        schema.getName,
        schema.getType(schema.getFieldIndex(FilePath)),
        schema.getType(schema.getFieldIndex(Pos)))
      reader.setRequestedSchema(projection)
      val out = mutable.HashMap[String, mutable.ArrayBuffer[Long]]()
      var pages = reader.readNextRowGroup()
      while (pages != null) {
        val records = new ColumnIOFactory()
          .getColumnIO(projection)
          .getRecordReader(pages, new GroupRecordConverter(projection))
        var i = 0L
        while (i < pages.getRowCount) {
          val g: Group = records.read()
          out.getOrElseUpdate(g.getString(FilePath, 0), mutable.ArrayBuffer()) +=
            g.getLong(Pos, 0)
          i += 1
        }
        pages = reader.readNextRowGroup()
      }
      out.view.mapValues(_.toSeq).toMap
    } finally reader.close()
  }

  /** The Hadoop configuration of the table's file IO (the session's), or a default one. */
  private def confOf(io: FileIO): Configuration = io match {
    case h: org.apache.iceberg.hadoop.HadoopConfigurable => h.getConf
    case _ => new Configuration()
  }
}

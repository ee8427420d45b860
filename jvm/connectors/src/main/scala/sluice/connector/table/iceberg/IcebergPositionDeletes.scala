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
import org.roaringbitmap.RoaringBitmap

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

  /**
   * Each planned data file's deleted rows, from the delete files `deletes` says apply to it (by
   * the data file's entry in the plan: its path, its record count and its delete files; two
   * entries of one path may have different ones, as sequence numbers decide). Positions go into
   * one bitmap per data file, only for the data files given (a delete file may name files the
   * plan pruned, whose positions are skipped); positions at or past a data file's record count
   * are ignored, as Iceberg ignores them.
   */
  def of[K](deletes: Map[K, (String, Long, Seq[DeleteFile])], io: FileIO): Map[K, DeletedRows] = {
    val withDeletes = deletes.filter(_._2._3.nonEmpty)
    withDeletes.values.foreach { case (path, records, _) =>
      if (records > Int.MaxValue.toLong + 1)
        throw SluiceError.config(
          s"$Context: data file '$path' has $records rows and delete files apply to it: Sluice counts a " +
            "data file's deleted rows in an int (2^31 rows). Rewrite the table's data files into smaller " +
            "ones (rewrite_data_files) to read it.")
    }
    val records = withDeletes.values.map { case (path, n, _) => path -> n }.toMap
    val conf = confOf(io)
    // one read per delete file (a deletion vector is its own: blobs of a Puffin file are read apart)
    val distinct = withDeletes.values.flatMap(_._3).map(d => key(d) -> d).toMap
    val read = ListedFileReads
      .inParallel(
        distinct.keys.toSeq.sorted.map(k => DiscoveredFile(k, 0L, -1L)),
        8,
        "sluice-iceberg-deletes") { k =>
        val d = distinct(k.path)
        if (d.format == FileFormat.PUFFIN) vector(d, io, records)
        else positions(d.location, conf, records)
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
    withDeletes.flatMap { case (entry, (path, _, ds)) =>
      val rows = new RoaringBitmap()
      ds.foreach(d => read(key(d)).get(path).foreach(rows.or))
      if (rows.isEmpty) None else Some(entry -> DeletedRows.owning(rows))
    }
  }

  /**
   * Adds a position a delete file gives for a data file to its bitmap, if the data file is one
   * asked for and has a row there; a negative position is a broken delete file.
   */
  private def add(
      out: mutable.HashMap[String, RoaringBitmap],
      records: Map[String, Long],
      path: String,
      pos: Long): Unit = {
    if (pos < 0)
      throw new IllegalStateException(
        s"it deletes position $pos of data file '$path', which no row has (positions count from 0): " +
          "the delete file is broken; rewrite the table's position deletes (rewrite_position_delete_files)")
    records.get(path).foreach { n =>
      if (pos < n) out.getOrElseUpdate(path, new RoaringBitmap()).add(pos.toInt)
    }
  }

  /** A delete file's identity: its location, and for a deletion vector its blob's offset. */
  private def key(d: DeleteFile): String =
    if (d.format == FileFormat.PUFFIN) s"${d.location}#${d.contentOffset}" else d.location

  /** The positions a deletion vector deletes, under the data file it names. */
  private def vector(
      d: DeleteFile,
      io: FileIO,
      records: Map[String, Long]): collection.Map[String, RoaringBitmap] = {
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
    val out = mutable.HashMap[String, RoaringBitmap]()
    val path = d.referencedDataFile
    PositionDeleteIndex.deserialize(bytes, d).forEach(p => add(out, records, path, p))
    out
  }

  /** The positions a position delete file deletes, by the data file they are in. */
  private def positions(
      location: String,
      conf: Configuration,
      records: Map[String, Long]): collection.Map[String, RoaringBitmap] = {
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
      val out = mutable.HashMap[String, RoaringBitmap]()
      var pages = reader.readNextRowGroup()
      while (pages != null) {
        val rowsRead = new ColumnIOFactory()
          .getColumnIO(projection)
          .getRecordReader(pages, new GroupRecordConverter(projection))
        var i = 0L
        while (i < pages.getRowCount) {
          val g: Group = rowsRead.read()
          add(out, records, g.getString(FilePath, 0), g.getLong(Pos, 0))
          i += 1
        }
        pages = reader.readNextRowGroup()
      }
      out
    } finally reader.close()
  }

  /** The Hadoop configuration of the table's file IO (the session's), or a default one. */
  private def confOf(io: FileIO): Configuration = io match {
    case h: org.apache.iceberg.hadoop.HadoopConfigurable => h.getConf
    case _ => new Configuration()
  }
}

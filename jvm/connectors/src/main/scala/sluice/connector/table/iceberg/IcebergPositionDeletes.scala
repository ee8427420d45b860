package sluice.connector.table.iceberg

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.iceberg.{DeleteFile, MetadataColumns}
import org.apache.parquet.example.data.Group
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.ColumnIOFactory
import org.apache.parquet.schema.MessageType

import sluice.connector.file.{DeletedRows, DiscoveredFile, ListedFileReads}
import sluice.errors.SluiceError

/**
 * The rows Iceberg v2 position delete files delete, per data file. Iceberg's scan says which
 * delete files apply to which data file (`FileScanTask.deletes`: sequence numbers and partitions
 * already weighed); what they delete is read here. A position delete file is Parquet rows
 * `(file_path, pos)` (the spec's reserved columns, and an optional `row` not read); iceberg-core
 * cannot read Parquet (that is iceberg-parquet, not bundled), so they are read with
 * parquet-hadoop's own record reader, which Spark carries. Each delete file is read once, however
 * many data files it names.
 */
private[iceberg] object IcebergPositionDeletes {
  import IcebergConfig.Context

  private val FilePath = MetadataColumns.DELETE_FILE_PATH.name
  private val Pos = MetadataColumns.DELETE_FILE_POS.name

  /** Each data file's deleted rows, from the delete files `deletes` says apply to it. */
  def of(deletes: Map[String, Seq[DeleteFile]], conf: Configuration): Map[String, DeletedRows] = {
    val files = deletes.values.flatten.map(d => d.location -> d).toMap
    val read = ListedFileReads
      .inParallel(
        files.values.toSeq
          .sortBy(_.location)
          .map(d => DiscoveredFile(d.location, d.fileSizeInBytes, -1L)),
        8,
        "sluice-iceberg-deletes")(f => positions(f.path, conf))
      .map {
        case (f, Right(p)) => f.path -> p
        case (f, Left(e)) =>
          throw SluiceError.sourceFault(
            s"$Context: position delete file '${f.path}' cannot be read: ${e.getMessage}. Its " +
              "deleted rows are part of the snapshot: read a snapshot whose files are all kept.",
            e)
      }
      .toMap
    deletes.collect {
      case (path, ds) if ds.nonEmpty =>
        path -> DeletedRows.of(ds.iterator.flatMap(d => read(d.location).get(path)).flatten)
    }
  }

  /** The positions a delete file deletes, by the data file they are in. */
  private def positions(location: String, conf: Configuration): Map[String, Seq[Long]] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(location), conf))
    try {
      val schema = reader.getFooter.getFileMetaData.getSchema
      if (!schema.containsField(FilePath) || !schema.containsField(Pos))
        throw new IllegalStateException(
          s"it has no '$FilePath' and '$Pos' columns (schema ${schema.toString.trim})")
      val projection =
        new MessageType(
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
  def confOf(io: org.apache.iceberg.io.FileIO): Configuration = io match {
    case h: org.apache.iceberg.hadoop.HadoopConfigurable => h.getConf
    case _ => new Configuration()
  }
}

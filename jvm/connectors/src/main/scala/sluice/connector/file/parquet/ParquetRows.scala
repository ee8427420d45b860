package sluice.connector.file.parquet

import java.io.Closeable

import org.apache.hadoop.conf.Configuration
import org.apache.parquet.hadoop.ParquetInputFormat
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{LongType, StructType}
import org.apache.spark.sql.vectorized.ColumnarBatch
import org.apache.spark.util.SerializableConfiguration
import org.apache.spark.sql.execution.datasources.{FileFormat, PartitionedFile}
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.internal.SQLConf

import sluice.errors.SluiceError

/**
 * Spark's own Parquet reader for this source's files: the function `ParquetFileFormat` builds for
 * `spark.read.parquet` (`buildReaderWithPartitionValues`), built once on the driver with the
 * session's settings and Hadoop configuration (which it broadcasts), and shipped to executors
 * with the source. So everything `spark.read.parquet` decides is decided the same way: the
 * vectorized reader where `spark.sql.parquet.enableVectorizedReader` and the types allow it
 * (else parquet-mr with Spark's `ParquetReadSupport`), calendar rebasing, INT96 handling, case
 * sensitivity, and which row groups a byte range selects (those whose midpoint lies in it).
 *
 * Each call reads one `PartitionedFile` (a row group's byte range and the file's partition
 * values) and returns its rows: data columns then partition columns. `read` hands them out one
 * at a time, each Spark's reader's own row seen without the row-index column (not copied);
 * `readBatches` hands out the vectorized reader's column batches, where Spark itself would read
 * batches (`supportBatch`: the vectorized reader is on and takes every column's type, whole-stage
 * code generation is on). Only the source's required columns are read (`ParquetConfig.requiredSchema`:
 * Parquet's requested schema); no filter is pushed down (every row is read).
 *
 * The row reader is also asked for Spark's temporary row-index column (what `_metadata.row_index`
 * is made of), so each row comes with its row index in the file (`IndexedRows.rowIndex`): the
 * caller checks that the rows are those of the row group it meant to read. The batch reader is
 * not: Spark fills that column one boxed value at a time, a visible share of a batch's cost, and
 * batches are read only for row groups alone at their midpoint (`RowGroupSplit.aloneAtMidpoint`),
 * whose rows the caller numbers by counting.
 */
final class ParquetRows private (
    /** Spark's readers, built on the driver at the first use or before being shipped. */
    @transient private val build: () => ParquetRows.Readers,
    /** The driver's Hadoop configuration, until the readers (and their broadcast copy) exist. */
    @transient private val driverConf: Configuration,
    /** Whether Spark reads these columns as batches (decided without building a reader). */
    batches: Boolean,
    /** The data columns read (the requested schema), which the reader's rows start with. */
    dataSchema: StructType,
    partitionSchema: StructType,
    /** Columns are found in files by Parquet field id (`ParquetConfig.matchFieldIds`). */
    fieldIds: Boolean)
    extends Serializable {

  // Building Spark's readers broadcasts the Hadoop configuration three times (~tens of ms on the
  // driver each time a query starts): a source is made for a DataFrame, again at a query's start
  // and again for the columns the query reads, and only the last one reads. So they are built
  // when first needed, or when the source is serialized for its tasks (`writeObject`, on the
  // driver: executors receive them built and never build).
  private var built: ParquetRows.Readers = _

  private def readers: ParquetRows.Readers = synchronized {
    if (built == null) built = build()
    built
  }

  @throws[java.io.IOException]
  private def writeObject(out: java.io.ObjectOutputStream): Unit = {
    readers
    out.defaultWriteObject()
  }

  /** The Hadoop configuration the reader reads files with (the session's, with the source's options). */
  def hadoopConf: Configuration = synchronized {
    if (built == null && driverConf != null) driverConf else readers.conf.value.value
  }

  def read(file: PartitionedFile): ParquetRows.IndexedRows = {
    // the reader's rows are the data columns, the row index, then the partition columns
    val types = (dataSchema.fields ++ partitionSchema.fields).map(_.dataType)
    new ParquetRows.IndexedRows(
      opened(readers.rows(file)),
      dataSchema.length,
      new RowWithoutColumn(dataSchema.length, types))
  }

  /** Whether `readBatches` may be called: Spark would read these columns as batches. */
  def readsBatches: Boolean = batches

  /** The file's column batches: data then partition columns, without row indexes. */
  def readBatches(file: PartitionedFile): ParquetRows.Batches = {
    val read = readers.batches.getOrElse(
      throw new IllegalStateException("Spark reads these Parquet columns as rows"))
    new ParquetRows.Batches(opened(read(file)))
  }

  /**
   * Opens a file's reader. Matching columns by field id takes two settings in Spark: the
   * requested schema is clipped to the file's by id where the reader's Hadoop configuration says
   * so (set in `apply`), but Spark's row converter (parquet-mr's path) pairs the file's columns
   * with the requested ones by id only where the task's SQL configuration says so, and by name
   * otherwise (reading nulls). So the reader is opened (which builds every converter) under the
   * task's SQL configuration with `spark.sql.parquet.fieldId.read.enabled` set, as Delta's own
   * Spark connector sets it for the whole session.
   */
  private def opened[T](open: => T): T =
    if (!fieldIds) open
    else {
      val withIds = new SQLConf()
      SQLConf.get.getAllConfs.foreach { case (k, v) => withIds.setConfString(k, v) }
      withIds.setConf(SQLConf.PARQUET_FIELD_ID_READ_ENABLED, true)
      SQLConf.withExistingConf(withIds)(open)
    }
}

object ParquetRows {

  /** Spark's row and batch readers of the files, and the Hadoop configuration they share. */
  final case class Readers(
      rows: PartitionedFile => Iterator[InternalRow],
      batches: Option[PartitionedFile => Iterator[InternalRow]],
      conf: Broadcast[SerializableConfiguration])

  def apply(session: SparkSession, config: ParquetConfig): ParquetRows = {
    val hadoopConf = session.sessionState.newHadoopConfWithOptions(config.sparkOptions)
    refuseRowFilters(hadoopConf)
    // columns named as the files name them (a Delta table's physical names) are found by name,
    // or by Parquet field id where the source says so (Spark then fails a file without any field
    // id, unless the session sets spark.sql.parquet.fieldId.read.ignoreMissing, and gives nulls
    // for an id a file does not hold); otherwise as the session says
    if (config.fileSchema.isDefined)
      hadoopConf.setBoolean(SQLConf.PARQUET_FIELD_ID_READ_ENABLED.key, config.matchFieldIds)
    val required = config.fileRequiredSchema.add(
      ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME,
      LongType,
      nullable = true
    ) // nullable: a missing column Spark fills
    val format = new ParquetFileFormat()
    // Spark's reader reads only the columns of `columns` (the requested schema) of files whose
    // columns are `dataSchema`: the rest are never decoded, nor their column chunks read.
    // Each build writes its columns into the configuration it is given and broadcasts that object
    // (shared as is by tasks in the driver's JVM): the two builds must not share one
    def build(columns: StructType, batches: Boolean) = format.buildReaderWithPartitionValues(
      session,
      config.fileDataSchema,
      config.partitionSchema,
      columns,
      Nil,
      config.sparkOptions + (FileFormat.OPTION_RETURNING_BATCH -> batches.toString),
      new Configuration(hadoopConf))
    val batches = format.supportBatch(
      session,
      StructType(config.requiredSchema.fields ++ config.partitionSchema.fields))
    new ParquetRows(
      () =>
        Readers(
          build(required, batches = false),
          Option.when(batches)(build(config.fileRequiredSchema, batches = true)),
          session.sparkContext.broadcast(new SerializableConfiguration(hadoopConf))),
      hadoopConf,
      batches,
      config.requiredSchema,
      config.partitionSchema,
      config.fileSchema.isDefined && config.matchFieldIds)
  }

  /**
   * Rows without the row-index column (a view of the reader's row, valid until the next
   * `hasNext`: that may load the next batch over the same column vectors, or close the reader
   * and free them);
   * `rowIndex` is the row index in the file of the last row given.
   */
  final class IndexedRows private[ParquetRows] (
      rows: Iterator[InternalRow],
      indexOrdinal: Int,
      view: RowWithoutColumn)
      extends Iterator[InternalRow]
      with Closeable {
    var rowIndex: Long = -1L
    override def hasNext: Boolean = rows.hasNext
    override def next(): InternalRow = {
      val r = rows.next()
      rowIndex = r.getLong(indexOrdinal)
      view.of(r)
    }
    override def close(): Unit = closeReader(rows)
  }

  /** The vectorized reader's batches, valid until the next `hasNext` (as its rows are). */
  final class Batches private[ParquetRows] (batches: Iterator[InternalRow])
      extends Iterator[ColumnarBatch]
      with Closeable {
    override def hasNext: Boolean = batches.hasNext
    // Spark's reader hands its batches through an iterator typed as rows (FileFormat's contract)
    override def next(): ColumnarBatch =
      batches.next().asInstanceOf[Any].asInstanceOf[ColumnarBatch]
    override def close(): Unit = closeReader(batches)
  }

  /**
   * Positions are row indexes and every row of a row group is read (column batches count them),
   * so a parquet-mr row filter set in the session's Hadoop configuration would drop rows unseen.
   */
  private def refuseRowFilters(conf: Configuration): Unit =
    Seq(ParquetInputFormat.FILTER_PREDICATE, ParquetInputFormat.UNBOUND_RECORD_FILTER)
      .find(conf.get(_) != null)
      .foreach { key =>
        throw SluiceError.config(
          s"${ParquetConfig.Context}: the Hadoop configuration sets '$key', a Parquet " +
            "row filter: Sluice reads every row of a row group (its positions are row indexes), so rows that filter " +
            s"dropped would be skipped silently. Unset it (spark.hadoop.$key or the session setting '$key') and filter " +
            "in the query instead.")
      }

  private def closeReader(reader: Iterator[_]): Unit = reader match {
    case c: Closeable => c.close()
    case _ =>
  }
}

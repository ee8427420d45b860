package sluice.connector.file.parquet

import sluice.api._
import sluice.config.RecordLayout

/**
 * What every source of Parquet row groups shares (Parquet files, Iceberg and Delta tables): the
 * splits and enumerator state it checkpoints, its boundedness, and the two readers of its row
 * groups, as rows (`ParquetReader`) or as Spark's column batches (`ParquetBatchReader`). Each
 * source says which files and row groups there are (its enumerator); how they are read is here.
 */
trait RowGroupSource
    extends Source[RowGroupSplit, ParquetEnumeratorState]
    with SupportsSplitPausing[RowGroupSplit]
    with SupportsColumnarReads[RowGroupSplit]
    with SupportsColumnPruning[RowGroupSplit, ParquetEnumeratorState]
    with SupportsFilterPushdown[RowGroupSplit, ParquetEnumeratorState] {

  /** The Parquet settings the row groups are read with (columns, filters, the monitor interval). */
  protected def parquet: ParquetConfig

  /** Spark's Parquet reading of those settings, made on the driver. */
  protected def rows: ParquetRows

  /** Unbounded when new files are looked for (`monitorIntervalMs`). */
  override def boundedness: Boundedness =
    if (parquet.monitorIntervalMs.isEmpty) Boundedness.Bounded
    else Boundedness.ContinuousUnbounded

  override def createReader(context: ReaderContext): ParquetReader =
    new ParquetReader(parquet, rows, context, () => rows.hadoopConf)

  /**
   * Column batches wherever Spark would read these columns as batches, for ranges of row groups
   * alone at their midpoint (`RowGroupSplit.aloneAtMidpoint`: not those of old footers that share
   * one, of encrypted footers, or of splits an earlier version planned).
   */
  override def readsColumnar(
      ranges: Seq[SplitRange[RowGroupSplit]],
      layout: RecordLayout): Boolean =
    rows.readsBatches && ranges.forall(_.split.aloneAtMidpoint)

  override def createColumnarReader(context: ReaderContext): ParquetBatchReader =
    new ParquetBatchReader(parquet, rows, context, () => rows.hadoopConf)

  override def splitSerializer: VersionedSerializer[RowGroupSplit] = RowGroupSplitSerializer
  override def enumeratorStateSerializer: VersionedSerializer[ParquetEnumeratorState] =
    ParquetEnumeratorStateSerializer
}

package sluice.api

import org.apache.spark.sql.types.StructType

import sluice.config.RecordLayout

/**
 * A source that can read fewer columns than its schema holds (Parquet's requested schema): the
 * binding hands it the columns a query uses (Spark's `SupportsPushDownRequiredColumns`) and reads
 * the rows of the source it gets back.
 *
 * The pruned source's `schema(layout)` is what its readers then build, in the order of the
 * unpruned schema: the columns `required` names, and any the source always gives (it may keep
 * more than asked, never fewer; the binding keeps a watermark strategy's timestamp column among
 * `required`). Splits, positions, the enumerator and the serializers are those of the unpruned
 * source: a split's position never depends on which columns were read, so a checkpoint written
 * by a query reading some columns is resumed by one reading others.
 *
 * A pruned source is not described by its options alone (they rebuild the unpruned source): the
 * binding prunes every source it builds from them again with the same columns.
 */
trait SupportsColumnPruning[SplitT <: SourceSplit, StateT] { self: Source[SplitT, StateT] =>

  /** This source reading only the columns of its schema that `required` names (exact names). */
  def withColumns(required: Set[String]): Source[SplitT, StateT]

  /**
   * The schema `withColumns(required).schema(layout)` has, answered without building that source:
   * the binding asks it on every analyzer pass of a streaming query (`StreamingPushdown`), where
   * building readers (Parquet's broadcasts its Hadoop configuration) would be paid each time.
   * Sources whose pruned copy is cheap to build need not override it.
   */
  def schemaWithColumns(required: Set[String], layout: RecordLayout): StructType =
    withColumns(required).schema(layout)

  /**
   * Whether a pruned copy returns exactly this source's records, only with fewer columns. False
   * where which records come back depends on columns a pruned copy does not read: a parse mode
   * that drops (DROPMALFORMED) or fails on (FAILFAST) a record malformed in any column. Rows of a
   * query are Spark's either way (Spark's readers prune the same), but a hybrid derives the next
   * member's start from what a member returned, so it does not prune past such a member.
   */
  def pruningKeepsRecords: Boolean = true
}

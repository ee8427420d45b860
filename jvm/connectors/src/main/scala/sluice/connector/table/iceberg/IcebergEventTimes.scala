package sluice.connector.table.iceberg

import org.apache.iceberg.{DataFile, Schema}
import org.apache.iceberg.types.{Conversions, Type, Types}

import sluice.connector.file.FileStatistics

/**
 * A data file's event-time range from its manifest entry: the lower and upper bounds Iceberg
 * records for the event-time column by field id (kept by a scan with `includeColumnStats`). Iceberg
 * keeps timestamp bounds exactly (only strings and binary are truncated), in microseconds; a long column holds epoch milliseconds. Both become epoch
 * milliseconds as the readers compute a row's event time (rounded down), so the range is the
 * file's rows' own.
 *
 * `field` is the column as the schema of the scan that plans the files holds it: `column` is its
 * name there, which the scan's `includeColumnStats` takes (`IcebergEventTimes.byId` finds it by
 * the field id the source read the column by, whatever it is named since).
 */
private[iceberg] final class IcebergEventTimes private (field: Types.NestedField) {

  /** The column's name in the scan's schema. */
  val column: String = field.name

  /** The event-time column `column` of `schema` (the snapshot's, for a scan of that snapshot). */
  def this(schema: Schema, column: String) = this(schema.findField(column))

  private val toMillis: Long => Long = field.`type`.typeId match {
    // timestamp_ns is refused as a column by IcebergSchema
    case Type.TypeID.TIMESTAMP => Math.floorDiv(_, 1000L)
    case _ => identity
  }

  /** The file's rows and event-time range; None when the manifest records no bounds of the column. */
  def of(file: DataFile): Option[FileStatistics] = {
    val id = Int.box(field.fieldId)
    def bound(m: java.util.Map[Integer, java.nio.ByteBuffer]) =
      Option(m).flatMap(b => Option(b.get(id))).map { buffer =>
        toMillis(Conversions.fromByteBuffer[java.lang.Long](field.`type`, buffer))
      }
    (bound(file.lowerBounds), bound(file.upperBounds)) match {
      case (Some(min), Some(max)) => Some(FileStatistics(file.recordCount, Some((min, max))))
      case _ =>
        // no bounds: a column of nulls only (the null count says so) has no event times at all
        val nulls = Option(file.nullValueCounts).flatMap(m => Option(m.get(id)))
        nulls.filter(_ == file.recordCount).map(_ => FileStatistics(file.recordCount, None))
    }
  }
}

private[iceberg] object IcebergEventTimes {

  /**
   * The event-time column by its field id in `scanSchema`, the schema of the scan that plans the
   * files (an incremental scan's is the table's current one): renamed since the source was built,
   * it is found under its new name; None when `scanSchema` no longer holds it at its top level
   * (dropped: a column that took its name is another column, whose bounds are not its values).
   */
  def byId(scanSchema: Schema, fieldId: Int): Option[IcebergEventTimes] =
    Option(scanSchema.asStruct.field(fieldId)).map(new IcebergEventTimes(_))

  /** What to set so that new data files record the column's bounds. */
  def advice(column: String): String =
    s"Set table property 'write.metadata.metrics.column.$column' to 'full' (or " +
      "'write.metadata.metrics.default' to 'truncate(16)', Iceberg's default, or 'full'; 'none' " +
      "and 'counts' keep no bounds); files written after that carry them (rewrite_data_files " +
      "rewrites the others)."
}

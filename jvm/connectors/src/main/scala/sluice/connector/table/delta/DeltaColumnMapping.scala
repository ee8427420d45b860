package sluice.connector.table.delta

import scala.jdk.CollectionConverters._

import io.delta.kernel.Snapshot
import io.delta.kernel.internal.util.ColumnMapping
import io.delta.kernel.internal.util.ColumnMapping.ColumnMappingMode

import sluice.errors.SluiceError

/**
 * A Delta table's column mapping at the version a source reads (Delta's protocol, "Column
 * Mapping"): its mode (`none`, `name` or `id`) and the physical name of each of its top-level
 * columns (`delta.columnMapping.physicalName`), by the version's logical name. Under column
 * mapping a data file names its columns by physical names (in mode `id` its Parquet field ids
 * are what a reader matches: `DeltaSchema.physical`), and the log keys each file's
 * `partitionValues` and its statistics by them; a rename changes only the logical name, so a
 * file written before it reads under the new name. Without column mapping a column's physical
 * name is its name.
 */
final case class DeltaColumnMapping(mode: String, physicalNames: Map[String, String]) {
  def enabled: Boolean = mode != DeltaColumnMapping.Off.mode

  /** Mode `id`: a data file's columns are its Parquet field ids (`delta.columnMapping.id`). */
  def byId: Boolean = mode == "id"

  /** The physical name of top-level column `column` (its name without column mapping). */
  def physical(column: String): String = physicalNames.getOrElse(column, column)
}

object DeltaColumnMapping {
  val Off: DeltaColumnMapping = DeltaColumnMapping("none", Map.empty)

  /** The snapshot's column mapping mode, as Kernel reads it from the table's configuration. */
  def modeOf(snapshot: Snapshot): ColumnMappingMode =
    ColumnMapping.getColumnMappingMode(snapshot.getMetadata.getConfiguration)

  def of(snapshot: Snapshot): DeltaColumnMapping = {
    val mode = modeOf(snapshot)
    if (mode == ColumnMappingMode.NONE) Off
    else
      DeltaColumnMapping(
        mode.toString.toLowerCase,
        snapshot.getSchema.fields.asScala
          .map(f => f.getName -> ColumnMapping.getPhysicalName(f))
          .toMap)
  }

  /**
   * Refuses a version committed after a stream's start whose columns a data file would be read
   * wrong by: column mapping turned on or off, or its mode changed, since the start (the start's
   * columns are found by the start's rule); under column mapping, a column of the stream renamed
   * or dropped since (dropped, it would read as null from new files; dropped and added again
   * under its name, it is another column, with another physical name). Delta's own streaming
   * source fails on these too (without its schema tracking log). The stream's columns are the
   * start version's (`start.physicalNames`); columns added since are not the stream's and are
   * not read.
   */
  def checkUnchanged(start: DeltaColumnMapping, latest: Snapshot, location: String): Unit = {
    val now = of(latest)
    val why =
      if (now.mode != start.mode)
        Some(
          s"its column mapping mode (delta.columnMapping.mode) is ${now.mode}, where it was " +
            s"${start.mode} at the version this query started from")
      else if (!start.enabled) None
      else {
        val byPhysical = now.physicalNames.map(_.swap)
        start.physicalNames.keys.toSeq.sorted.iterator
          .flatMap { c =>
            val physical = start.physical(c)
            byPhysical.get(physical) match {
              case None =>
                Some(
                  s"column '$c' (physical name $physical) was dropped since this query started")
              case Some(renamed) if renamed != c =>
                Some(
                  s"column '$c' (physical name $physical) was renamed to '$renamed' since this " +
                    "query started")
              case _ => None
            }
          }
          .nextOption()
      }
    why.foreach { w =>
      throw SluiceError.sourceFault(
        s"${DeltaConfig.Context}: version ${latest.getVersion} of Delta table '$location': $w. " +
          "The stream's columns are those of the version it started from, and its data files " +
          "after this change would be read under other names or as nulls. Start the query on a " +
          "new checkpoint to read the table as it is now.")
    }
  }
}

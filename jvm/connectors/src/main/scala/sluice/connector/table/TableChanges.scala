package sluice.connector.table

import sluice.config.{ConfigOption, Options}
import sluice.connector.file.FileConfig
import sluice.errors.{SluiceConfigException, SluiceError, SluiceRuntimeException}

/**
 * What an unbounded table read (`monitorIntervalMs`) does with a snapshot or version that does
 * more than append: rows it deletes or rewrites may have been read already, and a stream cannot
 * take them back, so it fails the query unless `skipChanges` says to pass over it. Iceberg's and
 * Delta's own Spark streaming sources make the same choice (`streaming-skip-delete-snapshots`,
 * `streaming-skip-overwrite-snapshots`, `skipChangeCommits`).
 */
object TableChanges {

  val SkipChanges: ConfigOption[Boolean] = ConfigOption
    .boolean(
      "skipChanges",
      "with `monitorIntervalMs`: a snapshot (Iceberg) or version (Delta) committed after the start " +
        "that deletes or rewrites rows (overwrite, delete, update, merge; Delta: a commit that removes " +
        "files or adds deletion vectors) is skipped whole, the rows it adds too, instead of failing the " +
        "query; rows it deletes that were read stay read. Compactions (Iceberg `replace`, Delta " +
        "`dataChange=false`) are always skipped: they change no row")
    .withDefault(false)

  /** The failure of a query that met a change it was not told to skip. */
  def refused(
      context: String,
      table: String,
      which: String,
      operation: String): SluiceRuntimeException =
    SluiceError.sourceFault(
      s"$context: $which of table '$table' ($operation) is not an append: it deletes or rewrites " +
        "rows this unbounded read may have given already, which a stream cannot take back. Set option " +
        s"'${SkipChanges.name}' to true to skip such commits (their added rows too), or read the table " +
        s"bounded (without '${FileConfig.MonitorIntervalMs.name}') from a snapshot or version after it, " +
        "on a new checkpoint.")

  /**
   * The options' monitor interval and `skipChanges`, which applies only with one: `units` are what
   * the format commits after the start ("snapshots", "versions").
   */
  def unboundedOptions(o: Options, context: String, units: String): (Option[Long], Boolean) = {
    val monitorIntervalMs = o.get(FileConfig.MonitorIntervalMs)
    val skipChanges = o.get(SkipChanges).getOrElse(false)
    if (skipChanges && monitorIntervalMs.isEmpty)
      throw SluiceError.config(
        s"$context: option '${SkipChanges.name}' applies to $units committed after the " +
          s"start, which only an unbounded read plans: set '${FileConfig.MonitorIntervalMs.name}' too, " +
          "or remove it.")
    (monitorIntervalMs, skipChanges)
  }

  /**
   * The refusal of an unbounded read restarted from a checkpoint that does not record which
   * `unit` ("snapshot", "version") it planned last (a bounded read by an earlier Sluice, enumerator
   * state version 1): what was committed after it cannot be told. `startOption` names where an
   * unbounded read on a new checkpoint starts.
   */
  def unrecordedStart(
      context: String,
      table: String,
      unit: String,
      startOption: String): SluiceConfigException =
    SluiceError.config(
      s"$context: the checkpoint of this query does not record which $unit of table " +
        s"'$table' it planned last (it was written by a bounded read of an earlier Sluice), so " +
        s"an unbounded read ('${FileConfig.MonitorIntervalMs.name}') cannot tell which ${unit}s are new. " +
        "Restart it without that option, or start the unbounded read on a new checkpoint (option " +
        s"'$startOption' names where it starts).")
}

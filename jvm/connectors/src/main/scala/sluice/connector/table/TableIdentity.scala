package sluice.connector.table

import sluice.errors.{ErrorClasses, SluiceRuntimeException}

/**
 * Which table a table source's positions belong to. A checkpoint names snapshots (Iceberg) or
 * versions (Delta) and data files of one table; a table dropped and created again at the same
 * place or name is another table, whose snapshots and versions say nothing of the old one's
 * (Delta numbers versions from 0 again), so reading it from the old positions would skip or mix
 * rows. The identity each format gives a table when it is created (Iceberg's `table-uuid`,
 * Delta's `metaData.id`, which neither changes while the table lives) is kept in the
 * enumerator's state and compared when a query restarts, as Spark's own Delta source compares
 * its offset's `reservoirId`, and at each later plan of an unbounded read.
 */
object TableIdentity {

  /**
   * Fails when the table a checkpoint was written reading (`checkpointed`; None: a checkpoint of
   * a Sluice that did not keep it, which cannot be checked) is not the one read now (`current`;
   * None: the table has no identity to compare). `identity` names what the format calls it,
   * `units` what the checkpoint's positions count ("snapshots", "versions").
   */
  def check(
      context: String,
      table: String,
      identity: String,
      units: String,
      checkpointed: Option[String],
      current: Option[String]): Unit =
    for (was <- checkpointed; now <- current if was != now)
      throw new SluiceRuntimeException(
        ErrorClasses.TableReplaced,
        Map(
          "context" -> context,
          "table" -> table,
          "identity" -> identity,
          "checkpointed" -> was,
          "current" -> now,
          "units" -> units))
}

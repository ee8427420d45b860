package sluice.runtime

/** How much one batch may read: at most `maxRecords` records, or everything available (None). */
final case class BatchLimit(maxRecords: Option[Long])

object BatchLimit {
  val Unlimited: BatchLimit = BatchLimit(None)
}

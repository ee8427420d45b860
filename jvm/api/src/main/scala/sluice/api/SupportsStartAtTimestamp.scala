package sluice.api

/**
 * A source that can be told to start at an event time (e.g. Kafka's `startingTimestamp`): what
 * a hybrid source's "start where the previous source ended" form needs.
 */
trait SupportsStartAtTimestamp { self: Source[_, _] =>

  /** The same source, starting at its first record with an event time >= `timestampMs`. */
  def startingAtTimestamp(timestampMs: Long): Source[_, _]
}

package sluice.config

/**
 * What a source's rows hold. `Full`: the connector's complete row (Kafka's 7 columns, parsed data
 * plus provenance), with record times extracted for watermarks and progress. `Compact`: the
 * payload only (FLIP-371's "no timestamps" mode), built directly by the reader, no times read.
 *
 * A fact of the binding, not of the connector: users choose it with `forceTimestampSupport=false`,
 * the binding checks that nothing needs event time and hands it to readers in their
 * `ReaderContext` and to the source when it asks for the schema (`Source.schema(layout)`).
 * `hasRecordTimes` is the one place that says which layouts read record times (readers track
 * event time and split watermarks only from those).
 */
sealed abstract class RecordLayout(val name: String, val hasRecordTimes: Boolean)

object RecordLayout {
  case object Full extends RecordLayout("full", hasRecordTimes = true)
  case object Compact extends RecordLayout("compact", hasRecordTimes = false)
}

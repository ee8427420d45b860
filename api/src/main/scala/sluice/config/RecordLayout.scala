package sluice.config

/**
 * What a source's rows hold. `Full`: the connector's complete row (Kafka's 7 columns, parsed data
 * plus provenance), with record times extracted for watermarks and progress. `Compact`: the
 * payload only (FLIP-371's "no timestamps" mode), built directly by the reader, no times read.
 *
 * Users choose it with `forceTimestampSupport=false` (see `StreamOptions`), which checks that
 * nothing needs event time; the binding then hands the connector `recordLayout=compact`.
 */
sealed abstract class RecordLayout(val name: String)

object RecordLayout {
  case object Full extends RecordLayout("full")
  case object Compact extends RecordLayout("compact")

  val Option: ConfigOption[String] = ConfigOption.string("recordLayout",
    "full or compact (payload only); set by Sluice from forceTimestampSupport, not by hand")
    .withCheck("full or compact")(v => v == Full.name || v == Compact.name).withDefault(Full.name)

  def from(options: Options): RecordLayout =
    if (options.get(Option).contains(Compact.name)) Compact else Full

  /** The option that puts a source into `layout`. */
  def entry(layout: RecordLayout): (String, String) = Option.name -> layout.name
}

package sluice.hybrid

import sluice.config.ConfigOption

/**
 * The hybrid source's option names, declared once: `HybridSource` reads them, and the Python
 * builder takes them from the generated declarations (python/sluice/_options.json).
 * Source i's options are its own options under `hybrid.<i>.`; three more keys there say how the
 * source comes to be.
 */
object HybridOptions {
  val Sources: ConfigOption[Int] = ConfigOption
    .int(
      "hybrid.sources",
      "the number of sources, read one after the other; every source but the last must be bounded")
    .atLeast(1)

  /** A template: `<i>` is the source's index from 0, `<option>` one of its options. */
  val Entry: ConfigOption[String] = ConfigOption[String](
    "hybrid.<i>.<option>",
    "option <option> of source i (from 0): `source` and that type's options, or factory, boundedness, " +
      "startAtPreviousEndMinusMs",
    None,
    "what <option> allows",
    s => Some(s))
  val Factory: ConfigOption[String] = ConfigOption.string(
    "factory",
    "hybrid.<i>.factory: the id of a factory registered in this driver that builds source i at the switch " +
      "(Python add_source_factory, Scala SourceFactory)")
  val FactoryBoundedness: ConfigOption[String] = ConfigOption
    .string(
      "boundedness",
      "hybrid.<i>.boundedness, with factory: whether the source the factory builds is bounded")
    .oneOf("bounded or unbounded", Seq("bounded", "unbounded"), ignoreCase = true)
  val StartAtPreviousEndMinusMs: ConfigOption[Long] = ConfigOption
    .long(
      "startAtPreviousEndMinusMs",
      "hybrid.<i>.startAtPreviousEndMinusMs: start source i (one that can start at a timestamp, e.g. Kafka) at " +
        "the previous source's largest event time minus this")
    .atLeast(0)

  val RetentionCheckIntervalMs: ConfigOption[Long] = ConfigOption
    .long(
      "hybrid.retentionCheckIntervalMs",
      "while the hybrid reads its bounded sources, how often at most (in the background, never per batch) it checks " +
        "that the next source, if it is Kafka, still holds the records its start will need (earliest offsets and " +
        "their timestamps, the topics' retention.ms): metric retentionHeadroomMs, a warning below " +
        "hybrid.retentionWarningMs, and the query fails before the switch once those records are gone; 0: never check")
    .atLeast(0)
    .withDefault(60000L)
  val RetentionWarningMs: ConfigOption[Long] = ConfigOption
    .long(
      "hybrid.retentionWarningMs",
      "a warning is logged at each retention check while retentionHeadroomMs (how long before the records the next " +
        "source will start at can be deleted) is below this")
    .atLeast(0)
    .withDefault(6 * 3600 * 1000L)

  /** Options of the hybrid as a whole (not of one source). */
  val hybridWide: Seq[ConfigOption[Long]] = Seq(RetentionCheckIntervalMs, RetentionWarningMs)

  val all: Seq[ConfigOption[_]] =
    Seq(Sources, Entry, Factory, FactoryBoundedness, StartAtPreviousEndMinusMs) ++ hybridWide

  /** Option `option` of source `index`, as the template `Entry` names it. */
  def entryKey(index: Int, option: String): String =
    Entry.name.replace("<i>", index.toString).replace("<option>", option)

  /** The common start of the keys of source `index`. */
  def entryPrefix(index: Int): String = entryKey(index, "")

  /** The margin of `hybrid.<index>.startAtPreviousEndMinusMs`, checked as declared. */
  def margin(index: Int, raw: String): Long =
    StartAtPreviousEndMinusMs
      .parse(raw.trim)
      .filter(StartAtPreviousEndMinusMs.check)
      .getOrElse(
        throw ConfigOption.invalid(
          "HybridSource",
          entryKey(index, StartAtPreviousEndMinusMs.name),
          raw,
          StartAtPreviousEndMinusMs.allowed))
}

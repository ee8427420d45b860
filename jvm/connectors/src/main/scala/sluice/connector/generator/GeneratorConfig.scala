package sluice.connector.generator

import scala.util.Try

import sluice.config.{ConfigOption, Options}
import sluice.errors.SluiceError

/**
 * The generator's settings, and the pure functions that define its records: record `i` of split
 * `s` has id `i * splits + s`, event time `eventTimeStartMs + skew(s) + i * eventTimeStepMs`,
 * and a payload derived from the id. Tests can thus compute the exact expected output.
 */
final case class GeneratorConfig(
    splits: Int,
    recordsPerSplit: Option[Long],
    rowsPerSecond: Option[Long],
    eventTimeStartMs: Long,
    eventTimeStepMs: Long,
    splitSkewMs: Map[Int, Long],
    payloadBytes: Int) {

  def recordId(split: Int, index: Long): Long = index * splits + split
  def eventTimeMs(split: Int, index: Long): Long =
    eventTimeStartMs + splitSkewMs.getOrElse(split, 0L) + index * eventTimeStepMs
  def payload(split: Int, index: Long): String = {
    val base = s"r${recordId(split, index)}-"
    if (base.length >= payloadBytes) base
    else base + "x" * (payloadBytes - base.length)
  }

  def toOptions: Map[String, String] = {
    import GeneratorConfig._
    Map(
      Splits.name -> splits.toString,
      EventTimeStartMs.name -> eventTimeStartMs.toString,
      EventTimeStepMs.name -> eventTimeStepMs.toString,
      PayloadBytes.name -> payloadBytes.toString) ++
      recordsPerSplit.map(RecordsPerSplit.name -> _.toString) ++
      rowsPerSecond.map(RowsPerSecond.name -> _.toString) ++
      (if (splitSkewMs.isEmpty) Nil
       else
         Seq(
           SplitSkewMs.name -> splitSkewMs.toSeq.sorted
             .map { case (s, ms) => s"$s:$ms" }
             .mkString(",")))
  }
}

object GeneratorConfig {
  val Splits: ConfigOption[Int] = ConfigOption
    .int("splits", "number of splits (parallel record streams)")
    .withDefault(1)
    .between(1, 100000)
  val RecordsPerSplit: ConfigOption[Long] = ConfigOption
    .long("recordsPerSplit", "records in each split; when set the source is bounded")
    .atLeast(0)
  val RowsPerSecond: ConfigOption[Long] = ConfigOption
    .long(
      "rowsPerSecond",
      "records per second and split that become available; required when recordsPerSplit is not set")
    .atLeast(1)
  val EventTimeStartMs: ConfigOption[Long] = ConfigOption
    .long("eventTimeStartMs", "event time of each split's first record, epoch milliseconds")
    .withDefault(1700000000000L)
  val EventTimeStepMs: ConfigOption[Long] = ConfigOption
    .long("eventTimeStepMs", "event time between consecutive records of a split, milliseconds")
    .withDefault(1000L)
    .atLeast(0)
  val SplitSkewMs: ConfigOption[Map[Int, Long]] = ConfigOption[Map[Int, Long]](
    "splitSkewMs",
    "event-time offset per split, e.g. '0:-86400000,3:60000'",
    None,
    "comma-separated split:milliseconds pairs, e.g. '0:-86400000,3:60000'",
    s =>
      Try(
        s.split(",")
          .map(_.trim)
          .filter(_.nonEmpty)
          .map { pair =>
            val Array(split, ms) = pair.split(":").map(_.trim)
            split.toInt -> ms.toLong
          }
          .toMap).toOption)
  val PayloadBytes: ConfigOption[Int] = ConfigOption
    .int("payloadBytes", "length of each record's payload")
    .withDefault(16)
    .between(0, 1048576)

  val all: Seq[ConfigOption[_]] =
    Seq(
      Splits,
      RecordsPerSplit,
      RowsPerSecond,
      EventTimeStartMs,
      EventTimeStepMs,
      SplitSkewMs,
      PayloadBytes)

  def fromOptions(raw: Map[String, String]): GeneratorConfig = {
    val o = new Options(raw, all, "GeneratorSource")
    val splits = o.get(Splits).get
    val records = o.get(RecordsPerSplit)
    val rate = o.get(RowsPerSecond)
    if (records.isEmpty && rate.isEmpty) {
      throw SluiceError.config(
        "GeneratorSource: an unbounded generator needs option 'rowsPerSecond' (an integer >= 1); " +
          "or set 'recordsPerSplit' to make the source bounded.")
    }
    val skew = o.get(SplitSkewMs).getOrElse(Map.empty)
    skew.keys.find(s => s < 0 || s >= splits).foreach { s =>
      throw ConfigOption.invalid(
        "GeneratorSource",
        SplitSkewMs.name,
        raw.collectFirst {
          case (k, v) if k.equalsIgnoreCase(SplitSkewMs.name) => v
        }.get,
        s"split indexes from 0 to ${splits - 1} (split $s does not exist)")
    }
    GeneratorConfig(
      splits,
      records,
      rate,
      o.get(EventTimeStartMs).get,
      o.get(EventTimeStepMs).get,
      skew,
      o.get(PayloadBytes).get)
  }
}

package sluice.runtime

import sluice.alignment.SplitEventTime.quote

/**
 * One split as query progress shows it (`splitProgress`), for status views: what was read from
 * it and what is left.
 *
 * @param records        records read from the split so far
 * @param position       where the last batch ended in it
 * @param available      how far it could be read when the last batch was planned (None: not asked yet)
 * @param backlogRecords the records between `position` and `available`, estimated for byte positions
 * @param maxEventTime   the largest event time read from it
 */
final case class SplitStatus(
    splitId: String,
    records: Long,
    position: Long,
    available: Option[Long],
    backlogRecords: Option[Long],
    maxEventTime: Option[Long])

object SplitStatus {

  /** `[{"split", "records", "position", "available", "backlogRecords", "maxEventTimeMs"}]`; unknown figures are left out. */
  def json(splits: Seq[SplitStatus]): String = splits
    .map { s =>
      def field(name: String, value: Option[Long]) =
        value.map(v => s""","$name":$v""").getOrElse("")
      s"""{"split":${quote(s.splitId)},"records":${s.records},"position":${s.position}""" +
        field("available", s.available) + field("backlogRecords", s.backlogRecords) +
        field("maxEventTimeMs", s.maxEventTime) + "}"
    }
    .mkString("[", ",", "]")
}

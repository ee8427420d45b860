package sluice.connector.kafka

import java.time.Instant

import org.apache.kafka.clients.admin.OffsetSpec
import org.apache.kafka.common.TopicPartition

import sluice.api.{RetentionCheck, RetentionWatch}

/**
 * Whether a Kafka source that has not started yet will still find the records its start needs:
 * its partitions' earliest offsets, the first record at or after the start timestamp (with its
 * timestamp), and the topics' `retention.ms`, asked with the source's own Admin settings.
 *
 * Kafka keeps no trace of what it deleted, so a loss is told from what is left:
 *  - a start at offsets: a partition now beginning after its start offset lost the records between;
 *  - a start at a timestamp: a partition whose log no longer begins at offset 0, whose first
 *    record is the first one at or after the start and is later than the start, while records at
 *    the start are older than `retention.ms` (when the topic has one): the records from the start
 *    up to that first record were deleted. A partition that never had records between the start
 *    and its first record left is counted as lost too; Kafka cannot tell them apart.
 */
final class KafkaRetentionWatch(config: KafkaConfig) extends RetentionWatch {
  import KafkaRetentionWatch._

  private val lookup = new KafkaAdminLookups(config)
  private val dataLoss = new KafkaDataLoss(config.failOnDataLoss)

  override def check(startAtTimestamp: Option[Long], nowMs: Long): RetentionCheck = {
    val partitions = lookup.partitions().toSeq.sortBy(tp => (tp.topic, tp.partition))
    if (partitions.isEmpty) return RetentionCheck(None, None)
    startAtTimestamp
      .map(ts => Start.Timestamps(partitions.map(_ -> ts).toMap))
      .orElse(configuredStart(partitions)) match {
      case None => RetentionCheck(None, None)
      case Some(Start.Offsets(offsets)) => atOffsets(offsets)
      case Some(Start.Timestamps(times)) => atTimestamps(times, nowMs)
    }
  }

  /** The start the source's own options give, where a loss is possible at all. */
  private def configuredStart(partitions: Seq[TopicPartition]): Option[Start] = {
    import OffsetsInitializer._
    config.starting match {
      case Earliest | Latest => None // whatever is there when it starts: nothing to lose
      case Specific(offsets) =>
        Some(Start.Offsets(offsets.filter { case (tp, o) => o >= 0 && partitions.contains(tp) }))
      case Timestamp(ts) => Some(Start.Timestamps(partitions.map(_ -> ts).toMap))
      case TimestampPerPartition(times) =>
        Some(Start.Timestamps(times.filter { case (tp, _) => partitions.contains(tp) }))
    }
  }

  private def atOffsets(offsets: Map[TopicPartition, Long]): RetentionCheck = {
    val earliest =
      lookup.offsetInfos(offsets.keys.toSeq, OffsetSpec.earliest(), tolerateMissing = true)
    val gone = offsets.toSeq.sortBy(_._1.toString).flatMap { case (tp, start) =>
      earliest
        .get(tp)
        .map(_.offset())
        .filter(_ > start)
        .map(e => s"$tp from offset $start (it now begins at offset $e)")
    }
    // the timestamp of the record at a start offset needs a fetch: no headroom for an offset start
    RetentionCheck(
      None,
      Option.when(gone.nonEmpty)(s"the records it starts at are gone: ${gone.mkString("; ")}. " +
        s"Keep them longer (raise retention.ms of ${topicsOf(offsets.keys)}), or give it start offsets that still exist."),
      tolerated = dataLoss.tolerated)
  }

  private def atTimestamps(times: Map[TopicPartition, Long], nowMs: Long): RetentionCheck = {
    // retention.ms needs DESCRIBE_CONFIGS, which a reader (READ, DESCRIBE) may lack: without it
    // the headroom is unknown, and a loss is told from the offsets alone (which need DESCRIBE
    // only), as for a topic without retention.ms: a first record later than the start, where
    // the log no longer begins at 0, counts as lost (failOnDataLoss says whether that stops it)
    val (retention, unchecked) = lookup.retentionMs(times.keySet.map(_.topic)) match {
      case Right(r) => (r, None)
      case Left(refused) =>
        (
          Map.empty[String, Long],
          Some(
            s"${refused.getMessage} Without it the retention check cannot tell how long the " +
              "records the switch needs are kept (no retentionHeadroomMs, no warning before " +
              "they are deleted); it still finds records already gone from the partitions' " +
              "offsets (DESCRIBE), and stops the query or goes on as failOnDataLoss says."))
    }
    val earliest =
      lookup.offsetInfos(times.keys.toSeq, OffsetSpec.earliest(), tolerateMissing = true)
    val firstAtStart = times.groupBy(_._2).flatMap { case (ts, tps) =>
      lookup.offsetInfos(tps.keys.toSeq, OffsetSpec.forTimestamp(ts), tolerateMissing = true)
    }
    val ageing = times.toSeq.flatMap { case (tp, ts) =>
      retention.get(tp.topic).filter(_ >= 0).map(r => ts + r - nowMs)
    }
    val gone = times.toSeq.sortBy(_._1.toString).flatMap { case (tp, ts) =>
      for {
        begin <- earliest.get(tp).map(_.offset()) if begin > 0
        first <- firstAtStart.get(tp) if first.offset() == begin && first.timestamp() > ts
        if retention.get(tp.topic).forall(r => r < 0 || ts + r <= nowMs)
      } yield s"$tp from its first record at or after ${instant(ts)} (it now begins at offset $begin, a record of " +
        s"${instant(first.timestamp())})"
    }
    val retentions = retention.toSeq.sorted
      .map { case (t, r) => s"$t: ${if (r < 0) "none" else s"$r ms"}" }
      .mkString(", ")
    RetentionCheck(
      ageing.minOption,
      Option.when(gone.nonEmpty)(
        s"the records it needs are gone: ${gone.mkString("; ")} " +
          s"(retention.ms of ${if (unchecked.isEmpty) retentions else "unknown"}). Keep them longer (raise " +
          s"retention.ms of ${topicsOf(times.keys)}), let the previous source reach later event times, or start " +
          "this source later."),
      tolerated = dataLoss.tolerated,
      unchecked = unchecked)
  }

  override def close(): Unit = lookup.close()
}

private object KafkaRetentionWatch {
  sealed trait Start
  object Start {
    final case class Offsets(offsets: Map[TopicPartition, Long]) extends Start
    final case class Timestamps(times: Map[TopicPartition, Long]) extends Start
  }

  def instant(ms: Long): String = s"$ms (${Instant.ofEpochMilli(ms)})"
  def topicsOf(tps: Iterable[TopicPartition]): String =
    tps.map(_.topic).toSeq.distinct.sorted.mkString(", ")
}

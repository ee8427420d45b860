package sluice.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import com.fasterxml.jackson.core.json.JsonWriteFeature
import com.fasterxml.jackson.databind.json.JsonMapper

import sluice.alignment.{EventTimeMetrics => E}
import sluice.api.{ReaderCounters, SourceMetric}
import sluice.api.SourceMetric._
import sluice.connector.file.FileMetrics
import sluice.connector.kafka.KafkaMetrics
import sluice.hybrid.{HybridMetrics, HybridSplit}
import sluice.runtime.{LatencyMetrics, RuntimeMetrics => R}

/**
 * Every key a Sluice source reports in query progress (`sources[i].metrics`), with its type and
 * meaning, as JSON for the Python package: `sluice.status` and `sluice.plot` read values by the
 * type declared here (python/sluice/_metrics.json, generated from this by `make docs`) instead of
 * parsing strings their own way. Each key is the constant its reporter reports it by
 * (`RuntimeMetrics`, `EventTimeMetrics`, `LatencyMetrics`, `LiveAlignmentMetrics`, `KafkaMetrics`,
 * `FileMetrics`, `HybridMetrics`, ...), so a renamed key renames its declaration.
 * MetricDeclarationsSuite fails when the file is stale, and when a query reports a key this list
 * does not declare or a value its type does not read.
 */
object MetricDeclarations {

  private def long(name: String, doc: String) = SourceMetric(name, Long, doc)
  private def text(name: String, doc: String) = SourceMetric(name, Text, doc)

  /** Every source: the runtime's figures. */
  val runtime: Seq[SourceMetric] = Seq(
    text(R.Source, "the source's name (name= of from_source)"),
    text(R.SourceType, "the source's type: kafka, file, generator, hybrid"),
    long(R.Splits, "splits known, finished ones included"),
    long(R.RecordsRead, "records read so far, all splits (finished ones included)"),
    long(
      R.BacklogRecords,
      "positions behind the latest, summed over splits (Kafka: offsets; files: bytes)"),
    long(
      R.FinishedSplits,
      "splits read to their end that left the checkpoint (absent while none has)"),
    long(R.MaxEventTimeMs, "the largest event time read (a hybrid: over all members so far)"),
    SourceMetric(
      R.SplitProgress,
      JsonList,
      "per split as of the last batch",
      Seq(
        "split" -> "the split's id",
        "records" -> "records read",
        "position" -> "where the batch ended",
        "available" -> "how far the split could be read when the batch was planned",
        "backlogRecords" -> "the records in between (estimated for byte positions)",
        "maxEventTimeMs" -> "the largest event time read")),
    text(
      R.RecordLayout,
      "compact when the rows are compact records (absent for full rows, also when a query that uses only " +
        "value gets value-only rows in the full layout, whose record times are still read)"),
    long(
      CheckpointBodies.BytesWrittenMetric,
      "bytes this run of the query wrote to keep checkpoints too large for the offset log " +
        "(chunks that changed, and their lists; see architecture.md, Recovery); absent while none was that large")) ++
    ReaderCounters.all.map(c => long(c, s"the readers' counter $c, summed over splits")) :+
    long(
      ReaderMetrics.AlignmentPausedMs,
      "milliseconds splits spent paused by event-time alignment in open batches (real-time mode, continuous processing), summed over splits")

  /** With a watermark strategy, and with alignment. */
  val eventTime: Seq[SourceMetric] = Seq(
    text(E.Status, "active, or idle when every unfinished split is idle"),
    long(E.IdleSplits, "splits that are idle"),
    long(E.PausedSplits, "splits paused by alignment"),
    SourceMetric(
      E.Splits,
      JsonList,
      "per split: its watermark and whether it reads",
      Seq(
        "split" -> "the split's id",
        "watermarkMs" -> "the split's watermark",
        "status" -> "active or idle",
        "paused" -> "paused by alignment",
        "finished" -> "read to its end",
        "reason" -> "alignment, idleness or finished for a split that does not read")),
    long(E.WatermarkMs, "the smallest watermark of the unfinished splits"),
    long(E.SpreadMs, "the largest minus the smallest watermark of the splits that constrain"),
    text(E.Group, "the alignment group"),
    long(E.MaxDriftMs, "the drift the group allows"),
    SourceMetric(
      E.MaxDriftAuto,
      Boolean,
      "whether the drift was resolved from the query's withWatermark delay"),
    text(E.Mode, "how the last batch was aligned"),
    long(E.MaxAllowedWatermarkMs, "the group's limit the last batch was planned with"),
    long(E.HorizonMs, "how far the last batch was planned to read in event time"),
    text(
      E.MinimumSplit,
      "the source's split that set the group's minimum for the last batch (absent when another member's did)"),
    long(E.GroupSpreadMs, "the spread of the group's watermarks as the group last saw it"),
    long(LatencyMetrics.Markers, "latency markers of the last batch"),
    long(LatencyMetrics.P50Ms, "median latency of those markers"),
    long(LatencyMetrics.P99Ms, "99th percentile latency of those markers"),
    long(LatencyMetrics.MaxMs, "largest latency of those markers"))

  /** Open batches (real-time mode, continuous processing) with alignment. */
  val live: Seq[SourceMetric] = Seq(
    SourceMetric(
      LiveAlignmentMetrics.LiveSplits,
      JsonList,
      "this source's splits as its running readers last reported them",
      Seq(
        "split" -> "the split's id",
        "watermarkMs" -> "the split's watermark",
        "idle" -> "idle",
        "paused" -> "paused by alignment",
        "finished" -> "read to its end",
        "lastActiveMs" -> "when it last read a record")),
    long(LiveAlignmentMetrics.LiveMaxAllowedWatermarkMs, "the group's live limit"),
    long(
      LiveAlignmentMetrics.LiveMaxObservedDriftMs,
      "the largest spread the group's live reports showed"))

  /** The enumerators' own figures, by source type. */
  val connectors: Seq[SourceMetric] = Seq(
    long(
      KafkaMetrics.PartitionsReset,
      "Kafka: partitions found re-created (a new incarnation of a topic)"),
    long(
      KafkaMetrics.MinOffsetsBehindLatest,
      "Kafka, as Spark's: the fewest offsets a partition is behind"),
    long(
      KafkaMetrics.MaxOffsetsBehindLatest,
      "Kafka, as Spark's: the most offsets a partition is behind"),
    SourceMetric(
      KafkaMetrics.AvgOffsetsBehindLatest,
      Double,
      "Kafka, as Spark's: the mean offsets a partition is behind"),
    long(
      FileMetrics.FilesNotReady,
      "monitored files: files found but not readable yet (an unbounded Iceberg table given by a metadata file: also its newest metadata files not settled)"),
    long(HybridMetrics.ActiveSource, "hybrid: the index of the member being read"),
    text(HybridMetrics.ActiveSourceType, "hybrid: the type of the member being read"),
    SourceMetric(
      HybridMetrics.RecordsPerSource,
      LongList,
      "hybrid: records read from each member, in member order (one number per member)"),
    long(HybridMetrics.LastSwitchAtMs, "hybrid: when the last switch happened"),
    long(
      HybridMetrics.RetentionHeadroomMs,
      "hybrid: how long before the records the next member starts at can be deleted"),
    long(
      HybridMetrics.RetentionStartMs,
      "hybrid: the start timestamp the retention check looked for"),
    long(HybridMetrics.RetentionCheckedAtMs, "hybrid: when the retention check last ran"),
    SourceMetric(
      HybridMetrics.RetentionRecordsLost,
      Boolean,
      "hybrid: records the next member's start needed are gone (present only when true)"))

  val all: Seq[SourceMetric] = runtime ++ eventTime ++ live ++ connectors

  def byName: Map[String, SourceMetric] = all.map(m => m.name -> m).toMap

  private val mapper = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build()
  private def str(s: String): String = mapper.writeValueAsString(s)

  /** One metric a line, in declaration order, so a regenerated file diffs metric by metric. */
  def json: String = {
    val names = all.map(_.name)
    require(
      names.distinct.size == names.size,
      s"a metric declared twice: ${names.diff(names.distinct)}")
    def metric(m: SourceMetric): String = {
      val fields =
        if (m.fields.isEmpty) ""
        else
          m.fields
            .map { case (f, d) => s"${str(f)}: ${str(d)}" }
            .mkString(", \"fields\": {", ", ", "}")
      s"""{"name": ${str(m.name)}, "kind": ${str(m.kind.name)}, "description": ${str(
          m.doc)}$fields}"""
    }
    Seq(
      "{",
      s"""  "kinds": ${kinds.map(k => str(k.name)).mkString("[", ", ", "]")},""",
      s"""  "hybridSplitIdSeparator": ${str(HybridSplit.IdSeparator)},""",
      """  "metrics": [""",
      all.map(metric).mkString("    ", ",\n    ", ""),
      "  ]",
      "}").mkString("", "\n", "\n")
  }

  /** The headings of the reference in docs/observability.md, with the metrics under each. */
  private def sections: Seq[(String, Seq[SourceMetric])] = Seq(
    "Every source" -> runtime,
    "With a watermark strategy, and with alignment" -> eventTime,
    "Open batches (real-time mode, continuous processing) with alignment" -> live,
    "The connectors' own" -> connectors)

  /**
   * The metric reference that ends docs/observability.md (below its generated-section marker):
   * a table per section, each metric with its type and meaning, a JSON list's fields named.
   */
  def markdown: String = {
    def cell(s: String) = s.replace("|", "\\|")
    def row(m: SourceMetric): String = {
      val fields =
        if (m.fields.isEmpty) ""
        else m.fields.map { case (f, d) => s"`$f` ($d)" }.mkString("; fields: ", ", ", "")
      s"| `${m.name}` | ${m.kind.name} | ${cell(m.doc + fields)} |"
    }
    sections
      .map { case (title, metrics) =>
        (Seq(s"### $title", "", "| metric | type | meaning |", "|---|---|---|") ++
          metrics.map(row)).mkString("\n")
      }
      .mkString("", "\n\n", "\n")
  }

  /**
   * `make docs`: writes the JSON to the file named by the first argument and the markdown
   * reference to the second (the JSON to stdout without arguments).
   */
  def main(args: Array[String]): Unit = args match {
    case Array(jsonPath, markdownPath) =>
      Files.write(Paths.get(jsonPath), json.getBytes(StandardCharsets.UTF_8))
      Files.write(Paths.get(markdownPath), markdown.getBytes(StandardCharsets.UTF_8))
    case Array(jsonPath) =>
      Files.write(Paths.get(jsonPath), json.getBytes(StandardCharsets.UTF_8))
    case _ => print(json)
  }
}

package sluice.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}

import com.fasterxml.jackson.core.json.JsonWriteFeature
import com.fasterxml.jackson.databind.json.JsonMapper

import sluice.api.{ReaderCounters, SourceMetric}
import sluice.api.SourceMetric._
import sluice.hybrid.HybridSplit

/**
 * Every key a Sluice source reports in query progress (`sources[i].metrics`), with its type and
 * meaning, as JSON for the Python package: `sluice.status` and `sluice.plot` read values by the
 * type declared here (python/sluice/_metrics.json, generated from this by `make docs`) instead of
 * parsing strings their own way. MetricDeclarationsSuite fails when the file is stale, and when a
 * query reports a key this list does not declare or a value its type does not read.
 */
object MetricDeclarations {

  private def long(name: String, doc: String) = SourceMetric(name, Long, doc)
  private def text(name: String, doc: String) = SourceMetric(name, Text, doc)

  /** Every source: the runtime's figures. */
  val runtime: Seq[SourceMetric] = Seq(
    text("source", "the source's name (name= of from_source)"),
    text("sourceType", "the source's type: kafka, file, generator, hybrid"),
    long("splits", "splits known, finished ones included"),
    long("recordsRead", "records read so far, all splits (finished ones included)"),
    long(
      "backlogRecords",
      "positions behind the latest, summed over splits (Kafka: offsets; files: bytes)"),
    long(
      "finishedSplits",
      "splits read to their end that left the checkpoint (absent while none has)"),
    long("maxEventTimeMs", "the largest event time read (a hybrid: over all members so far)"),
    SourceMetric(
      "splitProgress",
      JsonList,
      "per split as of the last batch",
      Seq(
        "split" -> "the split's id",
        "records" -> "records read",
        "position" -> "where the batch ended",
        "available" -> "how far the split could be read when the batch was planned",
        "backlogRecords" -> "the records in between (estimated for byte positions)",
        "maxEventTimeMs" -> "the largest event time read")),
    text("recordLayout", "compact when the rows are compact records (absent for full rows)"),
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
    text("watermark.status", "active, or idle when every unfinished split is idle"),
    long("watermark.idleSplits", "splits that are idle"),
    long("watermark.pausedSplits", "splits paused by alignment"),
    SourceMetric(
      "watermark.splits",
      JsonList,
      "per split: its watermark and whether it reads",
      Seq(
        "split" -> "the split's id",
        "watermarkMs" -> "the split's watermark",
        "status" -> "active or idle",
        "paused" -> "paused by alignment",
        "finished" -> "read to its end",
        "reason" -> "alignment, idleness or finished for a split that does not read")),
    long("watermarkMs", "the smallest watermark of the unfinished splits"),
    long(
      "watermark.spreadMs",
      "the largest minus the smallest watermark of the splits that constrain"),
    text("alignment.group", "the alignment group"),
    long("alignment.maxDriftMs", "the drift the group allows"),
    SourceMetric(
      "alignment.maxDriftAuto",
      Boolean,
      "whether the drift was resolved from the query's withWatermark delay"),
    text("alignment.mode", "how the last batch was aligned"),
    long("alignment.maxAllowedWatermarkMs", "the group's limit the last batch was planned with"),
    long("alignment.horizonMs", "how far the last batch was planned to read in event time"),
    long(
      "alignment.groupSpreadMs",
      "the spread of the group's watermarks as the group last saw it"),
    long("latency.markers", "latency markers of the last batch"),
    long("latency.p50Ms", "median latency of those markers"),
    long("latency.p99Ms", "99th percentile latency of those markers"),
    long("latency.maxMs", "largest latency of those markers"))

  /** Open batches (real-time mode, continuous processing) with alignment. */
  val live: Seq[SourceMetric] = Seq(
    SourceMetric(
      "liveSplits",
      JsonList,
      "this source's splits as its running readers last reported them",
      Seq(
        "split" -> "the split's id",
        "watermarkMs" -> "the split's watermark",
        "idle" -> "idle",
        "paused" -> "paused by alignment",
        "finished" -> "read to its end",
        "lastActiveMs" -> "when it last read a record")),
    long("liveMaxAllowedWatermarkMs", "the group's live limit"),
    long("liveMaxObservedDriftMs", "the largest spread the group's live reports showed"))

  /** The enumerators' own figures, by source type. */
  val connectors: Seq[SourceMetric] = Seq(
    long("partitionsReset", "Kafka: partitions found re-created (a new incarnation of a topic)"),
    long("minOffsetsBehindLatest", "Kafka, as Spark's: the fewest offsets a partition is behind"),
    long("maxOffsetsBehindLatest", "Kafka, as Spark's: the most offsets a partition is behind"),
    SourceMetric(
      "avgOffsetsBehindLatest",
      Double,
      "Kafka, as Spark's: the mean offsets a partition is behind"),
    long("filesNotReady", "monitored files: files found but not readable yet"),
    long("activeSource", "hybrid: the index of the member being read"),
    text("activeSourceType", "hybrid: the type of the member being read"),
    SourceMetric(
      "recordsPerSource",
      LongList,
      "hybrid: records read from each member, in member order (one number per member)"),
    long("lastSwitchAtMs", "hybrid: when the last switch happened"),
    long(
      "retentionHeadroomMs",
      "hybrid: how long before the records the next member starts at can be deleted"),
    long("retentionStartMs", "hybrid: the start timestamp the retention check looked for"),
    long("retentionCheckedAtMs", "hybrid: when the retention check last ran"),
    SourceMetric(
      "retentionRecordsLost",
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

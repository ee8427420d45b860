"""flink_anchor: Sluice against Flink's own KafkaSource, the system its source model comes from.

Flink 2.2's `KafkaSource` (connector 5.0.0-2.2) runs in a local MiniCluster of one task manager
with 2 slots at parallelism 2 (the cores Spark's `local[2]` gets), in a JVM of its own
(`jvm/flinkanchor`, built by `make bench` from Maven Central; never part of the Sluice jar). It
stays up for the whole run and takes one job per round, as the Spark session does, so both sides
run with warm JITs; consumers are cold on both (each Flink job opens its own; Sluice's runs get a
`groupIdPrefix`, which keys its consumer pool per run). Flink runs with object reuse on. Each Flink job is a bounded read (earliest to the offsets at its start), timed from
submission to the job's end.

- raw: the topic of `kafka_throughput` (SLUICE_BENCH_KAFKA_RECORDS, default 5,000,000 records of
  ~100 bytes in 8 partitions, the same broker settings). Sluice reads it with Trigger.AvailableNow
  into the no-op sink; Flink deserializes every record into the fields a Sluice/Spark Kafka row
  has (key, value, topic, partition, offset, timestamp) into a discarding sink. `raw_ratio` =
  median of the per-round ratios Sluice ÷ Flink records per second (goal ≥ 1.0).
- aligned catch-up: the topic of `skew` (8 partitions, one event per SLUICE_BENCH_SKEW_STEP_MS,
  default 1 s, of event time per partition, partition 0 24 hours behind the others' 2 hours),
  event time = the record's timestamp, counted into 1-minute windows behind a 10-minute
  watermark. Sluice: `skew`'s aligned query (5-minute maximum drift, update mode into memory),
  once without a read limit (what alignment admits per batch) and once with `skew`'s
  `maxRecordsPerTrigger` of 10,000. Flink: `forBoundedOutOfOrderness(10 min)
  .withWatermarkAlignment(group, 5 min, 1 s)` (the update interval Flink's docs use), keyed by
  window, `TumblingEventTimeWindows` of 1 minute, late records counted from the window's late side
  output. `aligned_catchup_ratio` = median of the per-round ratios Sluice ÷ Flink seconds to the
  last record (goal ≤ 1.0; `aligned_catchup_ratio_limited` the same for the limited side);
  `flink_late_dropped`, `sluice_late_dropped` (goal 0) are the largest over the timed rounds.
  Where the seconds go: `sluice_durations_ms`, Spark's `durationMs` phases of Sluice's query,
  and `flink_net_runtime_ms`, the part of Flink's job Flink counts as its run (medians).

Both comparisons run as interleaved rounds after a warm-up of each side (bench/pairs.py,
SLUICE_BENCH_PAIRS).
"""

from __future__ import annotations

import json
import os
import queue
import re
import statistics
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from sluice import WatermarkStrategy
from sluice.testing import EmbeddedKafka

from bench.common import ROOT, broker, machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary
from bench.skew import DRIFT, PARTITIONS, expected_windows, skewed_events, sluice_kafka, window_counts

RESULT = Path(__file__).resolve().parent / "results" / "flink_anchor.json"
FLINK_CLASSPATH = ROOT / "jvm" / "flinkanchor" / "target" / "flink-classpath.txt"
#: the same class path with the Kafka client Sluice reads with in place of the connector's own
FLINK_CLASSPATH_SLUICE_CLIENT = FLINK_CLASSPATH.with_name("flink-classpath-sluice-kafka-client.txt")
#: how long one Flink job (or the MiniCluster's start) may take before the run fails
ANSWER_TIMEOUT_S = 900
PARALLELISM = 2
UPDATE_MS = 1000
#: the read limit per batch of `skew`'s Sluice side, run beside Sluice without a limit
SKEW_LIMIT = 10_000
DELAY_MS = 10 * 60_000
# what Flink's own launcher opens on Java 17 for its serializers (flink-dist's config.yaml)
JAVA17_OPENS = [
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.lang",
        "java.lang.reflect",
        "java.util",
        "java.io",
        "java.nio",
        "java.net",
        "java.time",
    )
]


class FlinkAnchor:
    """The Flink JVM (jvm/flinkanchor FlinkAnchorMain): one MiniCluster, one job per `run` call."""

    def __init__(self, jvm_options: list[str] | None = None, classpath: Path = FLINK_CLASSPATH) -> None:
        if not classpath.exists():
            raise FileNotFoundError(f"{classpath} is missing: run `make bench BENCH=flink_anchor`")
        self.classpath = classpath
        self.process = subprocess.Popen(
            [
                "java",
                "-Xmx2g",
                "-XX:+UseParallelGC",
                *(jvm_options or []),
                *JAVA17_OPENS,
                "-cp",
                classpath.read_text().strip(),
            ]
            + ["sluice.flinkanchor.FlinkAnchorMain", str(PARALLELISM)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        # answers are read on a thread, so that a job that hangs fails the run instead of hanging it
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._answer()  # {"ready": true} once the MiniCluster is up
        except BaseException:
            self.process.kill()
            raise

    @property
    def version(self) -> str:
        """Flink's version, from the jar on the class path that ran."""
        found = re.search(r"flink-streaming-java-([^/:]+?)\.jar", self.classpath.read_text())
        return found.group(1) if found else "unknown"

    @property
    def kafka_client(self) -> str:
        """The Kafka client's version on the anchor's class path (Flink's connector brings its own)."""
        found = re.search(r"kafka-clients-([^/:]+?)\.jar", self.classpath.read_text())
        return found.group(1) if found else "unknown"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _answer(self) -> dict:
        while True:
            try:
                line = self._lines.get(timeout=ANSWER_TIMEOUT_S)
            except queue.Empty:
                self.process.kill()
                raise TimeoutError(
                    f"the Flink anchor gave no answer in {ANSWER_TIMEOUT_S} s; killed"
                ) from None
            if line is None:
                raise RuntimeError(
                    f"the Flink anchor ended (exit code {self.process.wait()}) without answering"
                )
            if line.startswith("{"):
                return json.loads(line)

    def run(self, *words: object) -> dict:
        assert self.process.stdin is not None
        self.process.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            try:
                self.process.stdin.write("quit\n")
                self.process.stdin.close()
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()


def sluice_raw_seconds(spark: SparkSession, kafka: EmbeddedKafka, topic: str, records: int) -> float:
    """Sluice's raw read of all of `topic` (its `records`) into the no-op sink, under
    Trigger.AvailableNow: its seconds. A group id drawn for the run keys Sluice's consumer pool,
    so every run starts with cold consumers, as every Flink job does."""
    df = (
        spark.readStream.format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("groupIdPrefix", "anchor")
        .load()
    )
    seconds, progress = run_available_now(df)
    if rows_read(progress) != records:
        raise AssertionError(f"Sluice read {rows_read(progress)} rows, expected {records}")
    return seconds


def _raw(spark: SparkSession, kafka: EmbeddedKafka, flink: FlinkAnchor, records: int, pairs: int) -> dict:
    topic = "anchor_raw"
    kafka.create_topic(topic, partitions=8)
    kafka.produce_generated(topic, records, 100)

    def sluice_side() -> float:
        return records / sluice_raw_seconds(spark, kafka, topic, records)

    def flink_side() -> float:
        answer = flink.run("raw", kafka.bootstrap_servers, topic)
        if answer["read"] != records:
            raise AssertionError(f"Flink read {answer['read']} records, expected {records}")
        return records / answer["seconds"]

    measured = interleaved({"sluice": sluice_side, "flink": flink_side}, pairs, label="raw ")
    return {
        "records": records,
        "sluice_rps": statistics.median(measured["sluice"]),
        "flink_rps": statistics.median(measured["flink"]),
        **summary("raw_ratio", measured["sluice"], measured["flink"]),
        "all_runs": {"sluice_rps": measured["sluice"], "flink_rps": measured["flink"]},
    }


def _aligned(spark: SparkSession, kafka: EmbeddedKafka, flink: FlinkAnchor, pairs: int) -> dict:
    topic = "anchor_skewed"
    kafka.create_topic(topic, PARTITIONS)
    step_ms = int(os.environ.get("SLUICE_BENCH_SKEW_STEP_MS", "1000"))  # as skew's
    events = skewed_events(step_ms)
    kafka.produce(topic, ({"value": f"{p}-{ts}", "partition": p, "timestamp": ts} for p, ts in events))
    expected = expected_windows(events)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "anchor", max_drift=DRIFT
    )
    runs: dict[str, list[dict]] = {"sluice": [], "sluice_limited": [], "flink": []}
    drift_ms = int(DRIFT.total_seconds() * 1000)

    def sluice_side(name: str, limit: int | None) -> Callable[[], float]:
        def once() -> float:
            df = sluice_kafka(spark, kafka.bootstrap_servers, topic, strategy, limit)
            counted = window_counts(spark, df, f"anchor_{name}_{len(runs[name])}", expected)
            if counted["rows"] != len(events):
                raise AssertionError(f"{name} read {counted['rows']} rows, expected {len(events)}")
            runs[name].append(counted)
            return counted["seconds"]

        return once

    def flink_side() -> float:
        answer = flink.run("aligned", kafka.bootstrap_servers, topic, drift_ms, UPDATE_MS, DELAY_MS)
        if answer["read"] != len(events) or answer["windowed"] + answer["late_dropped"] != len(events):
            raise AssertionError(f"Flink read {answer}, expected {len(events)} records")
        runs["flink"].append(answer)
        return answer["seconds"]

    measured = interleaved(
        {
            "sluice": sluice_side("sluice", None),
            "sluice_limited": sluice_side("sluice_limited", SKEW_LIMIT),
            "flink": flink_side,
        },
        pairs,
        label="aligned ",
        unit="s",
    )
    timed = {side: r[-pairs:] for side, r in runs.items()}  # the warm-ups come first
    return {
        "events": len(events),
        "sluice_seconds": statistics.median(measured["sluice"]),
        "sluice_limited_seconds": statistics.median(measured["sluice_limited"]),
        "flink_seconds": statistics.median(measured["flink"]),
        **summary("aligned_catchup_ratio", measured["sluice"], measured["flink"]),
        **summary("aligned_catchup_ratio_limited", measured["sluice_limited"], measured["flink"]),
        "sluice_batches": max(r["batches"] for r in timed["sluice"]),
        "sluice_limited_batches": max(r["batches"] for r in timed["sluice_limited"]),
        "sluice_late_dropped": max(r["late_dropped"] for r in timed["sluice"] + timed["sluice_limited"]),
        "flink_late_dropped": max(r["late_dropped"] for r in timed["flink"]),
        "sluice_wrong_windows": max(r["wrong_windows"] for r in timed["sluice"] + timed["sluice_limited"]),
        # where each side's seconds go: Spark's phases of the triggers (the rest of a query's time
        # is its start and its end), and the part of a Flink job's seconds Flink counts as its run
        "sluice_durations_ms": {
            phase: statistics.median(r["durations_ms"].get(phase, 0) for r in timed["sluice"])
            for phase in timed["sluice"][0]["durations_ms"]
        },
        "flink_net_runtime_ms": statistics.median(r["net_runtime_ms"] for r in timed["flink"]),
        "all_runs": timed,
        "data": {
            "partitions": PARTITIONS,
            "max_drift_ms": drift_ms,
            "flink_update_interval_ms": UPDATE_MS,
            "watermark_delay_ms": DELAY_MS,
            "event_step_ms": step_ms,
            "sluice_limited_read_limit_per_batch": SKEW_LIMIT,
        },
    }


def _with_anchor(body: Callable[[SparkSession, EmbeddedKafka, FlinkAnchor], dict]) -> dict:
    spark = session("bench-flink-anchor")
    try:
        flink = FlinkAnchor()
        try:
            # the broker settings of kafka_throughput, the benchmark this one's raw side mirrors
            with broker() as kafka:
                return {**body(spark, kafka, flink), "flink_version": flink.version}
        finally:
            flink.close()
    finally:
        spark.stop()


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    pairs = pairs_from_env()

    def both(spark: SparkSession, kafka: EmbeddedKafka, flink: FlinkAnchor) -> dict:
        return {
            "raw": _raw(spark, kafka, flink, records, pairs),
            "aligned": _aligned(spark, kafka, flink, pairs),
        }

    sides = _with_anchor(both)
    raw, aligned = sides["raw"], sides["aligned"]
    result = {
        "benchmark": "flink_anchor",
        "raw_ratio": raw["raw_ratio"],
        "raw_ratio_min": raw["raw_ratio_min"],
        "raw_ratio_max": raw["raw_ratio_max"],
        "aligned_catchup_ratio": aligned["aligned_catchup_ratio"],
        "aligned_catchup_ratio_min": aligned["aligned_catchup_ratio_min"],
        "aligned_catchup_ratio_max": aligned["aligned_catchup_ratio_max"],
        "aligned_catchup_ratio_limited": aligned["aligned_catchup_ratio_limited"],
        "flink_late_dropped": aligned["flink_late_dropped"],
        "sluice_late_dropped": aligned["sluice_late_dropped"],
        "pairs": pairs,
        "raw": raw,
        "aligned": aligned,
        "machine": machine("local[2]", flink_parallelism=PARALLELISM),
    }
    result["machine"]["versions"]["flink"] = sides["flink_version"]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)}, indent=2))
    return result

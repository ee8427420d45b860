"""hybrid_switch: a files→Kafka hybrid read vs Spark's file source plus a separate Kafka query.

The data is one stream of events (`id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP`, one
event every STEP_MS of event time): the first three quarters as JSON-lines files, the following
quarter as JSON values in a Kafka topic of 8 partitions whose record timestamps are the event
times. SLUICE_BENCH_HYBRID_ROWS (default 2,000,000) sets the number of events in all; the files
are generated once into bench/scratch/hybrid_switch/ and reused while that number stays the same.

Two measures:

- End-to-end time (Trigger.AvailableNow into the no-op sink, no read limit on either side).
  Sluice: one hybrid query, files then Kafka from the files' last event time (margin 0).
  Spark: `spark.readStream.json(dir)`, then a separate `kafka` query with
  `from_json(CAST(value AS STRING), schema)`; its time is the sum of both. Interleaved pairs
  after one untimed warm-up each (bench/pairs.py); `ratio` is the median of the per-pair ratios.
- Switch latency: the hybrid query with a ProcessingTime trigger (SLUICE_BENCH_HYBRID_TRIGGER_MS,
  default 2000) and a read limit (bytes for the file source) so the file phase spans several
  batches (SLUICE_BENCH_HYBRID_LIMIT records per batch, default a sixth of the files' events).
  From the query progress: the start of the first batch that read Kafka rows
  (`activeSource` == "1") minus the end of the last batch that read file rows (its start +
  `durationMs.triggerExecution`). It should stay within one trigger interval. Median over
  SLUICE_BENCH_PAIRS runs (default 6), each with a fresh checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import FileSource, HybridSource, KafkaSource, OffsetsInitializer
from sluice.testing import EmbeddedKafka

from bench.common import broker, machine, rows_read, run_available_now, session
from bench.pairs import pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "hybrid_switch"
RESULT = ROOT / "results" / "hybrid_switch.json"
SCHEMA = "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP"
T0 = 1_700_000_000_000  # the first event's time (ms)
STEP_MS = 10  # one event every 10 ms of event time
FILES = 4
TOPIC = "events"
PARTITIONS = 8
FILE_FRACTION = 0.75  # the first 3/4 of the events are in files, the rest in Kafka


def event(i: int) -> dict:
    ts = datetime.fromtimestamp((T0 + i * STEP_MS) / 1000, tz=UTC)
    return {
        "id": i,
        "user": f"u{i % 97}",
        "amount": round(i * 0.01, 2),
        "ts": ts.isoformat(),
    }


def _files(total: int) -> tuple[Path, int, int]:
    """The files' directory, the events in files and their size in bytes; generated when missing."""
    in_files = int(total * FILE_FRACTION)
    marker = WORK / "meta.json"
    if marker.exists():
        meta = json.loads(marker.read_text())
        if meta == {
            "rows": in_files,
            "step_ms": STEP_MS,
            "files": FILES,
            "bytes": meta.get("bytes"),
        }:
            return WORK / "files", in_files, meta["bytes"]
    shutil.rmtree(WORK, ignore_errors=True)
    (WORK / "files").mkdir(parents=True)
    per_file = -(-in_files // FILES)
    for f in range(FILES):
        with open(WORK / "files" / f"events-{f}.json", "w", encoding="utf-8") as out:
            for i in range(f * per_file, min((f + 1) * per_file, in_files)):
                out.write(json.dumps(event(i)) + "\n")
    size = sum(p.stat().st_size for p in (WORK / "files").glob("*.json"))
    marker.write_text(json.dumps({"rows": in_files, "step_ms": STEP_MS, "files": FILES, "bytes": size}))
    return WORK / "files", in_files, size


def _produce(kafka: EmbeddedKafka, first: int, last: int) -> float:
    started = time.perf_counter()
    kafka.produce(
        TOPIC,
        (
            {
                "key": str(i),
                "value": json.dumps(event(i)),
                "partition": i % PARTITIONS,
                "timestamp": T0 + i * STEP_MS,
            }
            for i in range(first, last)
        ),
    )
    return time.perf_counter() - started


def _hybrid(files: Path, bootstrap: str) -> HybridSource:
    history = (
        FileSource.builder().path(str(files)).format("json").schema(SCHEMA).timestamp_column("ts").build()
    )
    live = (
        KafkaSource.builder()
        .bootstrap_servers(bootstrap)
        .topics(TOPIC)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("format", "json")
        .option("schema", SCHEMA)
        .build()
    )
    return HybridSource.builder(history).add_source(live, start_at_previous_end_minus=0).build()


def _per_source(progress: list[dict]) -> list[int]:
    """Sluice's cumulative records read per hybrid source, from the last batch's metrics."""
    return [int(n) for n in progress[-1]["sources"][0]["metrics"]["recordsPerSource"].split(",")]


def _ms(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


class Bench:
    def __init__(
        self,
        spark: SparkSession,
        files: Path,
        bootstrap: str,
        in_files: int,
        in_kafka: int,
    ) -> None:
        self.spark, self.files, self.bootstrap = spark, files, bootstrap
        self.in_files, self.in_kafka = in_files, in_kafka

    def sluice_once(self, tag: str) -> tuple[float, int]:
        df = sluice.from_source(self.spark, _hybrid(self.files, self.bootstrap), name="files+kafka")
        seconds, progress = run_available_now(df, WORK / f"ckpt-sluice-{tag}")
        rows, per_source = rows_read(progress), _per_source(progress)
        if rows != self.in_files + self.in_kafka or per_source != [
            self.in_files,
            self.in_kafka,
        ]:
            raise AssertionError(
                f"sluice read {rows} rows (per source {per_source}), "
                f"expected {self.in_files + self.in_kafka} ([{self.in_files}, {self.in_kafka}])"
            )
        return seconds, sum(1 for p in progress if p["numInputRows"] > 0)

    def spark_once(self, tag: str) -> tuple[float, float]:
        files_df = self.spark.readStream.schema(SCHEMA).json(str(self.files))
        files_seconds, progress = run_available_now(files_df, WORK / f"ckpt-spark-files-{tag}")
        if rows_read(progress) != self.in_files:
            raise AssertionError(
                f"spark's file source read {rows_read(progress)} rows, expected {self.in_files}"
            )
        kafka_df = (
            self.spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr(f"from_json(CAST(value AS STRING), '{SCHEMA}') AS e")
            .select("e.*")
        )
        kafka_seconds, progress = run_available_now(kafka_df, WORK / f"ckpt-spark-kafka-{tag}")
        if rows_read(progress) != self.in_kafka:
            raise AssertionError(
                f"spark's kafka source read {rows_read(progress)} rows, expected {self.in_kafka}"
            )
        return files_seconds, kafka_seconds

    def switch_once(self, tag: str, trigger_ms: int, limit: int, timeout_s: float) -> dict:
        checkpoint = WORK / f"ckpt-switch-{tag}"
        shutil.rmtree(checkpoint, ignore_errors=True)
        df = sluice.from_source(
            self.spark,
            _hybrid(self.files, self.bootstrap),
            name="files+kafka",
            options={"maxRecordsPerTrigger": limit},
        )
        expected = self.in_files + self.in_kafka
        query = (
            df.writeStream.format("noop")
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime=f"{trigger_ms} milliseconds")
            .start()
        )
        deadline = time.monotonic() + timeout_s
        try:
            while rows_read(query.recentProgress) < expected:
                if query.exception() is not None:
                    raise RuntimeError(str(query.exception()))
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"switch run {tag}: {rows_read(query.recentProgress)} of {expected} rows after {timeout_s:.0f} s"
                    )
                time.sleep(0.2)
        finally:
            query.stop()
        progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
        if rows_read(progress) != expected or _per_source(progress) != [
            self.in_files,
            self.in_kafka,
        ]:
            raise AssertionError(
                f"switch run {tag}: read {rows_read(progress)} rows (per source {_per_source(progress)}), "
                f"expected {expected} ([{self.in_files}, {self.in_kafka}])"
            )
        active = [p["sources"][0]["metrics"]["activeSource"] for p in progress]
        file_batches = [p for p, a in zip(progress, active, strict=False) if a == "0"]
        kafka_batches = [p for p, a in zip(progress, active, strict=False) if a == "1"]
        if not file_batches or not kafka_batches:
            raise AssertionError(
                f"switch run {tag}: active sources per batch {active}, expected files then kafka"
            )
        last_file, first_kafka = file_batches[-1], kafka_batches[0]
        last_file_end = _ms(last_file["timestamp"]) + last_file["durationMs"]["triggerExecution"]
        first_kafka_start = _ms(first_kafka["timestamp"])
        latency = first_kafka_start - last_file_end
        return {
            "switch_latency_ms": latency,
            "within_one_trigger": latency <= trigger_ms,
            "last_file_batch": last_file["batchId"],
            "first_kafka_batch": first_kafka["batchId"],
            # the first Kafka batch's own time (it plans the switch: the offsets by timestamp lookup)
            "first_kafka_batch_ms": first_kafka["durationMs"]["triggerExecution"],
            "first_kafka_batch_latest_offset_ms": first_kafka["durationMs"].get("latestOffset"),
            "file_batches": len(file_batches),
            "kafka_batches": len(kafka_batches),
            "file_batch_ms": [p["durationMs"]["triggerExecution"] for p in file_batches],
            "rows_per_batch": [p["numInputRows"] for p in progress],
            "batch_ids_with_rows": [p["batchId"] for p in progress],
        }


def run() -> dict:
    total = int(os.environ.get("SLUICE_BENCH_HYBRID_ROWS", "2000000"))
    runs = pairs_from_env()
    trigger_ms = int(os.environ.get("SLUICE_BENCH_HYBRID_TRIGGER_MS", "2000"))
    files, in_files, size = _files(total)
    in_kafka = total - in_files
    # the file phase of the switch runs spans about six batches (a limit in records; the file source
    # converts it to bytes with the bytes per record it has seen)
    limit = int(os.environ.get("SLUICE_BENCH_HYBRID_LIMIT", str(max(1, in_files // 6 + 1))))
    with broker() as kafka:
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        print(
            f"hybrid_switch: {in_files:,} events in {FILES} JSON files ({size / 1024**2:.0f} MiB), "
            f"producing {in_kafka:,} into Kafka ({PARTITIONS} partitions)"
        )
        produce_seconds = _produce(kafka, in_files, total)
        print(f"  produced in {produce_seconds:.1f} s ({in_kafka / produce_seconds:,.0f} records/s)")
        spark = session("bench-hybrid-switch", spark_kafka=True)
        bench = Bench(spark, files, kafka.bootstrap_servers, in_files, in_kafka)
        try:
            bench.spark_once("warm")  # warm-up: class loading, JIT, consumer pools, file cache
            bench.sluice_once("warm")
            sluice_s, sluice_batches, spark_s, spark_files_s, spark_kafka_s = (
                [],
                [],
                [],
                [],
                [],
            )
            for i in range(runs):
                # the order alternates, so neither side always runs first (bench/pairs.py)
                for side in ("spark", "sluice") if i % 2 == 0 else ("sluice", "spark"):
                    if side == "spark":
                        f, k = bench.spark_once(str(i))
                        spark_files_s.append(f)
                        spark_kafka_s.append(k)
                        spark_s.append(f + k)
                        print(f"  run {i + 1}: spark  {f + k:6.1f} s (files {f:.1f} s + kafka {k:.1f} s)")
                    else:
                        s, batches = bench.sluice_once(str(i))
                        sluice_s.append(s)
                        sluice_batches.append(batches)
                        print(
                            f"  run {i + 1}: sluice {s:6.1f} s (one hybrid query, {batches} batches with rows)"
                        )
            switches = []
            timeout = 300 + 10 * total / 100_000
            for i in range(runs):
                sw = bench.switch_once(str(i), trigger_ms, limit, timeout)
                switches.append(sw)
                print(
                    f"  switch {i + 1}: {sw['switch_latency_ms']:6.0f} ms from the end of file batch "
                    f"{sw['last_file_batch']} to the start of Kafka batch {sw['first_kafka_batch']} "
                    f"({sw['file_batches']} file + {sw['kafka_batches']} Kafka batches; "
                    f"within one {trigger_ms} ms trigger: {sw['within_one_trigger']})"
                )
        finally:
            spark.stop()
    latency = statistics.median(s["switch_latency_ms"] for s in switches)
    result = {
        "benchmark": "hybrid_switch",
        "sluice_seconds": statistics.median(sluice_s),
        "spark_seconds": statistics.median(spark_s),
        "switch_latency_ms": latency,
        "trigger_interval_ms": trigger_ms,
        "within_one_trigger": latency <= trigger_ms,
        "all_within_one_trigger": all(s["within_one_trigger"] for s in switches),
        # records/s ratio Sluice / Spark = Spark's seconds / Sluice's, per pair
        **summary("ratio", spark_s, sluice_s),
        "rows": {"total": total, "files": in_files, "kafka": in_kafka},
        "data": {
            "files": FILES,
            "file_bytes": size,
            "kafka_partitions": PARTITIONS,
            "event_step_ms": STEP_MS,
        },
        "pairs": runs,
        "switch_read_limit": limit,
        "kafka_produce_seconds": produce_seconds,
        "all_runs": {
            "sluice_seconds": sluice_s,
            "sluice_batches": sluice_batches,
            "spark_seconds": spark_s,
            "spark_files_seconds": spark_files_s,
            "spark_kafka_seconds": spark_kafka_s,
            "switch": switches,
        },
        "machine": machine("local[2]"),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print("| benchmark | Spark s (files + kafka) | Sluice s (hybrid) | switch latency ms | trigger ms |")
    print("|---|---|---|---|---|")
    print(
        f"| hybrid_switch | {result['spark_seconds']:.1f} | {result['sluice_seconds']:.1f} | "
        f"{latency:.0f} | {trigger_ms} ({'within' if result['within_one_trigger'] else 'NOT within'} one trigger) |"
    )
    return result

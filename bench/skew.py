"""skew: a skewed Kafka catch-up into 1-minute window counts, Spark's Kafka source vs aligned Sluice.

The data: a topic of 8 partitions, one event per SKEW_STEP_MS of event time per partition
(default 1 s), the record timestamp being the event time. Partition 0's backlog starts 24 hours
before the end, the seven others' 2 hours before it (the catch-up after an outage). Both sides
read it with Trigger.AvailableNow and the same per-batch read limit (SLUICE_BENCH_SKEW_LIMIT,
default 10,000 records) into
`withWatermark("event_time", "10 minutes").groupBy(window("event_time", "1 minute")).count()`
(update mode, memory sink). Sluice aligns the partitions with a 5-minute maximum drift.

Spark and Sluice run as interleaved rounds after a warm-up each (bench/pairs.py,
SLUICE_BENCH_PAIRS rounds). Reported: rows dropped as late (`numRowsDroppedByWatermark`), windows
whose final count is wrong (missing or short) and the peak state rows (`numRowsTotal`), each the
worst of the timed rounds; the median wall time and records per second, and `rps_ratio`, the
median of the per-round ratios of records per second (Sluice / Spark).

Alignment overhead on unskewed data: 3,000,000 records of 100 B written round-robin over 8
partitions with increasing timestamps (SLUICE_BENCH_SKEW_EVEN_ROWS), read into the no-op sink
with `forMonotonousTimestamps()` once with alignment and once without, with a read limit of
200,000 records per batch. After two warm-ups of each, SLUICE_BENCH_PAIRS interleaved rounds; `overhead_pct` = how much slower (in records/s) the aligned read is: 100 × (1 − the median
of the per-pair ratios aligned / unaligned), with the lowest and highest pair alongside, and each
side's batches and Spark's phases (`durationMs`, summed over a run's batches; medians of the timed
runs) in `phases_ms`.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import KafkaSource, OffsetsInitializer, WatermarkStrategy
from sluice.testing import EmbeddedKafka

from bench.common import broker, durations_ms, machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

RESULT = Path(__file__).resolve().parent / "results" / "skew.json"
MINUTE = 60_000
END = 1_700_000_000_000 // (60 * MINUTE) * (60 * MINUTE)  # the backlog's end, on the hour
PARTITIONS = 8
DRIFT = timedelta(minutes=5)


def skewed_events(step_ms: int) -> list[tuple[int, int]]:
    """(partition, timestamp) of every event, in production order."""
    events = []
    for p in range(PARTITIONS):
        hours = 24 if p == 0 else 2
        count = hours * 60 * MINUTE // step_ms
        events.extend((p, END - (count - i) * step_ms) for i in range(count))
    return events


def expected_windows(events: list[tuple[int, int]]) -> dict[int, int]:
    counts: dict[int, int] = {}
    for _, ts in events:
        window = ts // MINUTE * MINUTE
        counts[window] = counts.get(window, 0) + 1
    return counts


def window_counts(spark: SparkSession, df: DataFrame, table: str, expected: dict[int, int]) -> dict:
    counts = df.withWatermark("event_time", "10 minutes").groupBy(F.window("event_time", "1 minute")).count()
    seconds, progress = run_available_now(
        counts, sink=lambda w: w.format("memory").queryName(table).outputMode("update")
    )
    final: dict[int, int] = {}
    for row in spark.table(table).collect():
        start = int(row.window.start.timestamp() * 1000)
        final[start] = max(final.get(start, 0), row["count"])
    rows = rows_read(progress)
    return {
        "late_dropped": sum(op["numRowsDroppedByWatermark"] for p in progress for op in p["stateOperators"]),
        "wrong_windows": sum(1 for w, n in expected.items() if final.get(w) != n),
        "peak_state_rows": max(
            (sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in progress),
            default=0,
        ),
        "rows": rows,
        "batches": sum(1 for p in progress if p["numInputRows"] > 0),
        "seconds": seconds,
        "records_per_second": rows / seconds,
        "durations_ms": durations_ms(progress),
    }


def sluice_kafka(
    spark: SparkSession,
    bootstrap: str,
    topic: str,
    strategy: WatermarkStrategy,
    limit: int | None,
) -> DataFrame:
    """Sluice's Kafka source over `topic` from its earliest offsets; `limit` records per batch at most
    (None: only what alignment admits)."""
    source = (
        KafkaSource.builder()
        .bootstrap_servers(bootstrap)
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("groupIdPrefix", "bench")  # a group id per run: cold consumers, as Spark's queries
        .build()
    )
    options = None if limit is None else {"maxRecordsPerTrigger": limit}
    return sluice.from_source(spark, source, strategy, name=topic, options=options)


def _overhead(spark: SparkSession, kafka: EmbeddedKafka, rows: int, runs: int) -> dict:
    topic = "even"
    kafka.create_topic(topic, PARTITIONS)
    kafka.produce_generated(topic, rows, 100, END)
    if sum(kafka.end_offsets(topic).values()) != rows:
        raise AssertionError(f"the broker holds {kafka.end_offsets(topic)}, not {rows} records")
    plain = WatermarkStrategy.for_monotonous_timestamps()
    aligned = plain.with_watermark_alignment("even", max_drift=DRIFT)

    # each run's batches and Spark's phases (durationMs summed over its batches): where the
    # aligned read's extra time goes; the warm-ups come first in each list
    phases: dict[str, list[dict]] = {"unaligned": [], "aligned": []}

    def once(name: str, strategy: WatermarkStrategy) -> float:
        seconds, progress = run_available_now(
            sluice_kafka(spark, kafka.bootstrap_servers, topic, strategy, 200_000)
        )
        if rows_read(progress) != rows:
            raise AssertionError(f"read {rows_read(progress)} rows, expected {rows}")
        phases[name].append({"batches": len(progress), **durations_ms(progress)})
        return rows / seconds

    measured = interleaved(
        {"unaligned": partial(once, "unaligned", plain), "aligned": partial(once, "aligned", aligned)},
        runs,
        warmups=2,
        label="overhead ",
    )
    off, on = measured["unaligned"], measured["aligned"]
    overheads = [(1 - a / b) * 100 for a, b in zip(on, off, strict=True)]

    def median_phases(name: str) -> dict[str, float]:
        timed = phases[name][-runs:]
        return {k: statistics.median(r.get(k, 0) for r in timed) for k in timed[0]}

    return {
        "phases_ms": {name: median_phases(name) for name in phases},
        "rows": rows,
        "without_alignment_rps": statistics.median(off),
        "with_alignment_rps": statistics.median(on),
        "overhead_pct": statistics.median(overheads),
        "overhead_pct_min": min(overheads),
        "overhead_pct_max": max(overheads),
        "pairs": runs,
        "all_runs": {
            "without_alignment_rps": off,
            "with_alignment_rps": on,
            "overhead_pct": overheads,
        },
    }


def _worst(runs: list[dict]) -> dict:
    """The worst of a side's timed runs (most rows dropped, most windows wrong, largest state)."""
    worst = max(
        runs,
        key=lambda r: (r["late_dropped"], r["wrong_windows"], r["peak_state_rows"]),
    )
    return {
        **worst,
        "records_per_second": statistics.median(r["records_per_second"] for r in runs),
        "seconds": statistics.median(r["seconds"] for r in runs),
    }


def run() -> dict:
    step_ms = int(os.environ.get("SLUICE_BENCH_SKEW_STEP_MS", "1000"))
    limit = int(os.environ.get("SLUICE_BENCH_SKEW_LIMIT", "10000"))
    even_rows = int(os.environ.get("SLUICE_BENCH_SKEW_EVEN_ROWS", "3000000"))
    pairs = pairs_from_env()
    spark = session("bench-skew", spark_kafka=True)
    with broker() as kafka:
        topic = "skewed"
        kafka.create_topic(topic, PARTITIONS)
        events = skewed_events(step_ms)
        kafka.produce(
            topic,
            ({"value": f"{p}-{ts}", "partition": p, "timestamp": ts} for p, ts in events),
        )
        expected = expected_windows(events)

        theirs_df = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", limit)
            .load()
            .withColumn("event_time", F.col("timestamp"))
        )
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
            "skew", max_drift=DRIFT
        )
        ours_df = sluice_kafka(spark, kafka.bootstrap_servers, topic, strategy, limit)
        every_run: dict[str, list[dict]] = {"spark": [], "sluice": []}

        def side(name: str, df: DataFrame) -> Callable[[], float]:
            def once() -> float:
                table = f"skew_{name}_{len(every_run[name])}"
                counted = window_counts(spark, df, table, expected)
                every_run[name].append(counted)
                return counted["records_per_second"]

            return once

        measured = interleaved(
            {"spark": side("spark", theirs_df), "sluice": side("sluice", ours_df)},
            pairs,
        )
        # the warm-up runs come first in every_run; the figures are the timed rounds'
        theirs_runs, ours_runs = (every_run[s][-pairs:] for s in ("spark", "sluice"))
        theirs, ours = (_worst(r) for r in (theirs_runs, ours_runs))
        overhead = _overhead(spark, kafka, even_rows, pairs)
    spark.stop()

    result = {
        "benchmark": "skew",
        "spark_late_dropped": theirs["late_dropped"],
        "sluice_late_dropped": ours["late_dropped"],
        "spark_wrong_windows": theirs["wrong_windows"],
        "sluice_wrong_windows": ours["wrong_windows"],
        "spark_peak_state_rows": theirs["peak_state_rows"],
        "sluice_peak_state_rows": ours["peak_state_rows"],
        "overhead_pct": overhead["overhead_pct"],
        "spark_records_per_second": statistics.median(measured["spark"]),
        "sluice_records_per_second": statistics.median(measured["sluice"]),
        **summary("rps_ratio", measured["sluice"], measured["spark"]),
        "pairs": pairs,
        "windows": len(expected),
        "spark": theirs,
        "sluice": ours,
        "all_runs": {"spark": theirs_runs, "sluice": ours_runs},
        "alignment_overhead": overhead,
        "machine": machine("local[2]"),
        "data": {
            "partitions": PARTITIONS,
            "events": len(events),
            "event_step_ms": step_ms,
            "read_limit_per_batch": limit,
            "max_drift_ms": int(DRIFT.total_seconds() * 1000),
            "watermark_delay": "10 minutes",
        },
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict)}, indent=2))
    return result

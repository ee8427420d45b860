"""group_join: a stream-stream join of two Kafka topics, Spark's Kafka source vs one Sluice alignment group.

The data: two topics, `left` and `right`, of SLUICE_BENCH_GROUP_JOIN_PARTITIONS partitions each
(default 4), holding the same SLUICE_BENCH_GROUP_JOIN_HOURS (default 12) hours of event time; the
record timestamp is the event time. Every partition of `left` holds one event per
SLUICE_BENCH_GROUP_JOIN_LEFT_STEP_MS (default 4,000 ms), every partition of `right` one per
SLUICE_BENCH_GROUP_JOIN_RIGHT_STEP_MS (default 1,000 ms): `right` is four times denser (defaults:
43,200 and 172,800 events). The events of a topic are numbered in event-time order; event n goes
to partition n mod partitions and has the key n mod SLUICE_BENCH_GROUP_JOIN_KEYS (default 100),
the value being "<key>:<n>".

The query, on both sides: key and event time of each topic, `withWatermark(<time>, "10 minutes")`
on both, an inner join on the key with
`right_time BETWEEN left_time - INTERVAL 1 MINUTE AND left_time + INTERVAL 1 MINUTE`, append mode,
into the no-op sink under Trigger.AvailableNow, with the same read limit per source and batch
(SLUICE_BENCH_GROUP_JOIN_LIMIT, default 2,000 records).

- Spark: `spark.readStream.format("kafka")` per topic, `maxOffsetsPerTrigger` = the limit, event
  time = the `timestamp` column, unaligned.
- Sluice: a `KafkaSource` per topic, both read with
  `forMonotonousTimestamps().with_watermark_alignment("join", 5 minutes)` (one group),
  `maxRecordsPerTrigger` = the limit, event time = `event_time`.

After one untimed warm-up run of each, Spark and Sluice run as SLUICE_BENCH_PAIRS (default 6)
interleaved pairs, the order alternating (bench/pairs.py). Reported: the median wall times, `time_ratio` = the median of the per-pair
ratios sluice / spark (and their min and max), the peak state rows (max over batches of the sum of
`stateOperators[].numRowsTotal`) and `state_ratio` = sluice / spark, rows dropped as late
(`numRowsDroppedByWatermark`), batches, and `sluice_empty_member_batches`: (batch, source) pairs
in which a Sluice source that still had data to read (the first batch, or `backlogRecords` > 0 in
the previous batch's progress; an unfinished split where that metric is missing) read nothing.
Peak state, drops, batches and empty member batches are the largest over the timed runs (every
run is in `all_runs`, the first timed run's batches in `per_batch`). The joined rows (the sink's
`numOutputRows`) of every run are checked against the count computed from the generated data.
"""

from __future__ import annotations

import bisect
import json
import os
import statistics
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import KafkaSource, OffsetsInitializer, WatermarkStrategy

from bench.common import broker, machine, rows_read, run_available_now, session
from bench.pairs import pairs_from_env

RESULT = Path(__file__).resolve().parent / "results" / "group_join.json"
MINUTE = 60_000
HOUR = 60 * MINUTE
END = 1_700_000_000_000 // HOUR * HOUR  # the data's end, on the hour
DRIFT = timedelta(minutes=5)
GROUP = "join"
WATERMARK_DELAY = "10 minutes"
RANGE_MS = MINUTE  # right_time within ±1 minute of left_time
TOPICS = ("left", "right")


def _env(name: str, default: int) -> int:
    return int(os.environ.get(f"SLUICE_BENCH_GROUP_JOIN_{name}", str(default)))


def _events(hours: int, step_ms: int, partitions: int, keys: int) -> list[tuple[int, int, int]]:
    """(n, key, timestamp) of a topic's events, in event-time order; event n goes to partition
    n mod partitions, so each partition holds one event per step_ms."""
    count = hours * HOUR // step_ms * partitions
    start = END - hours * HOUR
    return [(n, n % keys, start + n * step_ms // partitions) for n in range(count)]


def _expected_joins(left: list[tuple[int, int, int]], right: list[tuple[int, int, int]]) -> int:
    """Joined rows: pairs of one key with |right time - left time| <= 1 minute."""
    by_key: dict[int, list[int]] = {}
    for _, key, ts in right:
        by_key.setdefault(key, []).append(ts)
    for times in by_key.values():
        times.sort()
    joins = 0
    for _, key, ts in left:
        times = by_key.get(key, [])
        joins += bisect.bisect_right(times, ts + RANGE_MS) - bisect.bisect_left(times, ts - RANGE_MS)
    return joins


def _keyed(df: DataFrame, side: str, time_column: str) -> DataFrame:
    """`<side>_key`, `<side>_time` with the watermark; the key parsed from the value."""
    return df.select(
        F.split(F.col("value").cast("string"), ":").getItem(0).cast("int").alias(f"{side}_key"),
        F.col(time_column).alias(f"{side}_time"),
    ).withWatermark(f"{side}_time", WATERMARK_DELAY)


def _join(left: DataFrame, right: DataFrame) -> DataFrame:
    return left.join(
        right,
        F.expr(
            "right_key = left_key AND right_time BETWEEN left_time - INTERVAL 1 MINUTE "
            "AND left_time + INTERVAL 1 MINUTE"
        ),
        "inner",
    )


def _spark_query(spark: SparkSession, bootstrap: str, limit: int) -> DataFrame:
    def topic(name: str) -> DataFrame:
        df = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", name)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", limit)
            .load()
        )
        return _keyed(df, name, "timestamp")

    return _join(topic("left"), topic("right"))


def _sluice_query(spark: SparkSession, bootstrap: str, limit: int) -> DataFrame:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(GROUP, max_drift=DRIFT)

    def topic(name: str) -> DataFrame:
        source = (
            KafkaSource.builder()
            .bootstrap_servers(bootstrap)
            .topics(name)
            .starting_offsets(OffsetsInitializer.earliest())
            .build()
        )
        df = sluice.from_source(
            spark,
            source,
            strategy,
            name=name,
            options={"maxRecordsPerTrigger": limit},
        )
        return _keyed(df, name, "event_time")

    return _join(topic("left"), topic("right"))


def _source_name(source: dict) -> str:
    """`left` or `right` for a source of either side's progress."""
    metrics = source.get("metrics") or {}
    if "source" in metrics:
        return metrics["source"]
    description = source.get("description", "")
    for name in TOPICS:  # KafkaV2[Subscribe[left]], or a name in brackets
        if f"[Subscribe[{name}]]" in description or f"[{name}]" in description:
            return name
    return description


def _had_data(previous: dict | None) -> bool:
    """Whether a Sluice source still had data to read after the batch whose progress this is.

    `backlogRecords` decides where the progress has it: a split's `finished` flag turns true one
    batch after the batch that read its last record, so it would count the closing no-data batch
    (run by Spark only to advance the watermark) as a member left without rows. Unfinished splits
    decide only for a progress without a backlog."""
    if previous is None:
        return True  # the first batch: both topics hold data
    metrics = previous.get("metrics") or {}
    if "backlogRecords" in metrics:
        return int(metrics["backlogRecords"]) > 0
    splits = json.loads(metrics.get("watermark.splits", "[]"))
    return any(not s.get("finished", False) for s in splits)


def _summary(progress: list[dict], seconds: float, sluice_side: bool) -> dict:
    records = rows_read(progress)
    batches = []
    empty_member = 0
    previous: dict[str, dict] = {}
    for i, p in enumerate(progress):
        sources = {_source_name(s): s for s in p["sources"]}
        batch = {
            "batch": p["batchId"],
            "rows": {name: s["numInputRows"] for name, s in sources.items()},
            "state_rows": sum(op["numRowsTotal"] for op in p["stateOperators"]),
            "dropped": sum(op["numRowsDroppedByWatermark"] for op in p["stateOperators"]),
            "output_rows": p["sink"].get("numOutputRows", -1),
            "duration_ms": p["durationMs"].get("triggerExecution", 0),
            "phases_ms": {k: v for k, v in p["durationMs"].items() if k != "triggerExecution"},
        }
        if sluice_side:
            batch["backlog"] = {
                name: int((s.get("metrics") or {}).get("backlogRecords", "0")) for name, s in sources.items()
            }
            batch["alignment_mode"] = {
                name: (s.get("metrics") or {}).get("alignment.mode", "") for name, s in sources.items()
            }
            empty = [
                name
                for name, s in sources.items()
                if s["numInputRows"] == 0 and _had_data(previous.get(name) if i > 0 else None)
            ]
            batch["empty_members"] = empty
            empty_member += len(empty)
        batches.append(batch)
        previous = sources
    output = [b["output_rows"] for b in batches]
    return {
        "seconds": seconds,
        "records": records,
        "records_per_second": records / seconds,
        "joined_rows": sum(output),
        "peak_state_rows": max((b["state_rows"] for b in batches), default=0),
        "late_dropped": sum(b["dropped"] for b in batches),
        "batches": len(batches),
        "batches_with_data": sum(1 for p in progress if p["numInputRows"] > 0),
        "last_batch_id": progress[-1]["batchId"] if progress else None,
        "empty_member_batches": empty_member if sluice_side else None,
        "per_batch": batches,
    }


def _once(make: Callable[[], DataFrame], records: int, side: str) -> dict:
    seconds, progress = run_available_now(make())
    summary = _summary(progress, seconds, side == "sluice")
    if summary["last_batch_id"] is not None and summary["batches"] != (summary["last_batch_id"] + 1):
        raise AssertionError(
            f"{side}: {summary['batches']} progress entries for batches 0..{summary['last_batch_id']}"
            " (raise spark.sql.streaming.numRecentProgressUpdates)"
        )
    if any(b["output_rows"] < 0 for b in summary["per_batch"]):
        raise AssertionError(f"{side}: the sink did not report numOutputRows")
    if summary["records"] != records:
        raise AssertionError(f"{side} read {summary['records']} records, expected {records}")
    return summary


def run() -> dict:
    hours = _env("HOURS", 12)
    partitions = _env("PARTITIONS", 4)
    left_step = _env("LEFT_STEP_MS", 4000)
    right_step = _env("RIGHT_STEP_MS", 1000)
    keys = _env("KEYS", 100)
    limit = _env("LIMIT", 2000)
    runs = pairs_from_env()

    data = {
        "left": _events(hours, left_step, partitions, keys),
        "right": _events(hours, right_step, partitions, keys),
    }
    records = sum(len(events) for events in data.values())
    expected = _expected_joins(data["left"], data["right"])
    print(
        f"group_join: {len(data['left']):,} left and {len(data['right']):,} right events over "
        f"{hours} h, {partitions} partitions each, {keys} keys; {expected:,} joined rows expected"
    )

    spark = session("bench-group-join", spark_kafka=True)
    # every batch's progress is needed (Spark keeps the last 100 by default)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    sides: dict[str, list[dict]] = {"spark": [], "sluice": []}
    try:
        with broker() as kafka:
            for name, events in data.items():
                kafka.create_topic(name, partitions)
                kafka.produce(
                    name,
                    (
                        {
                            "value": f"{key}:{n}",
                            "partition": n % partitions,
                            "timestamp": ts,
                        }
                        for n, key, ts in events
                    ),
                )
                held = sum(kafka.end_offsets(name).values())
                if held != len(events):
                    raise AssertionError(f"the broker holds {held} records of {name}, not {len(events)}")
            bootstrap = kafka.bootstrap_servers
            queries = {
                "spark": lambda: _spark_query(spark, bootstrap, limit),
                "sluice": lambda: _sluice_query(spark, bootstrap, limit),
            }
            for side in ("spark", "sluice"):  # warm-up
                warm = _once(queries[side], records, side)
                print(f"  warm-up {side:<7} {warm['seconds']:6.1f} s")
            for i in range(runs):
                # the order alternates, so neither side always runs first (bench/pairs.py)
                for side in ("spark", "sluice") if i % 2 == 0 else ("sluice", "spark"):
                    summary = _once(queries[side], records, side)
                    sides[side].append(summary)
                    extra = (
                        f", empty member batches {summary['empty_member_batches']}"
                        if side == "sluice"
                        else ""
                    )
                    print(
                        f"  run {i + 1}: {side:<7} {summary['seconds']:6.1f} s, "
                        f"{summary['batches']} batches, peak state {summary['peak_state_rows']:,} rows, "
                        f"{summary['late_dropped']} dropped, {summary['joined_rows']} joined{extra}"
                    )
    finally:
        spark.stop()

    spark_runs, sluice_runs = sides["spark"], sides["sluice"]
    ratios = [
        ours["seconds"] / theirs["seconds"] for theirs, ours in zip(spark_runs, sluice_runs, strict=True)
    ]

    def worst(runs_: list[dict], key: str) -> int:
        return max(r[key] for r in runs_)

    spark_peak = worst(spark_runs, "peak_state_rows")
    sluice_peak = worst(sluice_runs, "peak_state_rows")
    spark_joined = [r["joined_rows"] for r in spark_runs]
    sluice_joined = [r["joined_rows"] for r in sluice_runs]
    result = {
        "benchmark": "group_join",
        "spark_seconds": statistics.median(r["seconds"] for r in spark_runs),
        "sluice_seconds": statistics.median(r["seconds"] for r in sluice_runs),
        "time_ratio": statistics.median(ratios),
        "time_ratio_min": min(ratios),
        "time_ratio_max": max(ratios),
        "spark_peak_state_rows": spark_peak,
        "sluice_peak_state_rows": sluice_peak,
        "state_ratio": sluice_peak / spark_peak if spark_peak else None,
        "spark_late_dropped": worst(spark_runs, "late_dropped"),
        "sluice_late_dropped": worst(sluice_runs, "late_dropped"),
        "spark_batches": worst(spark_runs, "batches"),
        "sluice_batches": worst(sluice_runs, "batches"),
        "sluice_empty_member_batches": worst(sluice_runs, "empty_member_batches"),
        "spark_rps": statistics.median(r["records_per_second"] for r in spark_runs),
        "sluice_rps": statistics.median(r["records_per_second"] for r in sluice_runs),
        "expected_joined_rows": expected,
        "spark_joined_rows": min(spark_joined),
        "sluice_joined_rows": min(sluice_joined),
        "joined_rows_equal": len(set(spark_joined + sluice_joined)) == 1,
        "spark_complete": all(n == expected for n in spark_joined),
        "sluice_complete": all(n == expected for n in sluice_joined),
        "data": {
            "hours": hours,
            "partitions": partitions,
            "keys": keys,
            "left_step_ms_per_partition": left_step,
            "right_step_ms_per_partition": right_step,
            "left_events": len(data["left"]),
            "right_events": len(data["right"]),
            "records": records,
            "read_limit_per_source": limit,
            "max_drift_ms": int(DRIFT.total_seconds() * 1000),
            "watermark_delay": WATERMARK_DELAY,
            "join_range_ms": RANGE_MS,
        },
        "runs": runs,
        "all_runs": {
            "time_ratio": ratios,
            **{
                f"{side}_{key}": [r[key] for r in sides[side]]
                for side in ("spark", "sluice")
                for key in (
                    "seconds",
                    "peak_state_rows",
                    "late_dropped",
                    "batches",
                    "joined_rows",
                )
            },
            "sluice_empty_member_batches": [r["empty_member_batches"] for r in sluice_runs],
        },
        # the batches of the first timed run of each side
        "per_batch": {
            "spark": spark_runs[0]["per_batch"],
            "sluice": sluice_runs[0]["per_batch"],
        },
        "machine": machine("local[2]"),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(
        "| benchmark | Spark s | Sluice s | time ratio (min–max) | peak state Spark / Sluice (ratio) "
        "| late dropped Spark / Sluice | batches Spark / Sluice | empty member batches |"
    )
    print("|---|---|---|---|---|---|---|---|")
    state_ratio = result["state_ratio"]
    print(
        f"| group_join | {result['spark_seconds']:.1f} | {result['sluice_seconds']:.1f} | "
        f"{result['time_ratio']:.2f} ({result['time_ratio_min']:.2f}–{result['time_ratio_max']:.2f}) | "
        f"{spark_peak:,} / {sluice_peak:,} "
        f"({'n/a' if state_ratio is None else f'{state_ratio:.2f}'}) | "
        f"{result['spark_late_dropped']:,} / {result['sluice_late_dropped']:,} | "
        f"{result['spark_batches']} / {result['sluice_batches']} | "
        f"{result['sluice_empty_member_batches']} |"
    )
    if not result["joined_rows_equal"]:
        raise AssertionError(
            f"joined rows differ: Spark {spark_joined}, Sluice {sluice_joined}, "
            f"expected {expected} (the result file records them)"
        )
    return result

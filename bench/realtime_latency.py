"""realtime_latency: per-record latency in real-time mode, Spark's `kafka` source vs Sluice.

A producer inside the embedded broker writes SLUICE_BENCH_RT_RATE records a second (default
5,000) for SLUICE_BENCH_RT_SECONDS (default 60) to a topic of 8 partitions; each record's value is
its send time, its timestamp the send time. The query runs in real-time mode
(`Trigger.RealTime`, batches of SLUICE_BENCH_RT_BATCH, default "20 seconds"), stateless, into a
foreach sink in the JVM (`sluice.bench.LatencySink`, jvm/benchkit) that takes, per record,
`arrival in the sink - send time` with the wall clock. Each side reads a fresh topic from its
start while the producer writes it; the producer starts 3 s before the query (so that every
split has a first record to place in event time when the first batch is planned), and only
records sent from 5 s after the query's start on count: the latency of a running query, not
how long a query takes to start.

- spark: `format("kafka")`, `startingOffsets` earliest.
- sluice: `KafkaSource`, starting offsets earliest, no watermark strategy.
- aligned: two Sluice `KafkaSource`s in one alignment group (maxDrift 1 minute, updateInterval
  1 s), unioned; the second topic is produced with event times 30 minutes behind (timestamp
  shift -30 min). The group's limit follows the lagging topic, so the topic ahead is held back
  (paused inside the running tasks) and its records wait; `aligned_p99_ms` is over the records
  that flow, `observed_max_drift_ms` the largest watermark spread between splits that read
  (constraining, not paused) that the coordinator saw after each split's first answer
  (`liveMaxObservedDriftMs`), to compare with `max_drift_ms` plus the event time one update
  interval admits (1 s here, as event time follows the wall clock).

- continuous: the unaligned Sluice source under `Trigger.Continuous("1 second")` instead.

After one short warm-up of each side, SLUICE_BENCH_PAIRS (default 6) rounds run spark, sluice,
aligned and continuous in turn; the figures are medians over the rounds, `p99_ratio` = the median of the
per-round ratios sluice / spark p99 (with min and max).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from sluice import KafkaSource, OffsetsInitializer, WatermarkStrategy

from bench.common import broker, machine, session
from bench.pairs import pairs_from_env, round_order

RESULT = Path(__file__).resolve().parent / "results" / "realtime_latency.json"
PARTITIONS = 8
MAX_DRIFT_MS = 60_000
UPDATE_INTERVAL_MS = 1_000
LAG_MS = 30 * 60_000
MASTER = "local[16]"
LEAD_SECONDS = 3
CONTINUOUS_INTERVAL = "1 second"
STARTUP_EXCLUDED_MS = 5_000
KINDS = ("spark", "sluice", "aligned", "continuous")


def _kafka(spark: SparkSession, servers: str, topic: str) -> DataFrame:
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def _sluice(spark: SparkSession, servers: str, topic: str, aligned: bool) -> DataFrame:
    source = (
        KafkaSource.builder()
        .bootstrap_servers(servers)
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .build()
    )
    strategy = (
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
            "latency", MAX_DRIFT_MS, UPDATE_INTERVAL_MS
        )
        if aligned
        else None
    )
    return sluice.from_source(spark, source, strategy, topic)


def _run(
    spark: SparkSession, df: DataFrame, run: str, seconds: int, batch: str, continuous: bool = False
) -> dict:
    """Runs `df` in real-time mode (or continuous processing) into the latency sink for
    `seconds`; the sink's percentiles."""
    jvm = spark._jvm
    sink = jvm.sluice.bench.LatencySink
    sink.reset(run)
    checkpoint = tempfile.mkdtemp(prefix=f"bench-rt-{run.replace(' ', '-')}-")
    # what was sent before the query ran steadily (its start: planning, the first tasks) waits for
    # it by design and is not a per-record latency
    steady_from_ms = int(time.time() * 1000) + STARTUP_EXCLUDED_MS
    triggers = jvm.org.apache.spark.sql.streaming.Trigger
    writer = (
        df.select("value")
        ._jdf.writeStream()
        .foreach(jvm.sluice.bench.LatencySink(run, steady_from_ms))
        .option("checkpointLocation", checkpoint)
    )
    if continuous:
        writer = writer.trigger(triggers.Continuous(CONTINUOUS_INTERVAL))
    else:
        writer = writer.outputMode("update").trigger(triggers.RealTime(batch))
    query = writer.start()
    try:
        time.sleep(seconds)
        progress = [json.loads(p.json()) for p in query.recentProgress()]
        exception = query.exception()
        if exception.isDefined():
            raise RuntimeError(exception.get().toString())
    finally:
        query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    drifts = [
        int(s["metrics"]["liveMaxObservedDriftMs"])
        for p in progress
        for s in p["sources"]
        if "liveMaxObservedDriftMs" in s.get("metrics", {})
    ]
    return {
        "records": sink.count(run),
        "p50_ms": sink.percentile(run, 50.0),
        "p99_ms": sink.percentile(run, 99.0),
        "observed_max_drift_ms": max(drifts) if drifts else None,
        "batches": len(progress),
    }


def run() -> dict:
    rate = int(os.environ.get("SLUICE_BENCH_RT_RATE", "5000"))
    seconds = int(os.environ.get("SLUICE_BENCH_RT_SECONDS", "60"))
    batch = os.environ.get("SLUICE_BENCH_RT_BATCH", "20 seconds")
    runs = pairs_from_env()
    # Real-time mode runs every task of a batch at once: Spark's source needs a slot per partition,
    # the aligned query one per task of each source (Sluice packs a source's splits into at most
    # the default parallelism). Threads, not cores: the tasks wait in poll most of the time.
    spark = session("realtime_latency", master=MASTER, spark_kafka=True, benchkit=True)
    with broker() as kafka:
        servers = kafka.bootstrap_servers
        topic_no = [0]

        def fresh(shift_ms: int = 0, duration: int = seconds) -> str:
            topic_no[0] += 1
            name = f"rt{topic_no[0]}"
            kafka.create_topic(name, PARTITIONS)
            kafka.produce_steady(name, rate, duration + LEAD_SECONDS + 5, shift_ms)
            return name

        def side(kind: str, duration: int, label: str) -> dict:
            if kind == "spark":
                df = _kafka(spark, servers, fresh(duration=duration))
            elif kind in ("sluice", "continuous"):
                df = _sluice(spark, servers, fresh(duration=duration), aligned=False)
            else:
                ahead = _sluice(spark, servers, fresh(duration=duration), aligned=True)
                behind = _sluice(spark, servers, fresh(-LAG_MS, duration), aligned=True)
                df = ahead.select("value").unionByName(behind.select("value"))
            # the producers run a little before the query starts, so that every split has a first
            # record to place in event time when the first long batch is planned; what was sent
            # before the query started is not counted in the latencies
            time.sleep(LEAD_SECONDS)
            result = _run(spark, df, label, duration, batch, continuous=kind == "continuous")
            print(
                f"  {label:<16} p50 {result['p50_ms']:>6} ms  p99 {result['p99_ms']:>6} ms  "
                f"{result['records']:>8} records  drift {result['observed_max_drift_ms']}",
                flush=True,
            )
            return result

        for kind in KINDS:
            side(kind, 15, f"warm-up {kind}")
        # every two rounds run each pair of sides once in each order (bench/pairs.py)
        rounds = [
            {kind: side(kind, seconds, f"run {i + 1} {kind}") for kind in round_order(list(KINDS), i)}
            for i in range(runs)
        ]
    spark.stop()

    def median(kind: str, key: str) -> float:
        return statistics.median(r[kind][key] for r in rounds)

    ratios = [r["sluice"]["p99_ms"] / max(1, r["spark"]["p99_ms"]) for r in rounds]
    drifts = [
        r["aligned"]["observed_max_drift_ms"]
        for r in rounds
        if r["aligned"]["observed_max_drift_ms"] is not None
    ]
    result = {
        "benchmark": "realtime_latency",
        "spark_p50_ms": median("spark", "p50_ms"),
        "spark_p99_ms": median("spark", "p99_ms"),
        "sluice_p50_ms": median("sluice", "p50_ms"),
        "sluice_p99_ms": median("sluice", "p99_ms"),
        "p99_ratio": statistics.median(ratios),
        "p99_ratio_min": min(ratios),
        "p99_ratio_max": max(ratios),
        "aligned_p50_ms": median("aligned", "p50_ms"),
        "aligned_p99_ms": median("aligned", "p99_ms"),
        "max_drift_ms": MAX_DRIFT_MS,
        "update_interval_ms": UPDATE_INTERVAL_MS,
        "observed_max_drift_ms": max(drifts) if drifts else None,
        "continuous_p50_ms": median("continuous", "p50_ms"),
        "continuous_p99_ms": median("continuous", "p99_ms"),
        "continuous_interval": CONTINUOUS_INTERVAL,
        "rate_records_per_second": rate,
        "seconds_per_run": seconds,
        "batch": batch,
        "partitions": PARTITIONS,
        "runs": runs,
        "all_runs": rounds,
        "machine": machine(MASTER),
    }
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "all_runs"}, indent=2))
    return result

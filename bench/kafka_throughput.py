"""kafka_throughput: Sluice's raw KafkaSource vs Spark's `kafka` source vs a plain KafkaConsumer loop.

One topic of 8 partitions with SLUICE_BENCH_KAFKA_RECORDS (default 5,000,000) records of ~100
bytes in an embedded broker. Each Spark run reads the whole topic with Trigger.AvailableNow into
the no-op sink. The ceiling is one KafkaConsumer reading everything in one loop in one JVM (the
broker's).

Spark's side is measured twice: with its defaults, and tuned as a careful user would tune it.
Spark's consumer asks for the partition's offset range after every poll, so its rate depends on
the records a poll returns (`kafka.max.poll.records`, 500 by default), and a consumer waits for
a fetch once it has handed on what the last one brought (`kafka.max.partition.fetch.bytes`, 1 MB
by Kafka's default, 8 MB by Sluice's): a sweep over POLL_RECORDS × FETCH_BYTES (one warm-up and
two interleaved rounds of each pair of values) picks the pair best for Spark on this machine, and
Sluice's tuned side gets the same pair.

Every timed run starts with cold consumers on both sides: Spark's consumers are keyed by a group
id drawn for each query, and Sluice's runs get a `groupIdPrefix` (a group id drawn afresh for each
run, which keys its consumer pool), so no run takes the consumers a previous run left idle.

Spark, tuned Spark, Sluice, tuned Sluice and the ceiling run as interleaved rounds after a warm-up
each (bench/pairs.py); `ratio` (Sluice ÷ Spark), `ratio_tuned` (tuned Sluice ÷ tuned Spark) and
`fraction_of_ceiling` (Sluice ÷ ceiling) are medians of the per-round ratios.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from bench.common import broker, machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
RESULT = ROOT / "results" / "kafka_throughput.json"
TOPIC = "bench"
PARTITIONS = 8
VALUE_BYTES = 100
#: the values of `kafka.max.poll.records` tried for Spark's tuned side (500 is Kafka's default)
POLL_RECORDS = (500, 2_000, 5_000, 20_000, 50_000)
#: the values of `kafka.max.partition.fetch.bytes` tried with each (Kafka's default; Sluice's)
FETCH_BYTES = (1 << 20, 8 << 20)


def _time_query(spark: SparkSession, fmt: str, options: dict[str, str]) -> tuple[int, float]:
    seconds, progress = run_available_now(spark.readStream.format(fmt).options(**options).load())
    return rows_read(progress), seconds


def _tuning(poll_records: int, fetch_bytes: int) -> dict[str, str]:
    return {
        "kafka.max.poll.records": str(poll_records),
        "kafka.max.partition.fetch.bytes": str(fetch_bytes),
    }


def _sweep_key(poll_records: int, fetch_bytes: int) -> str:
    return f"{poll_records}/{fetch_bytes >> 20}MB"


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    pairs = pairs_from_env()
    with broker() as kafka:
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        print(
            f"kafka_throughput: producing {records:,} records of {VALUE_BYTES} bytes into {PARTITIONS} partitions"
        )
        kafka.produce_generated(TOPIC, records, VALUE_BYTES)
        common = {
            "kafka.bootstrap.servers": kafka.bootstrap_servers,
            "subscribe": TOPIC,
            "startingOffsets": "earliest",
        }
        spark = session("bench-kafka-throughput", spark_kafka=True)

        def query(name: str, fmt: str, options: dict[str, str]) -> Callable[[], float]:
            def once() -> float:
                rows, seconds = _time_query(spark, fmt, options)
                if rows != records:
                    raise AssertionError(f"{name} read {rows} rows, expected {records}")
                return rows / seconds

            return once

        def ceiling() -> float:
            count, seconds = kafka.consume_count(TOPIC)
            return count / seconds

        def sluice(poll: dict[str, str]) -> Callable[[], float]:
            # a new group id per run (see the module's comment): cold consumers, as Spark's
            return query("sluice", "sluice", {"source": "kafka", "groupIdPrefix": "bench", **common, **poll})

        try:
            tried = {_sweep_key(n, b): _tuning(n, b) for n in POLL_RECORDS for b in FETCH_BYTES}
            swept = interleaved(
                {key: query("spark", "kafka", {**common, **t}) for key, t in tried.items()},
                2,
                label="sweep poll records/fetch bytes ",
            )
            best = max(tried, key=lambda key: statistics.median(swept[key]))
            tuned = tried[best]
            print(f"kafka_throughput: Spark is fastest with {tuned}")
            measured = interleaved(
                {
                    "spark": query("spark", "kafka", common),
                    "spark_tuned": query("spark tuned", "kafka", {**common, **tuned}),
                    "sluice": sluice({}),
                    "sluice_tuned": sluice(tuned),
                    "ceiling": ceiling,
                },
                pairs,
            )
        finally:
            spark.stop()
    spark_rps, sluice_rps, ceiling_rps = (measured[s] for s in ("spark", "sluice", "ceiling"))
    spark_tuned_rps, sluice_tuned_rps = measured["spark_tuned"], measured["sluice_tuned"]
    result = {
        "benchmark": "kafka_throughput",
        "records": records,
        "partitions": PARTITIONS,
        "value_bytes": VALUE_BYTES,
        "pairs": pairs,
        "spark_rps": statistics.median(spark_rps),
        "sluice_rps": statistics.median(sluice_rps),
        "ceiling_rps": statistics.median(ceiling_rps),
        "spark_tuned_rps": statistics.median(spark_tuned_rps),
        "sluice_tuned_rps": statistics.median(sluice_tuned_rps),
        "tuned_max_poll_records": int(tuned["kafka.max.poll.records"]),
        "tuned_max_partition_fetch_bytes": int(tuned["kafka.max.partition.fetch.bytes"]),
        **summary("ratio", sluice_rps, spark_rps),
        **summary("ratio_tuned", sluice_tuned_rps, spark_tuned_rps),
        **summary("fraction_of_ceiling", sluice_rps, ceiling_rps),
        "sweep_spark_rps": {n: statistics.median(rps) for n, rps in swept.items()},
        "all_runs": {
            "spark_rps": spark_rps,
            "spark_tuned_rps": spark_tuned_rps,
            "sluice_rps": sluice_rps,
            "sluice_tuned_rps": sluice_tuned_rps,
            "ceiling_rps": ceiling_rps,
            "sweep_spark_rps": swept,
        },
        "machine": machine("local[2]"),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"kafka_throughput: Spark {result['spark_rps']:,.0f}/s, Sluice {result['sluice_rps']:,.0f}/s "
        f"(ratio {result['ratio']:.2f}, {result['ratio_min']:.2f}-{result['ratio_max']:.2f}), "
        f"tuned ({best}: records a poll/fetch bytes) Spark {result['spark_tuned_rps']:,.0f}/s, "
        f"Sluice {result['sluice_tuned_rps']:,.0f}/s (ratio {result['ratio_tuned']:.2f}), "
        f"ceiling {result['ceiling_rps']:,.0f}/s (Sluice at {result['fraction_of_ceiling']:.0%})"
    )
    return result

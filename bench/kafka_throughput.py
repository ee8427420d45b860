"""kafka_throughput: Sluice's raw KafkaSource vs Spark's `kafka` source vs a plain KafkaConsumer loop.

One topic of 8 partitions with SLUICE_BENCH_KAFKA_RECORDS (default 5,000,000) records of ~100
bytes in an embedded broker. Each Spark run reads the whole topic with Trigger.AvailableNow into
the no-op sink. The ceiling is one KafkaConsumer reading everything in one loop in one JVM (the
broker's). Spark, Sluice and the ceiling run as interleaved rounds after a warm-up each
(bench/pairs.py); `ratio` and `fraction_of_ceiling` are medians of the per-round ratios.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from sluice.testing import EmbeddedKafka

from bench.common import rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
RESULT = ROOT / "results" / "kafka_throughput.json"
TOPIC = "bench"
PARTITIONS = 8
VALUE_BYTES = 100


def _time_query(spark: SparkSession, fmt: str, options: dict[str, str]) -> tuple[int, float]:
    seconds, progress = run_available_now(spark.readStream.format(fmt).options(**options).load())
    return rows_read(progress), seconds


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    pairs = pairs_from_env()
    with EmbeddedKafka(heap="1g", jvm_options=["-XX:+UseParallelGC"]) as kafka:
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

        try:
            measured = interleaved(
                {
                    "spark": query("spark", "kafka", common),
                    "sluice": query("sluice", "sluice", {"source": "kafka", **common}),
                    "ceiling": ceiling,
                },
                pairs,
            )
        finally:
            spark.stop()
    spark_rps, sluice_rps, ceiling_rps = (measured[s] for s in ("spark", "sluice", "ceiling"))
    result = {
        "benchmark": "kafka_throughput",
        "records": records,
        "partitions": PARTITIONS,
        "value_bytes": VALUE_BYTES,
        "pairs": pairs,
        "spark_rps": statistics.median(spark_rps),
        "sluice_rps": statistics.median(sluice_rps),
        "ceiling_rps": statistics.median(ceiling_rps),
        **summary("ratio", sluice_rps, spark_rps),
        **summary("fraction_of_ceiling", sluice_rps, ceiling_rps),
        "all_runs": {
            "spark_rps": spark_rps,
            "sluice_rps": sluice_rps,
            "ceiling_rps": ceiling_rps,
        },
        "machine": {"cpus": os.cpu_count(), "spark_master": "local[2]"},
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"kafka_throughput: Spark {result['spark_rps']:,.0f}/s, Sluice {result['sluice_rps']:,.0f}/s "
        f"(ratio {result['ratio']:.2f}, {result['ratio_min']:.2f}-{result['ratio_max']:.2f}), "
        f"ceiling {result['ceiling_rps']:,.0f}/s (Sluice at {result['fraction_of_ceiling']:.0%})"
    )
    return result

"""kafka_throughput: Sluice's raw KafkaSource vs Spark's `kafka` source vs a plain KafkaConsumer loop.

One topic of 8 partitions with SLUICE_BENCH_KAFKA_RECORDS (default 5,000,000) records of ~100
bytes in an embedded broker. Each Spark run reads the whole topic with Trigger.AvailableNow into
the no-op sink; Spark and Sluice runs alternate, and the figure is the median of the runs. The
ceiling is one KafkaConsumer reading everything in one loop in one JVM (the broker's).
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from pyspark.sql import SparkSession

from bench.common import rows_read, run_available_now, session
from sluice.testing import EmbeddedKafka

ROOT = Path(__file__).resolve().parent
RESULT = ROOT / "results" / "kafka_throughput.json"
TOPIC = "bench"
PARTITIONS = 8
VALUE_BYTES = 100


def _time_query(
    spark: SparkSession, fmt: str, options: dict[str, str]
) -> tuple[int, float]:
    seconds, progress = run_available_now(
        spark.readStream.format(fmt).options(**options).load()
    )
    return rows_read(progress), seconds


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    runs = int(os.environ.get("SLUICE_BENCH_RUNS", "3"))
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
        try:
            _time_query(
                spark, "kafka", common
            )  # warm-up: class loading, JIT, consumer pools
            _time_query(spark, "sluice", {"source": "kafka", **common})
            spark_rps, sluice_rps, ceiling_rps = [], [], []
            for i in range(runs):
                for name, fmt, options, sink in (
                    ("spark", "kafka", common, spark_rps),
                    ("sluice", "sluice", {"source": "kafka", **common}, sluice_rps),
                ):
                    rows, seconds = _time_query(spark, fmt, options)
                    if rows != records:
                        raise AssertionError(
                            f"{name} read {rows} rows, expected {records}"
                        )
                    sink.append(rows / seconds)
                    print(
                        f"  run {i + 1}: {name:<7} {rows / seconds:>12,.0f} records/s ({seconds:.1f} s)"
                    )
                count, seconds = kafka.consume_count(TOPIC)
                ceiling_rps.append(count / seconds)
                print(
                    f"  run {i + 1}: ceiling {count / seconds:>12,.0f} records/s ({seconds:.1f} s)"
                )
        finally:
            spark.stop()
    result = {
        "benchmark": "kafka_throughput",
        "records": records,
        "partitions": PARTITIONS,
        "value_bytes": VALUE_BYTES,
        "runs": runs,
        "spark_rps": statistics.median(spark_rps),
        "sluice_rps": statistics.median(sluice_rps),
        "ceiling_rps": statistics.median(ceiling_rps),
        "ratio": statistics.median(sluice_rps) / statistics.median(spark_rps),
        "fraction_of_ceiling": statistics.median(sluice_rps)
        / statistics.median(ceiling_rps),
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
        f"(ratio {result['ratio']:.2f}), ceiling {result['ceiling_rps']:,.0f}/s "
        f"(Sluice at {result['fraction_of_ceiling']:.0%})"
    )
    return result

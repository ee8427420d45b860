"""compact: Spark's Kafka source vs Sluice full rows vs Sluice compact rows, same topic and queries.

SLUICE_BENCH_COMPACT_RECORDS (default 3,000,000) records of 100 B are generated inside the
embedded broker, round-robin over 8 partitions. Two queries, each under Trigger.AvailableNow:

- scan: the value column only, into the no-op sink. Spark: `format("kafka").load().select("value")`
  (its reader still builds all 7 columns); Sluice full: the same select on raw rows (its reader
  builds the value alone, the only column used, and still reads record times); Sluice compact:
  `forceTimestampSupport=false`, whose rows are the value alone.
- shuffle: every micro-batch grouped by a hash of the value into 1,024 groups and counted
  (`foreachBatch` + `groupBy(pmod(hash(value), 1024)).count()` written to the no-op sink).

The three sides run as interleaved rounds after a warm-up each (bench/pairs.py); `ratio`
(compact / Spark) and `full_ratio` (full / Spark) are medians of the per-round ratios, records/s
medians of the rounds. Bytes per row are the mean `UnsafeRow` size of the rows each source emits (before
any select), over the first micro-batch of 20,000 records (`sluice.bench.RowSizes`, jvm/benchkit).
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import KafkaSource, OffsetsInitializer

from bench.common import broker, machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

RESULT = Path(__file__).resolve().parent / "results" / "compact.json"
TOPIC = "compact"
PARTITIONS = 8
VALUE_BYTES = 100
SIDES = ("spark", "full", "compact")


def _source(spark: SparkSession, bootstrap: str, side: str, limit: int | None = None) -> DataFrame:
    """The rows each side's source emits (nothing selected yet)."""
    if side == "spark":
        reader = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
        )
        if limit:
            reader = reader.option("maxOffsetsPerTrigger", limit)
        return reader.load()
    options: dict[str, object] = {"forceTimestampSupport": side == "full"}
    if limit:
        options["maxRecordsPerTrigger"] = limit
    source = (
        KafkaSource.builder()
        .bootstrap_servers(bootstrap)
        .topics(TOPIC)
        .starting_offsets(OffsetsInitializer.earliest())
        .build()
    )
    return sluice.from_source(spark, source, name=side, options=options)


def _row_bytes(spark: SparkSession, bootstrap: str, side: str) -> float:
    sizes: list[float] = []

    def measure(batch: DataFrame, _batch_id: int) -> None:
        if not sizes:
            jvm = spark._jvm  # noqa: SLF001
            sizes.append(jvm.sluice.bench.RowSizes.meanUnsafeRowBytes(batch._jdf, 20_000))  # noqa: SLF001

    with tempfile.TemporaryDirectory(prefix="bench-compact-") as checkpoint:
        query = (
            _source(spark, bootstrap, side, limit=20_000)
            .writeStream.foreachBatch(measure)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="0 seconds")
            .start()
        )
        deadline = time.time() + 300
        while not sizes and query.exception() is None and time.time() < deadline:
            time.sleep(0.1)
        query.stop()
    if not sizes:
        raise RuntimeError(f"no batch measured for {side}: {query.exception()}")
    return sizes[0]


def _scan(df: DataFrame, side: str) -> DataFrame:
    return df if side == "compact" else df.select("value")


def _shuffle_seconds(df: DataFrame, expected: int) -> float:
    counted: list[int] = []

    def group(batch: DataFrame, _batch_id: int) -> None:
        groups = batch.groupBy(F.pmod(F.hash("value"), F.lit(1024)).alias("g")).count()
        counted.append(sum(r["count"] for r in groups.collect()))

    seconds, _ = run_available_now(df, sink=lambda w: w.foreachBatch(group))
    if sum(counted) != expected:
        raise AssertionError(f"grouped {sum(counted)} records, expected {expected}")
    return seconds


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_COMPACT_RECORDS", "3000000"))
    pairs = pairs_from_env()
    spark = session("bench-compact", spark_kafka=True, benchkit=True)
    with broker() as kafka:
        kafka.create_topic(TOPIC, PARTITIONS)
        kafka.produce_generated(TOPIC, records, VALUE_BYTES)
        bootstrap = kafka.bootstrap_servers

        def scan_rps(side: str) -> float:
            seconds, progress = run_available_now(_scan(_source(spark, bootstrap, side), side))
            if rows_read(progress) != records:
                raise AssertionError(f"{side} read {rows_read(progress)} records, expected {records}")
            return records / seconds

        def shuffle_rps(side: str) -> float:
            return records / _shuffle_seconds(_scan(_source(spark, bootstrap, side), side), records)

        scan_runs = interleaved({side: partial(scan_rps, side) for side in SIDES}, pairs, label="scan ")
        shuffle_runs = interleaved(
            {side: partial(shuffle_rps, side) for side in SIDES},
            pairs,
            label="shuffle ",
        )
        scan = {side: statistics.median(v) for side, v in scan_runs.items()}
        shuffle = {side: statistics.median(v) for side, v in shuffle_runs.items()}
        row_bytes = {side: _row_bytes(spark, bootstrap, side) for side in SIDES}
    spark.stop()

    result = {
        "benchmark": "compact",
        "spark_rps": scan["spark"],
        "full_rps": scan["full"],
        "compact_rps": scan["compact"],
        **summary("ratio", scan_runs["compact"], scan_runs["spark"]),
        **summary("full_ratio", scan_runs["full"], scan_runs["spark"]),
        "spark_row_bytes": row_bytes["spark"],
        "full_row_bytes": row_bytes["full"],
        "compact_row_bytes": row_bytes["compact"],
        "shuffle": {
            "spark_rps": shuffle["spark"],
            "full_rps": shuffle["full"],
            "compact_rps": shuffle["compact"],
            **summary("ratio", shuffle_runs["compact"], shuffle_runs["spark"]),
        },
        "records": records,
        "value_bytes": VALUE_BYTES,
        "partitions": PARTITIONS,
        "pairs": pairs,
        "machine": machine("local[2]"),
        "all_runs": {"scan_rps": scan_runs, "shuffle_rps": shuffle_runs},
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "all_runs"}, indent=2))
    return result

"""scale: what grows with the number of files and splits, and one hot partition.

Four measures, each against Spark's built-in path in the same run where there is one:

- `small_files`: SLUICE_BENCH_SCALE_FILES (default 10,000) one-line JSON files in one directory,
  read once with Trigger.AvailableNow into the no-op sink: Sluice's bounded `FileSource` against
  `spark.readStream.schema(s).json(dir)`, as interleaved pairs (bench/pairs.py), and Spark tuned
  as a careful user would: each of Spark's batches lists its files again through an
  `InMemoryFileIndex`, which above `spark.sql.sources.parallelPartitionDiscovery.threshold` (32)
  paths lists them in a Spark job of up to 10,000 tasks; the tuned side raises the threshold above
  the file count, so the listing stays on the driver.
  `small_files_ratio` is the median of the per-pair ratios of records/s (Sluice / Spark),
  `small_files_ratio_tuned` the same against tuned Spark; `small_files_tasks_per_run` the
  Spark tasks each side's runs ran (medians), listing jobs included;
  `offset_bytes_max` is the largest file of the Sluice query's offset log (`offsets/<batch>`),
  the bytes Spark writes for every batch; `checkpoint_bytes_written_max` what a run wrote beside
  it, at most, to keep checkpoints too large for the log.
- `splits_1024_plan_ms_p50`: a generator source of 1,024 splits in an alignment group, read in
  batches of SLUICE_BENCH_SCALE_PLAN_LIMIT records: the median over the batches of the driver's
  `latestOffset` time (`durationMs.latestOffset` of the query progress), the planning cost per
  batch at that many splits.
- `one_partition_ratio`: a topic of one partition holding SLUICE_BENCH_SCALE_ONE_PARTITION_RECORDS
  (default 5,000,000) records, read once (AvailableNow, no-op sink) with `minPartitions` = the
  cores: Sluice divides the partition's range among tasks, as Spark's source does with the same
  option. Interleaved pairs; the median of the per-pair ratios of records/s (Sluice / Spark).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import GeneratorSource, WatermarkStrategy

from bench.common import broker, machine, rows_read, run_available_now, session, tasks_run
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "scale"
RESULT = ROOT / "results" / "scale.json"
SCHEMA = "id BIGINT, user STRING, amount DOUBLE"
MASTER = "local[2]"
CORES = 2


def _env(name: str, default: int) -> int:
    return int(os.environ.get(f"SLUICE_BENCH_SCALE_{name}", str(default)))


def _small_files(count: int) -> Path:
    """`count` files of one JSON line each, written once and reused while the count stays."""
    folder = WORK / f"files-{count}"
    if (folder / "_COMPLETE").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(count):
        line = json.dumps({"id": i, "user": f"user-{i % 1000}", "amount": i * 0.25})
        (folder / f"part-{i:06d}.json").write_text(line + "\n")
    # hidden from both readers (a leading underscore), so the folder is known to be whole
    (folder / "_COMPLETE").write_text("")
    return folder


def _offset_bytes_max(checkpoint: Path) -> int:
    offsets = [f for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()]
    return max(f.stat().st_size for f in offsets)


def _kept_bytes(progress: list[dict]) -> int:
    """What the run wrote beside the offset log to keep checkpoints too large for it (the
    source's `checkpointBytesWritten` at the end)."""
    return max(
        (int(p["sources"][0]["metrics"].get("checkpointBytesWritten", "0")) for p in progress),
        default=0,
    )


LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _measure_small_files(spark: SparkSession, count: int, pairs: int) -> dict:
    folder = _small_files(count)
    offset_sizes: list[int] = []
    kept_bytes: list[int] = []
    # the tasks each side's runs ran: Spark packs small files into tasks by its open cost
    tasks: dict[str, list[int]] = {"spark": [], "spark_tuned": [], "sluice": []}

    def spark_side(threshold: int | None) -> Callable[[], float]:
        def once() -> float:
            default = spark.conf.get(LISTING_THRESHOLD)
            if threshold is not None:
                spark.conf.set(LISTING_THRESHOLD, str(threshold))
            try:
                seconds, progress = run_available_now(spark.readStream.schema(SCHEMA).json(str(folder)))
            finally:
                spark.conf.set(LISTING_THRESHOLD, default)
            if rows_read(progress) != count:
                raise AssertionError(f"Spark read {rows_read(progress)} rows, expected {count}")
            tasks["spark" if threshold is None else "spark_tuned"].append(tasks_run(spark, progress))
            return count / seconds

        return once

    def sluice_side() -> float:
        source = sluice.FileSource.builder().path(str(folder)).format("json").schema(SCHEMA).build()
        checkpoint = WORK / "ckpt-small-files"
        seconds, progress = run_available_now(
            sluice.from_source(spark, source, name="small_files"), checkpoint
        )
        if rows_read(progress) != count:
            raise AssertionError(f"Sluice read {rows_read(progress)} rows, expected {count}")
        offset_sizes.append(_offset_bytes_max(checkpoint))
        kept_bytes.append(_kept_bytes(progress))
        tasks["sluice"].append(tasks_run(spark, progress))
        return count / seconds

    measured = interleaved(
        {"spark": spark_side(None), "spark_tuned": spark_side(count * 10), "sluice": sluice_side},
        pairs,
        label="small files ",
    )
    return {
        "small_files": count,
        "small_files_spark_rps": statistics.median(measured["spark"]),
        "small_files_spark_tuned_rps": statistics.median(measured["spark_tuned"]),
        "small_files_sluice_rps": statistics.median(measured["sluice"]),
        "small_files_listing_threshold_tuned": count * 10,
        **summary("small_files_ratio", measured["sluice"], measured["spark"]),
        **summary("small_files_ratio_tuned", measured["sluice"], measured["spark_tuned"]),
        "small_files_tasks_per_run": {side: statistics.median(n) for side, n in tasks.items()},
        "offset_bytes_max": max(offset_sizes),
        "checkpoint_bytes_written_max": max(kept_bytes),
    }


def _measure_planning(spark: SparkSession, splits: int, limit: int, batches: int) -> dict:
    source = (
        GeneratorSource.builder()
        .splits(splits)
        .records_per_split(limit * batches // splits + 1)
        .event_time_step(1000)
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "scale", max_drift=timedelta(minutes=5)
    )
    df = sluice.from_source(
        spark,
        source,
        strategy,
        name="planning",
        options={"maxRecordsPerTrigger": limit},
    )
    _, progress = run_available_now(df)
    # the first batch also lists and places every split; the steady state is what follows
    plan_ms = [p["durationMs"].get("latestOffset", 0) for p in progress[1:] if p["numInputRows"]]
    return {
        "splits_1024_plan_ms_p50": statistics.median(plan_ms),
        "splits_1024_plan_ms_max": max(plan_ms),
        "planning": {
            "splits": splits,
            "batches": len(plan_ms),
            "records_per_batch": limit,
        },
    }


def _measure_one_partition(spark: SparkSession, records: int, pairs: int) -> dict:
    with broker() as kafka:
        kafka.create_topic("hot", partitions=1)
        kafka.produce_generated("hot", records, 100)
        common = {
            "kafka.bootstrap.servers": kafka.bootstrap_servers,
            "subscribe": "hot",
            "startingOffsets": "earliest",
            "minPartitions": str(CORES),
        }

        def side(fmt: str, options: dict[str, str]) -> Callable[[], float]:
            def once() -> float:
                seconds, progress = run_available_now(spark.readStream.format(fmt).options(**options).load())
                if rows_read(progress) != records:
                    raise AssertionError(f"{fmt} read {rows_read(progress)}, expected {records}")
                return records / seconds

            return once

        measured = interleaved(
            {
                "spark": side("kafka", common),
                "sluice": side("sluice", {"source": "kafka", **common}),
            },
            pairs,
            label="one partition ",
        )
    return {
        "one_partition_records": records,
        "one_partition_spark_rps": statistics.median(measured["spark"]),
        "one_partition_sluice_rps": statistics.median(measured["sluice"]),
        **summary("one_partition_ratio", measured["sluice"], measured["spark"]),
    }


def run() -> dict:
    pairs = pairs_from_env()
    WORK.mkdir(parents=True, exist_ok=True)
    spark = session("bench-scale", master=MASTER, spark_kafka=True)
    try:
        result = {
            "benchmark": "scale",
            "pairs": pairs,
            **_measure_small_files(spark, _env("FILES", 10_000), pairs),
            **_measure_planning(spark, 1024, _env("PLAN_LIMIT", 20_480), _env("PLAN_BATCHES", 20)),
            **_measure_one_partition(spark, _env("ONE_PARTITION_RECORDS", 5_000_000), pairs),
            "machine": machine(MASTER),
        }
    finally:
        spark.stop()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, list)}, indent=2))
    return result

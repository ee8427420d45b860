"""pushdown: a query that keeps few columns and few days, Sluice vs Spark's file sources.

SLUICE_BENCH_PUSHDOWN_MB (default 1024) of Parquet are written once into
bench/scratch/pushdown/: 39 data columns (`id`, then numbers and strings) in 30 `day=`
partition directories, 40 columns with `day`. The query keeps 2 columns and 3 days:
`where(day in 3 days).select("id", "c1")`, Trigger.AvailableNow into the no-op sink. Spark:
`spark.readStream.schema(...).parquet(dir)`; Sluice: `FileSource` of the same folder (its
extensions hand it the query's columns and filters); both read only the 3 days' files (Sluice
prunes them when it lists; Spark's streaming source lists all 30 days and its scan prunes). The
same rows as JSON lines (one folder of files, `day` a field of each line, since Sluice's line
files have no partition columns; a Spark user would partition them by day, which this layout
does not measure): the same query, `spark.readStream.json` against Sluice; both read every line
and parse the 3 fields used (Spark's reader also applies the filter while parsing, so only the
rows kept count as its input).

Each format's two sides run as interleaved pairs after a warm-up (bench/pairs.py);
`parquet_ratio` and `json_ratio` are medians of the per-pair ratios of records/s (the rows the
query keeps per second, Sluice / Spark). `parquet_bytes_read_ratio` divides what the JVM read
with read/pread system calls during one run of each (Sluice / Spark, `rchar` of
/proc/<pid>/io): footers, the column chunks read.

`kafka_value_only_ratio`: SLUICE_BENCH_PUSHDOWN_RECORDS (default 3,000,000) records of 100 B in
the embedded broker, read with `select("value")` by Sluice in its default layout (which builds
value-only rows since it builds only the columns a query uses) and with the explicit compact
layout (`forceTimestampSupport=false`), records/s, default / compact.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections.abc import Callable
from functools import partial
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from sluice import KafkaSource, OffsetsInitializer

from bench.common import broker, driver_pid, durations_ms, machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "pushdown"
RESULT = ROOT / "results" / "pushdown.json"
MASTER = "local[2]"
DAYS = 30
KEPT_DAYS = ("2024-01-28", "2024-01-29", "2024-01-30")
BYTES_PER_ROW = 92  # of a Parquet row of the 39 data columns, measured: sizes the row count
NUMBERS = 19  # c1..c19: doubles; c20..c38: strings
TOPIC = "pushdown"
PARTITIONS = 8
VALUE_BYTES = 100


def _columns() -> list[str]:
    numbers = [f"CAST(id * {i} % 10007 AS DOUBLE) / 7 AS c{i}" for i in range(1, NUMBERS + 1)]
    strings = [f"concat('s{i}-', id % {97 + i}) AS c{i}" for i in range(NUMBERS + 1, 39)]
    return ["id", *numbers, *strings]


def _schema(with_day: bool) -> str:
    data = ["id BIGINT"] + [f"c{i} {'DOUBLE' if i <= NUMBERS else 'STRING'}" for i in range(1, 39)]
    return ", ".join(data + (["day DATE"] if with_day else []))


def _data(spark: SparkSession, megabytes: float) -> tuple[Path, Path, int, int]:
    """The Parquet and JSON folders, all rows, and the rows of the 3 days kept."""
    rows = int(megabytes * 1024**2 / BYTES_PER_ROW) // DAYS * DAYS
    marker = WORK / "meta.json"
    meta = {"megabytes": megabytes, "rows": rows}
    if not marker.exists() or json.loads(marker.read_text()) != meta:
        shutil.rmtree(WORK, ignore_errors=True)
    parquet, lines = WORK / "parquet", WORK / "json"
    records = spark.range(0, rows, 1, DAYS).selectExpr(
        *_columns(), f"date_add(DATE'2024-01-01', CAST(id % {DAYS} AS INT)) AS day"
    )
    if not (parquet / "_SUCCESS").exists():
        shutil.rmtree(parquet, ignore_errors=True)
        records.repartition(DAYS, "day").write.partitionBy("day").parquet(str(parquet))
    if not (lines / "_SUCCESS").exists():
        shutil.rmtree(lines, ignore_errors=True)
        records.repartition(DAYS, "day").write.json(str(lines))
    marker.write_text(json.dumps(meta))
    return parquet, lines, rows, rows // DAYS * len(KEPT_DAYS)


def _query(df: DataFrame) -> DataFrame:
    days = ", ".join(f"DATE'{d}'" for d in KEPT_DAYS)
    return df.where(f"day IN ({days})").select("id", "c1")


def _sides(spark: SparkSession, fmt: str, folder: Path) -> dict[str, Callable[[], DataFrame]]:
    def spark_df() -> DataFrame:
        if fmt == "parquet":
            return spark.readStream.schema(_schema(with_day=True)).parquet(str(folder))
        return spark.readStream.schema(_schema(with_day=True)).json(str(folder))

    def sluice_df() -> DataFrame:
        # the schema given on both sides, as Spark's file stream requires: without it Sluice infers
        # the Parquet schema from a footer, with a Spark job of its own, at each query's start
        builder = sluice.FileSource.builder().path(str(folder)).format(fmt).schema(_schema(with_day=True))
        return sluice.from_source(spark, builder.build(), name=f"pushdown_{fmt}")

    return {"spark": lambda: _query(spark_df()), "sluice": lambda: _query(sluice_df())}


def _jvm_bytes_read(spark: SparkSession) -> int:
    """What the driver's JVM (executors run in it) has read with read/pread system calls so far
    (`rchar` of /proc/<pid>/io, Linux). Hadoop's file system statistics would miss most of it:
    Parquet's vectored reads of column chunks go around them."""
    pid = driver_pid(spark)
    io = Path(f"/proc/{pid}/io").read_text()
    return int(next(line.split()[1] for line in io.splitlines() if line.startswith("rchar:")))


def _rate(
    make: Callable[[], DataFrame], kept: int, read: int, label: str, runs: list[dict]
) -> Callable[[], float]:
    """Rows kept per second of one run, which must have read `read` rows (all it did not skip);
    each run's milliseconds, start to end and by Spark's phases of its batches, go to `runs`."""

    def once() -> float:
        seconds, progress = run_available_now(make())
        if rows_read(progress) != read:
            raise AssertionError(f"{label} read {rows_read(progress)} rows, expected {read}")
        runs.append({"query": seconds * 1000, **durations_ms(progress)})
        return kept / seconds

    return once


def _phases(runs: list[dict], timed: int) -> dict[str, float]:
    """The median of each phase over the last `timed` runs (the warm-up comes first)."""
    last = runs[-timed:]
    return {phase: statistics.median(r.get(phase, 0) for r in last) for phase in last[0]}


def _bytes_read(spark: SparkSession, make: Callable[[], DataFrame]) -> int:
    before = _jvm_bytes_read(spark)
    run_available_now(make())
    return _jvm_bytes_read(spark) - before


def _kafka(spark: SparkSession, records: int, pairs: int) -> dict:
    with broker() as kafka:
        kafka.create_topic(TOPIC, PARTITIONS)
        kafka.produce_generated(TOPIC, records, VALUE_BYTES)
        source = (
            KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics(TOPIC)
            .starting_offsets(OffsetsInitializer.earliest())
            .build()
        )

        def value_rps(compact: bool) -> float:
            options = {"forceTimestampSupport": False} if compact else None
            df = sluice.from_source(spark, source, name="value", options=options).select("value")
            seconds, progress = run_available_now(df)
            if rows_read(progress) != records:
                raise AssertionError(f"read {rows_read(progress)} records, expected {records}")
            return records / seconds

        runs = interleaved(
            {"default": partial(value_rps, False), "compact": partial(value_rps, True)},
            pairs,
            label="kafka ",
        )
    return {
        "kafka_records": records,
        "kafka_default_rps": statistics.median(runs["default"]),
        "kafka_compact_rps": statistics.median(runs["compact"]),
        **summary("kafka_value_only_ratio", runs["default"], runs["compact"]),
    }


def run() -> dict:
    megabytes = float(os.environ.get("SLUICE_BENCH_PUSHDOWN_MB", "1024"))
    records = int(os.environ.get("SLUICE_BENCH_PUSHDOWN_RECORDS", "3000000"))
    pairs = pairs_from_env(default=6)
    spark = session("bench-pushdown", master=MASTER, driver_memory="3g")
    try:
        parquet, lines, rows, kept = _data(spark, megabytes)
        result: dict = {
            "benchmark": "pushdown",
            "rows": rows,
            "rows_kept": kept,
            "columns": 40,
            "days": DAYS,
            "kept_days": len(KEPT_DAYS),
            "pairs": pairs,
        }
        for fmt, folder in (("parquet", parquet), ("json", lines)):
            sides = _sides(spark, fmt, folder)
            # Parquet: both skip the other days' files. JSON lines: both read every line, and Spark's
            # reader drops the rows its pushed filters exclude while parsing (its
            # spark.sql.json.filterPushdown.enabled), so only the rows kept count as its input
            read = {"spark": kept, "sluice": kept if fmt == "parquet" else rows}
            runs: dict[str, list[dict]] = {name: [] for name in sides}
            measured = interleaved(
                {
                    name: _rate(make, kept, read[name], f"{name} {fmt}", runs[name])
                    for name, make in sides.items()
                },
                pairs,
                label=f"{fmt} ",
                unit="rows kept/s",
            )
            result.update(
                {
                    f"{fmt}_bytes": sum(f.stat().st_size for f in folder.rglob("part-*")),
                    f"{fmt}_spark_rps": statistics.median(measured["spark"]),
                    f"{fmt}_sluice_rps": statistics.median(measured["sluice"]),
                    **summary(f"{fmt}_ratio", measured["sluice"], measured["spark"]),
                    # where a run's time goes, each side: from its start to its end, and Spark's phases
                    f"{fmt}_phases_ms": {name: _phases(r, pairs) for name, r in runs.items()},
                }
            )
            if fmt == "parquet":
                counted = {name: _bytes_read(spark, make) for name, make in sides.items()}
                result.update(
                    {
                        "parquet_spark_bytes_read": counted["spark"],
                        "parquet_sluice_bytes_read": counted["sluice"],
                        "parquet_bytes_read_ratio": counted["sluice"] / counted["spark"],
                    }
                )
        result.update(_kafka(spark, records, pairs))
        result["machine"] = machine(MASTER)
    finally:
        spark.stop()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, list)}, indent=2))
    return result

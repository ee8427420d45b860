"""history_formats: Sluice's FileSource over real archive formats vs Spark's file sources.

The same records (SLUICE_BENCH_HISTORY_GB, default 1, of JSON lines when uncompressed: the rows
of file_throughput) are written once into bench/scratch/history_formats/ as gzip-compressed JSON
lines (`.json.gz`, one split per file: gzip cannot be split) and as Parquet with row groups of
about 128 MB. Each format is read once per run with Trigger.AvailableNow into the no-op sink:
Sluice's `FileSource` against `spark.readStream.json` / `spark.readStream.parquet` with the same
schema. Spark and Sluice run as interleaved pairs after a warm-up each (bench/pairs.py; ten
rounds unless SLUICE_BENCH_PAIRS says otherwise: a Parquet run is short, so jitter weighs more);
`gzip_ratio` and `parquet_ratio` are medians of the per-pair ratios of records/s (Sluice's default
rows / Spark).

Sluice's default rows carry three provenance columns Spark's rows do not (`_split`, `_position`,
`_timestamp`), so Parquet is also read two more ways in the same rounds, to show what those
columns cost: Sluice's compact rows (`forceTimestampSupport=false`: the data columns alone, as
Spark's; `parquet_compact_ratio`, compact / Spark) and Spark's rows with the same three columns
taken from its `_metadata` column (`parquet_provenance_ratio`, Sluice's default rows / those).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession

from bench.common import machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "history_formats"
RESULT = ROOT / "results" / "history_formats.json"
SCHEMA = "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP, meta STRUCT<k: INT, tags: ARRAY<STRING>>"
BYTES_PER_ROW = 110  # of a JSON line, as in file_throughput
ROW_GROUP_BYTES = 128 * 1024 * 1024
MASTER = "local[2]"


def _data(spark: SparkSession, gigabytes: float) -> tuple[dict[str, Path], int]:
    """The gzip and Parquet folders and their row count; each written when missing or resized."""
    marker = WORK / "meta.json"
    if not marker.exists() or json.loads(marker.read_text())["gigabytes"] != gigabytes:
        shutil.rmtree(WORK, ignore_errors=True)
    rows = int(gigabytes * 1024**3 / BYTES_PER_ROW)
    files = max(2, int(gigabytes * 16))
    records = spark.range(0, rows, 1, files).selectExpr(
        "id",
        "concat('user-', id % 1000) AS user",
        "CAST(id * 0.25 AS DOUBLE) AS amount",  # a decimal otherwise, which Parquet keeps as one
        "timestamp_millis(1700000000000 + id) AS ts",
        "named_struct('k', CAST(id % 7 AS INT), 'tags', array('a', concat('t', id % 13))) AS meta",
    )
    writers = {
        "gzip": lambda to: records.write.option("compression", "gzip").json(to),
        "parquet": lambda to: records.coalesce(max(1, files // 4))
        .write.option("parquet.block.size", ROW_GROUP_BYTES)
        .parquet(to),
    }
    folders = {"gzip": WORK / "json-gz", "parquet": WORK / "parquet"}
    for key, folder in folders.items():
        if not (folder / "_SUCCESS").exists():
            shutil.rmtree(folder, ignore_errors=True)
            writers[key](str(folder))
    marker.write_text(json.dumps({"gigabytes": gigabytes, "rows": rows}))
    return folders, rows


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.glob("part-*"))


def _sides(spark: SparkSession, fmt: str, folder: Path) -> dict[str, Callable[[], DataFrame]]:
    def spark_df() -> DataFrame:
        reader = spark.readStream.schema(SCHEMA)
        return reader.json(str(folder)) if fmt == "json" else reader.parquet(str(folder))

    def sluice_df(compact: bool = False) -> DataFrame:
        source = sluice.FileSource.builder().path(str(folder)).format(fmt).schema(SCHEMA).build()
        options = {"forceTimestampSupport": False} if compact else None
        return sluice.from_source(spark, source, name=f"history_{fmt}", options=options)

    sides = {"spark": spark_df, "sluice": sluice_df}
    if fmt == "parquet":
        # what Sluice's provenance columns cost, on both sides (see the module's docstring)
        sides["sluice_compact"] = lambda: sluice_df(compact=True)
        sides["spark_provenance"] = lambda: spark_df().selectExpr(
            "*",
            "_metadata.file_path AS _split",
            "_metadata.row_index AS _position",
            "_metadata.file_modification_time AS _timestamp",
        )
    return sides


def _rate(make: Callable[[], DataFrame], rows: int, label: str) -> Callable[[], float]:
    def once() -> float:
        seconds, progress = run_available_now(make())
        if rows_read(progress) != rows:
            raise AssertionError(f"{label} read {rows_read(progress)} rows, expected {rows}")
        return rows / seconds

    return once


def run() -> dict:
    gigabytes = float(os.environ.get("SLUICE_BENCH_HISTORY_GB", "1"))
    # a Parquet run takes a second or two, so start-up jitter weighs on every round: ten of them
    # (an even number: every two rounds run each pair of sides once in each order)
    pairs = pairs_from_env(default=10)
    spark = session("bench-history-formats", master=MASTER, driver_memory="3g")
    try:
        folders, rows = _data(spark, gigabytes)
        result: dict = {"benchmark": "history_formats", "rows": rows, "pairs": pairs}
        for key, fmt in (("gzip", "json"), ("parquet", "parquet")):
            sides = _sides(spark, fmt, folders[key])
            measured = interleaved(
                {name: _rate(make, rows, f"{name} {key}") for name, make in sides.items()},
                pairs,
                label=f"{key} ",
            )
            result.update(
                {
                    f"{key}_bytes": _bytes(folders[key]),
                    f"{key}_files": len(list(folders[key].glob("part-*"))),
                    f"{key}_spark_rps": statistics.median(measured["spark"]),
                    f"{key}_sluice_rps": statistics.median(measured["sluice"]),
                    **summary(f"{key}_ratio", measured["sluice"], measured["spark"]),
                }
            )
            if key == "parquet":
                result.update(
                    {
                        **summary(
                            "parquet_compact_ratio",
                            measured["sluice_compact"],
                            measured["spark"],
                        ),
                        **summary(
                            "parquet_provenance_ratio",
                            measured["sluice"],
                            measured["spark_provenance"],
                        ),
                    }
                )
        result["machine"] = machine(MASTER)
    finally:
        spark.stop()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, list)}, indent=2))
    return result

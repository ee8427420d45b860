"""file_throughput: Sluice's FileSource vs `spark.readStream.json` on the same JSON-lines files.

Both read every file once (Trigger.AvailableNow) into the no-op sink; the measure is rows per
second, as interleaved rounds after a warm-up each (bench/pairs.py): `ratio` is the median of
the per-round ratios of the same query (the files' columns into the sink: Sluice / Spark);
Sluice's default rows, with its three provenance columns, run as a third side of the same rounds
(`ratio_provenance`). The data (SLUICE_BENCH_FILE_GB, default 1) is
generated once into bench/scratch/ and reused while its size stays the same.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path

import sluice
from pyspark.sql import SparkSession

from bench.common import machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "file_throughput"
RESULT = ROOT / "results" / "file_throughput.json"
SCHEMA = "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP, meta STRUCT<k: INT, tags: ARRAY<STRING>>"
MASTER = "local[2]"  # as every benchmark: the figures are for 2 cores
BYTES_PER_ROW = 110  # a little under the ~115 bytes of the rows generated below, so the size is reached


def _session() -> SparkSession:
    return session(
        "sluice-bench-file",
        master=MASTER,
        driver_memory=os.environ.get("SLUICE_BENCH_DRIVER_MEMORY", "3g"),
    )


def _data(spark: SparkSession, gigabytes: float) -> tuple[Path, int, int]:
    """The data directory, its row count and its size in bytes; generated when missing."""
    marker = WORK / "meta.json"
    if marker.exists():
        meta = json.loads(marker.read_text())
        if meta["gigabytes"] == gigabytes:
            return WORK / "data", meta["rows"], meta["bytes"]
    shutil.rmtree(WORK, ignore_errors=True)
    rows = int(gigabytes * 1024**3 / BYTES_PER_ROW)
    files = max(2, int(gigabytes * 16))
    (
        spark.range(0, rows, 1, files)
        .selectExpr(
            "id",
            "concat('user-', id % 1000) AS user",
            "id * 0.25 AS amount",
            "timestamp_millis(1700000000000 + id) AS ts",
            "named_struct('k', CAST(id % 7 AS INT), 'tags', array('a', concat('t', id % 13))) AS meta",
        )
        .write.json(str(WORK / "data"))
    )
    size = sum(f.stat().st_size for f in (WORK / "data").glob("part-*"))
    WORK.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"gigabytes": gigabytes, "rows": rows, "bytes": size}))
    return WORK / "data", rows, size


def _timed(df, checkpoint: Path) -> tuple[float, int]:
    seconds, progress = run_available_now(df, checkpoint)
    return seconds, rows_read(progress)


def run() -> dict:
    gigabytes = float(os.environ.get("SLUICE_BENCH_FILE_GB", "1"))
    pairs = pairs_from_env()
    spark = _session()
    spark.sparkContext.setLogLevel("ERROR")
    data, rows, size = _data(spark, gigabytes)
    files = len(list(data.glob("part-*")))

    def spark_df():
        return spark.readStream.schema(SCHEMA).json(str(data))

    def sluice_rows():
        source = sluice.FileSource.builder().path(str(data)).format("json").schema(SCHEMA).build()
        return sluice.from_source(spark, source, name="files")

    def sluice_df():
        # the same query as Spark's: the files' columns; the provenance columns go unused
        return sluice_rows().select(*spark_df().columns)

    def side(name: str, make) -> Callable[[], float]:
        def once() -> float:
            seconds, read = _timed(make(), WORK / f"ckpt-{name}")
            if read != rows:
                raise RuntimeError(f"{name} read {read} rows, expected {rows}")
            return read / seconds

        return once

    try:
        measured = interleaved(
            {
                "spark": side("spark", spark_df),
                "sluice": side("sluice", sluice_df),
                # Sluice's default rows: the files' columns and the three provenance columns
                "sluice_provenance": side("sluice_provenance", sluice_rows),
            },
            pairs,
        )
    finally:
        spark.stop()
    result = {
        "benchmark": "file_throughput",
        "data_bytes": size,
        "rows": rows,
        "files": files,
        "pairs": pairs,
        "spark_rps": statistics.median(measured["spark"]),
        "sluice_rps": statistics.median(measured["sluice"]),
        "sluice_provenance_rps": statistics.median(measured["sluice_provenance"]),
        **summary("ratio", measured["sluice"], measured["spark"]),
        **summary("ratio_provenance", measured["sluice_provenance"], measured["spark"]),
        "all_runs": {
            "spark_rps": measured["spark"],
            "sluice_rps": measured["sluice"],
            "sluice_provenance_rps": measured["sluice_provenance"],
        },
        "machine": machine(MASTER),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"file_throughput: {size / 1024**3:.2f} GB JSON lines, Spark {result['spark_rps']:,.0f}/s, "
        f"Sluice {result['sluice_rps']:,.0f}/s (ratio {result['ratio']:.2f}, "
        f"{result['ratio_min']:.2f}-{result['ratio_max']:.2f})"
    )
    return result

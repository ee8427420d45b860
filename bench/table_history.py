"""table_history: Sluice's IcebergSource and DeltaSource vs Spark's Parquet stream over the same files.

(a) Throughput. The same rows (SLUICE_BENCH_TABLE_HISTORY_GB, default 1, of Parquet data) are
written by the formats' own writers, once each into bench/scratch/table_history/: as an Iceberg
table by pyiceberg (a SQL catalog on sqlite) and as a Delta table by deltalake (delta-rs), one
commit per chunk of rows (a data file of about 45 MB), both in zstd (delta-rs' default is
snappy; pyiceberg's zstd), so both tables hold the same rows in about the same bytes. Each table is
read once per run with Trigger.AvailableNow into the no-op sink: Sluice's source against
`spark.readStream.parquet` over the table's data files, the nearest Spark 4.3 has (it has no
Iceberg or Delta stream of its own). Spark's side is tuned as a careful user would: no
`maxFilesPerTrigger` (one batch), the vectorized reader on, `spark.sql.files.maxPartitionBytes`
at 128 MB (a data file a task on the tables written here). The sides run as interleaved pairs
after a warm-up each (bench/pairs.py); `iceberg_ratio` and `delta_ratio` are medians of the
per-pair ratios of rows/s of the same query (the table's columns into the sink: Sluice / Spark).
Sluice's default rows, with its three provenance columns (the data file's path among them, copied
into every row), run as a third side of the same rounds: `iceberg_ratio_provenance`,
`delta_ratio_provenance` (Spark's rows carry no such column).

(b) Event time. A 24-hour table (SLUICE_BENCH_TABLE_HISTORY_EPS events a second, default 2) is
written as one data file per hour, committed in a shuffled hour order (a backfill of late
partitions), with row groups of five minutes of events. A 1-minute tumbling window counted under
a 10-minute watermark runs over it: Spark's Parquet stream over the same files, a file a batch in
commit order (how a stream sees a table grow commit by commit), and Sluice with `timestampColumn`
and watermark alignment (drift `auto`: the watermark's delay) over each table. Each side reports
the rows Spark's watermark dropped as late, the windows whose final count differs from the true
count computed from the written rows, and the peak state rows over its batches. Spark's stream
with every file in one batch is run too: it drops nothing, but holds every window in its state
until the end, which is what the per-file batches avoid and what it costs them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import sluice
from deltalake import WriterProperties, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import DeltaSource, IcebergSource, WatermarkStrategy

from bench.common import machine, rows_read, run_available_now, session
from bench.pairs import interleaved, pairs_from_env, summary

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "scratch" / "table_history"
RESULT = ROOT / "results" / "table_history.json"
MASTER = "local[2]"
#: Spark's side of (a), tuned; recorded in the result
SPARK_CONF = {
    "spark.sql.parquet.enableVectorizedReader": "true",
    "spark.sql.files.maxPartitionBytes": str(128 * 1024 * 1024),
}
#: compressed Parquet bytes a row of (a) takes in zstd (measured on the written tables: about 23)
BYTES_PER_ROW = 23
CHUNK_ROWS = 2_000_000  # one commit, one data file of about 45 MB on each table
START_MS = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)
MINUTE = 60_000
HOURS = 24
ROW_GROUP_MINUTES = 5
WATERMARK = "10 minutes"


def _catalog(where: Path) -> SqlCatalog:
    where.mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{where / 'catalog.db'}", warehouse=(where / "warehouse").as_uri()
    )
    catalog.create_namespace_if_not_exists("db")
    return catalog


def _chunk(first: int, rows: int) -> pa.Table:
    """Rows first..first+rows of (a): ids, a user of 1,000, an amount, a timestamp, a random tag."""
    ids = np.arange(first, first + rows, dtype=np.int64)
    rng = np.random.default_rng(first)
    return pa.table(
        {
            "id": ids,
            "user": pa.array([f"user-{i}" for i in ids % 1000]),
            "amount": rng.random(rows) * 1000,
            "ts": pa.array((START_MS + ids) * 1000, pa.timestamp("us", tz="UTC")),
            "tag": pa.array(rng.integers(0, 2**62, rows).astype(str)),
        }
    )


def _write_tables(
    where: Path,
    chunks: Iterable[pa.Table],
    delta_props: WriterProperties | None = None,
    iceberg_props: dict[str, str] | None = None,
) -> dict[str, str]:
    """Both tables of `chunks` (one commit each, in order; made one at a time, so a gigabyte of rows
    is never in memory at once): {"iceberg": metadata, "delta": dir, "iceberg_data": the Iceberg
    table's data folder}."""
    shutil.rmtree(where, ignore_errors=True)
    catalog, delta, table = _catalog(where), where / "delta", None
    for chunk in chunks:
        if table is None:
            table = catalog.create_table("db.t", schema=chunk.schema, properties=iceberg_props or {})
        table.append(chunk)
        write_deltalake(delta, chunk, mode="append", writer_properties=delta_props)
    table = table.refresh()
    return {
        "iceberg": table.metadata_location,
        "iceberg_data": table.location().removeprefix("file://") + "/data",
        "delta": str(delta),
    }


def _throughput_tables(gigabytes: float) -> tuple[dict[str, str], int]:
    where = WORK / "throughput"
    marker = where / "meta.json"
    if marker.exists() and json.loads(marker.read_text())["gigabytes"] == gigabytes:
        meta = json.loads(marker.read_text())
        return meta["tables"], meta["rows"]
    rows = int(gigabytes * 1024**3 / BYTES_PER_ROW)
    starts = range(0, rows, CHUNK_ROWS)
    # pyiceberg writes zstd by default, delta-rs snappy: both zstd, so both tables hold the same bytes
    zstd = WriterProperties(compression="ZSTD")
    tables = _write_tables(where, (_chunk(s, min(CHUNK_ROWS, rows - s)) for s in starts), delta_props=zstd)
    marker.write_text(json.dumps({"gigabytes": gigabytes, "rows": rows, "tables": tables}))
    return tables, rows


def _parquet_bytes(folder: str) -> tuple[int, int]:
    files = [f for f in Path(folder).rglob("*.parquet") if "_delta_log" not in f.parts]
    return len(files), sum(f.stat().st_size for f in files)


def _rate(make: Callable[[], DataFrame], rows: int, label: str) -> Callable[[], float]:
    def once() -> float:
        seconds, progress = run_available_now(make())
        if rows_read(progress) != rows:
            raise AssertionError(f"{label} read {rows_read(progress)} rows, expected {rows}")
        return rows / seconds

    return once


def _throughput(spark: SparkSession, gigabytes: float, pairs: int) -> dict:
    tables, rows = _throughput_tables(gigabytes)
    schema = spark.read.parquet(tables["iceberg_data"]).schema
    result: dict = {"rows": rows, "spark_conf": SPARK_CONF}
    for fmt, data, make_source in (
        ("iceberg", tables["iceberg_data"], lambda: IcebergSource.builder().table(tables["iceberg"]).build()),
        ("delta", tables["delta"], lambda: DeltaSource.builder().table(tables["delta"]).build()),
    ):

        def sluice_rows(make_source=make_source, fmt=fmt) -> DataFrame:
            return sluice.from_source(spark, make_source(), name=f"history_{fmt}")

        sides = {
            "spark": lambda data=data: spark.readStream.schema(schema).parquet(data),
            # the same query as Spark's: the table's columns; the provenance columns go unread
            "sluice": lambda sluice_rows=sluice_rows: sluice_rows().select(*schema.fieldNames()),
            # Sluice's default rows: the table's columns and the three provenance columns
            "sluice_provenance": sluice_rows,
        }
        measured = interleaved(
            {name: _rate(make, rows, f"{name} {fmt}") for name, make in sides.items()},
            pairs,
            label=f"{fmt} ",
            unit="rows/s",
        )
        files, size = _parquet_bytes(data)
        result.update(
            {
                f"{fmt}_files": files,
                f"{fmt}_bytes": size,
                f"{fmt}_spark_rps": statistics.median(measured["spark"]),
                f"{fmt}_sluice_rps": statistics.median(measured["sluice"]),
                f"{fmt}_sluice_provenance_rps": statistics.median(measured["sluice_provenance"]),
                **summary(f"{fmt}_ratio", measured["sluice"], measured["spark"]),
                **summary(f"{fmt}_ratio_provenance", measured["sluice_provenance"], measured["spark"]),
            }
        )
    return result


def _hour(hour: int, per_second: int) -> pa.Table:
    step_ms = 1000 // per_second
    first = hour * 3_600_000
    ts = np.arange(first, first + 3_600_000, step_ms, dtype=np.int64) + START_MS
    return pa.table(
        {
            "id": np.arange(len(ts), dtype=np.int64) + hour * len(ts),
            "ts": pa.array(ts * 1000, pa.timestamp("us", tz="UTC")),
        }
    )


def _event_time_tables(per_second: int) -> tuple[dict[str, str], list[int], dict[int, int]]:
    """The 24-hour tables, the commit order of their hours, and the true count of every window."""
    order = list(range(HOURS))
    random.Random(29).shuffle(order)
    group_rows = ROW_GROUP_MINUTES * 60 * per_second
    tables = _write_tables(
        WORK / "event_time",
        (_hour(h, per_second) for h in order),
        delta_props=WriterProperties(max_row_group_size=group_rows, write_batch_size=group_rows),
        iceberg_props={"write.parquet.row-group-limit": str(group_rows)},
    )
    per_window = 60 * per_second
    expected = {START_MS + m * MINUTE: per_window for m in range(HOURS * 60)}
    return tables, order, expected


def _windows(spark: SparkSession, df: DataFrame, column: str, table: str, expected: dict[int, int]) -> dict:
    counts = df.withWatermark(column, WATERMARK).groupBy(F.window(column, "1 minute")).count()
    seconds, progress = run_available_now(
        counts, sink=lambda w: w.format("memory").queryName(table).outputMode("update")
    )
    final: dict[int, int] = {}
    for row in spark.table(table).collect():
        start = int(row.window.start.timestamp() * 1000)
        final[start] = max(final.get(start, 0), row["count"])
    return {
        "late_dropped": sum(op["numRowsDroppedByWatermark"] for p in progress for op in p["stateOperators"]),
        "wrong_windows": sum(1 for w, n in expected.items() if final.get(w) != n),
        # numRowsDroppedByWatermark counts rows after the partial aggregation (a window's rows of a
        # task count once): the events the final counts lack say how many events were lost
        "missing_events": sum(max(0, n - final.get(w, 0)) for w, n in expected.items()),
        "peak_state_rows": max(
            (sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in progress), default=0
        ),
        "rows": rows_read(progress),
        "batches": sum(1 for p in progress if p["numInputRows"] > 0),
        "seconds": seconds,
    }


def _event_time(spark: SparkSession, per_second: int) -> dict:
    tables, order, expected = _event_time_tables(per_second)
    data = tables["iceberg_data"]
    schema = spark.read.parquet(data).schema
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("history", "auto")
    runs = {
        # a file a batch in commit order: Spark lists files by modification time
        "spark": _windows(
            spark,
            spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(data),
            "ts",
            "th_spark",
            expected,
        ),
        "spark_one_batch": _windows(
            spark, spark.readStream.schema(schema).parquet(data), "ts", "th_spark_one", expected
        ),
    }
    for fmt, builder in (("iceberg", IcebergSource.builder()), ("delta", DeltaSource.builder())):
        source = builder.table(tables[fmt]).timestamp_column("ts").build()
        df = sluice.from_source(spark, source, strategy, name=f"history_aligned_{fmt}")
        runs[f"sluice_{fmt}"] = _windows(spark, df, "event_time", f"th_sluice_{fmt}", expected)
    rows = HOURS * 3600 * per_second
    for name, run in runs.items():
        if run["rows"] != rows:
            raise AssertionError(f"{name} read {run['rows']} rows, expected {rows}")
    sluice_runs = [runs["sluice_iceberg"], runs["sluice_delta"]]
    return {
        "event_rows": rows,
        "hours": HOURS,
        "events_per_second": per_second,
        "windows": len(expected),
        "hour_commit_order": order,
        "row_group_minutes": ROW_GROUP_MINUTES,
        "event_time_runs": runs,
        "late_dropped_spark": runs["spark"]["late_dropped"],
        "missing_events_spark": runs["spark"]["missing_events"],
        "wrong_windows_spark": runs["spark"]["wrong_windows"],
        "peak_state_rows_spark": runs["spark"]["peak_state_rows"],
        # the worse of the two tables
        "late_dropped_sluice": max(r["late_dropped"] for r in sluice_runs),
        "wrong_windows_sluice": max(r["wrong_windows"] for r in sluice_runs),
        "missing_events_sluice": max(r["missing_events"] for r in sluice_runs),
        "peak_state_rows_sluice": max(r["peak_state_rows"] for r in sluice_runs),
    }


def run() -> dict:
    gigabytes = float(os.environ.get("SLUICE_BENCH_TABLE_HISTORY_GB", "1"))
    per_second = int(os.environ.get("SLUICE_BENCH_TABLE_HISTORY_EPS", "2"))
    if per_second < 1 or 1000 % per_second:
        raise ValueError(f"SLUICE_BENCH_TABLE_HISTORY_EPS must divide 1000, got {per_second}")
    pairs = pairs_from_env()
    load = os.getloadavg()
    started = time.perf_counter()
    spark = session("bench-table-history", master=MASTER, driver_memory="3g", conf=SPARK_CONF)
    try:
        result: dict = {"benchmark": "table_history", "gigabytes": gigabytes, "pairs": pairs}
        result.update(_throughput(spark, gigabytes, pairs))
        result.update(_event_time(spark, per_second))
        result["machine"] = machine(
            MASTER,
            load_average_start=load[0],
            load_average_end=os.getloadavg()[0],
            wall_seconds=round(time.perf_counter() - started),
        )
    finally:
        spark.stop()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, list | dict)}, indent=2))
    return result

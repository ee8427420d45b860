"""Iceberg and Delta tables in real-time mode and continuous processing: a bounded read of the
table's current snapshot or version, then an unbounded one (monitor_interval) that also reads an
append committed while it runs; rows are the writer library's own read as multisets. The Delta
table is also read with column mapping (unpartitioned: continuous processing holds a task slot per
split, and a partitioned first version's splits would take both of local[2]'s, leaving none for the
test's reads of the memory sink)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import sluice
import test_delta_column_mapping as mapped
import test_delta_source as delta
import test_iceberg_source as iceberg
from deltalake import write_deltalake
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sluice import DeltaSource, IcebergSource

pytestmark = pytest.mark.slow


class _Table:
    """A table written by its format's own Python writer, and that writer's read of it now."""

    def __init__(self, fmt: str, tmp_path: Path) -> None:
        self.fmt = fmt
        if fmt == "iceberg":
            self.iceberg = iceberg._catalog(tmp_path).create_table("db.open", schema=iceberg.SCHEMA)
        else:
            self.path = tmp_path / "delta"
        self.append(range(0, 20))

    def append(self, ids: range) -> None:
        if self.fmt == "iceberg":
            self.iceberg.append(iceberg._events(ids, ids.start))
        elif self.fmt == "delta-mapped":
            mapping = {"delta.columnMapping.mode": "name"}
            write_deltalake(self.path, delta._events(ids), mode="append", configuration=mapping)
        else:
            write_deltalake(self.path, delta._events(ids), mode="append")

    def expected(self) -> Counter[tuple[Any, ...]]:
        if self.fmt == "iceberg":
            return iceberg._expected(self.iceberg.refresh())
        if self.fmt == "delta-mapped":  # delta-rs' SQL read: its to_pyarrow_table reads nulls
            return mapped._expected(self.path)
        return delta._expected(self.path)

    def source(self, monitor: bool) -> Any:
        if self.fmt == "iceberg":
            builder = IcebergSource.builder().table(self.iceberg.refresh().metadata_location)
        else:
            builder = DeltaSource.builder().table(str(self.path))
        return (builder.monitor_interval(200) if monitor else builder).build()


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as the JSON lines of the real-time sink give it back (dates as ISO text)."""
    return tuple(v.isoformat() if isinstance(v, date) else v for v in row)


class _Sink:
    """Where an open-batch query's rows land. Real-time mode allows no memory sink (Spark's
    allowlist): its rows go to JSON lines by a foreach writer, one file per Python worker.
    Continuous processing writes to the memory sink."""

    def __init__(self, name: str, mode: str, folder: Path) -> None:
        self.name, self.mode, self.folder = name, mode, folder
        folder.mkdir()

    def start(self, df: DataFrame, checkpoint: Path) -> StreamingQuery:
        # event times as epoch microseconds, as the writers' reads give them
        df = df.drop("_timestamp").withColumn("ts", F.unix_micros("ts"))
        if "day" in df.columns:
            df = df.withColumn("day", F.col("day").cast("string"))
        writer = df.writeStream.outputMode("update").option("checkpointLocation", str(checkpoint))
        if self.mode == "continuous":
            return writer.format("memory").queryName(self.name).trigger(continuous="500 milliseconds").start()
        folder = str(self.folder)

        def write(row: Any) -> None:  # runs in Python workers: one file per process
            with open(os.path.join(folder, f"{os.getpid()}.json"), "a") as out:
                out.write(json.dumps(row.asDict()) + "\n")

        return writer.foreach(write).trigger(realTime="5 seconds").start()

    def rows(self, spark: SparkSession) -> Counter[tuple[Any, ...]]:
        """The sink's rows, data columns in name order. Continuous processing reads at least once
        (a reconfiguration restarts the tasks from the last epoch): a row read again has the same
        split and position, so it is counted once there; real-time mode must give each row once."""
        if self.mode == "continuous":
            read = [
                r.asDict() for r in spark.table(self.name).dropDuplicates(["_split", "_position"]).collect()
            ]
        else:
            read = [
                json.loads(line) for f in self.folder.glob("*.json") for line in f.read_text().splitlines()
            ]
        return Counter(
            _plain(tuple(r[c] for c in sorted(r) if c not in ("_split", "_position"))) for r in read
        )

    def wait_for(self, spark: SparkSession, expected: Counter[tuple[Any, ...]], what: str) -> None:
        expected = Counter({_plain(k): n for k, n in expected.items()})
        deadline = time.monotonic() + 90
        while (got := self.rows(spark)) != expected:
            assert (
                time.monotonic() < deadline
            ), f"{self.name}, {what}: after 90 s {sum(got.values())} rows: {got}"
            time.sleep(0.2)


@pytest.mark.parametrize("mode", ["real-time", "continuous"])
@pytest.mark.parametrize("fmt", ["iceberg", "delta", "delta-mapped"])
def test_a_table_in_an_open_batch_mode_reads_its_snapshot_then_what_is_appended(
    spark: SparkSession, tmp_path: Path, fmt: str, mode: str
) -> None:
    table = _Table(fmt, tmp_path)
    for monitor in (False, True):
        name = f"py_{fmt.replace('-', '_')}_{mode.replace('-', '_')}_{'unbounded' if monitor else 'bounded'}"
        sink = _Sink(name, mode, tmp_path / name)
        query = sink.start(
            sluice.from_source(spark, table.source(monitor), name=name), tmp_path / f"ckpt-{name}"
        )
        try:
            sink.wait_for(spark, table.expected(), "the start's rows")
            if monitor:
                table.append(range(20, 35))  # committed while the query runs
                sink.wait_for(spark, table.expected(), "the appended rows")
                assert sum(table.expected().values()) == 35
            assert query.exception() is None
        finally:
            query.stop()

"""A Sluice source read into a Parquet sink on a checkpoint, as the table sources' tests read, stop
and restart one: Spark's file sink keeps each row once, so the sink holds each row the query read
once, whatever its restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sluice
from pyspark.sql import SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery


def to_parquet(
    spark: SparkSession, source: Any, tmp_path: Path, name: str, where: str | None = None
) -> DataStreamWriter:
    """`source` read (as `name`, without Sluice's metadata columns, filtered by `where` if given) into
    the Parquet sink `tmp_path / "sink"` on the checkpoint `tmp_path / "checkpoint"`: a sink and a
    checkpoint a restart goes on. The trigger is the caller's."""
    rows = sluice.from_source(spark, source, name=name)
    return (
        (rows.where(where) if where else rows)
        .drop("_split", "_position", "_timestamp")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "sink"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )


def to_parquet_running(
    spark: SparkSession, source: Any, tmp_path: Path, name: str, where: str | None = None
) -> StreamingQuery:
    """`to_parquet` started on a 100 ms processing-time trigger: each trigger plans, so an unbounded
    table source finds what was committed since within a trigger or two."""
    return to_parquet(spark, source, tmp_path, name, where).trigger(processingTime="100 milliseconds").start()


def to_parquet_available_now(spark: SparkSession, source: Any, tmp_path: Path, name: str) -> StreamingQuery:
    """`to_parquet` under Trigger.AvailableNow, started: it reads what is there, then ends."""
    return to_parquet(spark, source, tmp_path, name).trigger(availableNow=True).start()


def run_to_parquet_available_now(spark: SparkSession, source: Any, tmp_path: Path, name: str) -> None:
    """`to_parquet_available_now` run to its end, which must come within 120 s and without error."""
    query = to_parquet_available_now(spark, source, tmp_path, name)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None

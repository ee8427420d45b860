"""Compact records and latency tracking from Python."""

from __future__ import annotations

import pytest
import sluice
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from sluice import GeneratorSource, SluiceConfigError, WatermarkStrategy


def source() -> sluice.Source:
    return GeneratorSource.builder().splits(2).records_per_split(500).build()


def run(spark: SparkSession, df, table: str, checkpoint: str):  # noqa: ANN001, ANN201
    q = (
        df.writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(120), "the query did not end within 120 s"
    assert q.exception() is None
    return q


def test_configure_adds_the_extension_once() -> None:
    builder = sluice.configure(sluice.configure(SparkSession.builder))
    assert builder._options["spark.sql.extensions"] == "sluice.spark.SluiceExtensions"  # noqa: SLF001


def test_compact_rows_hold_the_payload_only(spark: SparkSession, checkpoint: str) -> None:
    df = sluice.from_source(spark, source(), options={"forceTimestampSupport": False})
    assert df.columns == ["id", "payload"]
    run(spark, df, "py_compact", checkpoint)
    rows = spark.table("py_compact").collect()
    assert sorted(r.id for r in rows) == list(range(1000))


def test_event_time_on_a_compact_source_names_compact_mode(spark: SparkSession) -> None:
    df = sluice.from_source(spark, source(), name="numbers", options={"forceTimestampSupport": "false"})
    with pytest.raises(
        AnalysisException,
        match="runs in compact mode \\(forceTimestampSupport=false\\)",
    ):
        df.withWatermark("event_time", "1 minute")


def test_a_strategy_with_compact_records_fails_at_build(spark: SparkSession) -> None:
    with pytest.raises(SluiceConfigError, match="conflicts with the watermark strategy"):
        sluice.from_source(
            spark,
            source(),
            WatermarkStrategy.for_monotonous_timestamps(),
            options={"forceTimestampSupport": "false"},
        )


def test_latency_figures_in_progress_never_in_rows(spark: SparkSession, checkpoint: str) -> None:
    df = sluice.from_source(spark, source(), options={"latencyTrackingInterval": "1ms"})
    q = run(spark, df, "py_latency", checkpoint)
    assert spark.table("py_latency").columns == ["id", "split", "timestamp", "payload"]
    metrics = [p for p in q.recentProgress if p["numInputRows"] > 0][-1]["sources"][0]["metrics"]
    assert int(metrics["latency.markers"]) >= 2
    assert int(metrics["latency.p50Ms"]) <= int(metrics["latency.p99Ms"]) <= int(metrics["latency.maxMs"])

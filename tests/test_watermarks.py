"""Watermark strategies from Python: options, the event_time column, alignment through Spark."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sluice
from sluice import GeneratorSource, SluiceConfigError, WatermarkStrategy

MINUTE = 60_000
START_MS = 1_700_000_000_000
SKEW_MS = {0: -22 * 60 * MINUTE}
SPLITS, RECORDS_PER_SPLIT = 4, 300


def test_builders_produce_the_documented_options() -> None:
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=30))
        .with_timestamp_column("ts")
        .with_idleness(timedelta(minutes=1))
        .with_watermark_alignment(
            "orders", max_drift=timedelta(minutes=5), update_interval=500
        )
        .with_allow_unaligned_source_splits()
    )
    assert strategy.options == {
        "watermark.kind": "boundedOutOfOrderness",
        "watermark.maxOutOfOrdernessMs": "30000",
        "watermark.timestampColumn": "ts",
        "watermark.idleTimeoutMs": "60000",
        "watermark.alignment.group": "orders",
        "watermark.alignment.maxDriftMs": "300000",
        "watermark.alignment.updateIntervalMs": "500",
        "watermark.alignment.allowUnalignedSourceSplits": "true",
    }
    assert WatermarkStrategy.for_monotonous_timestamps().options == {
        "watermark.kind": "monotonous"
    }
    # each with_* returns a new strategy
    base = WatermarkStrategy.for_monotonous_timestamps()
    base.with_idleness(5)
    assert base == WatermarkStrategy.for_monotonous_timestamps()


def test_durations_are_checked() -> None:
    with pytest.raises(ValueError, match="max_drift must not be negative"):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("g", -1)
    with pytest.raises(
        TypeError, match="timeout must be a datetime.timedelta or milliseconds"
    ):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness("1 minute")  # type: ignore[arg-type]


def skewed_source() -> sluice.Source:
    # split 0 starts 22 h before the others; 300 records a split, one a minute
    return (
        GeneratorSource.builder()
        .splits(SPLITS)
        .records_per_split(RECORDS_PER_SPLIT)
        .event_time_start_ms(START_MS)
        .event_time_step_ms(MINUTE)
        .split_skew_ms(0, SKEW_MS[0])
        .build()
    )


def expected_window_counts() -> Counter[int]:
    """Records per 1-minute window (by start, epoch ms), from the generator's definition: record
    i of split s is at START_MS + skew(s) + i * MINUTE."""
    return Counter(
        (START_MS + SKEW_MS.get(s, 0) + i * MINUTE) // MINUTE * MINUTE
        for s in range(SPLITS)
        for i in range(RECORDS_PER_SPLIT)
    )


def test_alignment_keeps_every_window_count_exact(
    spark: SparkSession, checkpoint: str
) -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "py", max_drift=timedelta(minutes=5)
    )
    df = sluice.from_source(
        spark,
        skewed_source(),
        strategy,
        name="aligned",
        options={"maxRecordsPerTrigger": 100},
    )
    assert df.columns[-1] == "event_time"
    counts = (
        df.withWatermark("event_time", "10 minutes")
        .groupBy(F.window("event_time", "1 minute"))
        .count()
    )
    q = (
        counts.writeStream.format("memory")
        .queryName("py_aligned")
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(180), "the AvailableNow query did not end within 180 s"
    assert q.exception() is None
    dropped = sum(
        op["numRowsDroppedByWatermark"]
        for p in q.recentProgress
        for op in p["stateOperators"]
    )
    assert dropped == 0
    # update mode writes a window again whenever its count changes: its last count is the largest
    final: dict[int, int] = {}
    for row in spark.table("py_aligned").collect():
        start = round(row.window.start.timestamp() * 1000)
        final[start] = max(final.get(start, 0), row["count"])
    expected = expected_window_counts()
    assert sum(expected.values()) == 1200
    wrong = {w: (final.get(w), n) for w, n in expected.items() if final.get(w) != n}
    assert (
        not wrong
    ), f"windows (start ms: (counted, expected)) with a wrong count: {wrong}"
    assert set(final) == set(
        expected
    ), f"windows that hold no record: {sorted(set(final) - set(expected))}"
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    for p in batches:
        metrics = p["sources"][0]["metrics"]
        assert metrics["alignment.group"] == "py"
        watermarks = [
            s["watermarkMs"]
            for s in json.loads(metrics["watermark.splits"])
            if not s["finished"] and "watermarkMs" in s
        ]
        if watermarks:
            assert max(watermarks) - min(watermarks) <= 6 * MINUTE


def test_alignment_without_event_time_is_refused_when_the_source_is_built(
    spark: SparkSession,
) -> None:
    strategy = WatermarkStrategy(
        {"watermark.alignment.group": "g", "watermark.alignment.maxDriftMs": "1"}
    )
    with pytest.raises(
        SluiceConfigError,
        match="need event time, but the watermark strategy is noWatermarks",
    ):
        sluice.from_source(spark, skewed_source(), strategy)

"""Watermark strategies from Python: options, the event_time column (and its renaming), alignment
through Spark."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sluice
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from sluice import FileSource, GeneratorSource, SluiceConfigError, WatermarkStrategy
from window_counts import late_dropped, window_counts

MINUTE = 60_000
START_MS = 1_700_000_000_000
SKEW_MS = {0: -22 * 60 * MINUTE}
SPLITS, RECORDS_PER_SPLIT = 4, 300


def test_builders_produce_the_documented_options() -> None:
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=30))
        .with_timestamp_column("ts")
        .with_idleness(timedelta(minutes=1))
        .with_watermark_alignment("orders", max_drift=timedelta(minutes=5), update_interval=500)
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
    assert WatermarkStrategy.for_monotonous_timestamps().options == {"watermark.kind": "monotonous"}
    # each with_* returns a new strategy
    base = WatermarkStrategy.for_monotonous_timestamps()
    base.with_idleness(5)
    base.with_event_time_column("et")
    assert base == WatermarkStrategy.for_monotonous_timestamps()
    assert base.with_event_time_column("et").options == {
        "watermark.kind": "monotonous",
        "watermark.eventTimeColumn": "et",
    }


def test_durations_are_checked() -> None:
    with pytest.raises(ValueError, match="max_drift must not be negative"):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("g", -1)
    with pytest.raises(TypeError, match="timeout must be a datetime.timedelta or milliseconds"):
        WatermarkStrategy.for_monotonous_timestamps().with_idleness("1 minute")  # type: ignore[arg-type]


def test_the_event_time_column_name_is_checked_without_a_jvm() -> None:
    with pytest.raises(TypeError, match="name must be a str"):
        WatermarkStrategy.for_monotonous_timestamps().with_event_time_column(1)  # type: ignore[arg-type]
    with pytest.raises(
        SluiceConfigError,
        match="invalid value ' ' for option 'watermark.eventTimeColumn'; allowed: a non-empty name",
    ):
        WatermarkStrategy.for_monotonous_timestamps().with_event_time_column(" ")


def skewed_source() -> sluice.Source:
    # split 0 starts 22 h before the others; 300 records a split, one a minute
    return (
        GeneratorSource.builder()
        .splits(SPLITS)
        .records_per_split(RECORDS_PER_SPLIT)
        .event_time_start_ms(START_MS)
        .event_time_step(MINUTE)
        .split_skew(0, SKEW_MS[0])
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


def test_alignment_keeps_every_window_count_exact(spark: SparkSession, checkpoint: str) -> None:
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
    counts = df.withWatermark("event_time", "10 minutes").groupBy(F.window("event_time", "1 minute")).count()
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
    dropped = sum(op["numRowsDroppedByWatermark"] for p in q.recentProgress for op in p["stateOperators"])
    assert dropped == 0
    # update mode writes a window again whenever its count changes: its last count is the largest
    final: dict[int, int] = {}
    for row in spark.table("py_aligned").collect():
        start = round(row.window.start.timestamp() * 1000)
        final[start] = max(final.get(start, 0), row["count"])
    expected = expected_window_counts()
    assert sum(expected.values()) == 1200
    wrong = {w: (final.get(w), n) for w, n in expected.items() if final.get(w) != n}
    assert not wrong, f"windows (start ms: (counted, expected)) with a wrong count: {wrong}"
    assert set(final) == set(expected), f"windows that hold no record: {sorted(set(final) - set(expected))}"
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


def test_auto_drift_is_the_query_watermark_delay_minus_the_out_of_orderness(
    spark: SparkSession, checkpoint: str
) -> None:
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(timedelta(minutes=1)).with_watermark_alignment(
        "py-auto", max_drift="auto"
    )
    assert strategy.options["watermark.alignment.maxDriftMs"] == "auto"
    df = sluice.from_source(
        spark, skewed_source(), strategy, name="auto", options={"maxRecordsPerTrigger": 100}
    )
    q = window_counts(df, "event_time", "py_auto_drift", checkpoint)
    read = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert read
    for p in read:
        assert p["sources"][0]["metrics"]["alignment.maxDriftMs"] == str(9 * MINUTE - 1)
        assert p["sources"][0]["metrics"]["alignment.maxDriftAuto"] == "true"
    assert late_dropped(q) == 0


def test_auto_drift_without_a_query_watermark_fails_when_the_query_starts(
    spark: SparkSession, checkpoint: str
) -> None:
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "py-auto", max_drift="auto"
    )
    df = sluice.from_source(spark, skewed_source(), strategy, name="unwatched")
    with pytest.raises(
        AnalysisException,
        match=r"Sluice generator source 'unwatched': maxDrift 'auto' is the withWatermark delay of "
        r"the query on the source's event-time column 'event_time' minus the watermark "
        r"strategy's out-of-orderness, but this query has no withWatermark on 'event_time'\. "
        r"Add \.withWatermark\(\"event_time\", \"<delay>\"\) after reading the source, or give "
        r"a fixed maxDrift\.",
    ):
        df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()


def test_auto_drift_is_the_only_word_max_drift_takes() -> None:
    with pytest.raises(
        ValueError, match="max_drift must be a datetime.timedelta, milliseconds as an int, or 'auto'"
    ):
        WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment("g", "automatic")


def test_alignment_without_event_time_is_refused_when_the_source_is_built(
    spark: SparkSession,
) -> None:
    strategy = WatermarkStrategy({"watermark.alignment.group": "g", "watermark.alignment.maxDriftMs": "1"})
    with pytest.raises(
        SluiceConfigError,
        match="need event time, but the watermark strategy is noWatermarks",
    ):
        sluice.from_source(spark, skewed_source(), strategy)


# JSON lines whose own column event_time holds the event time: 30 records a minute apart from
# minute 100 on, then 10 records of minutes 0 to 9, far behind Spark's watermark after the first batch.
BASE_MS = START_MS // MINUTE * MINUTE
ON_TIME = {i: BASE_MS + (100 + i) * MINUTE + 123 for i in range(30)}
LATE = {100 + i: BASE_MS + i * MINUTE + 456 for i in range(10)}


def event_time_files(directory: Path) -> sluice.Source:
    directory.mkdir()
    lines = [
        json.dumps(
            {
                "id": i,
                "event_time": datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds"),
            }
        )
        for i, ms in {**ON_TIME, **LATE}.items()
    ]
    (directory / "part-0.json").write_text("\n".join(lines) + "\n")
    return (
        FileSource.builder()
        .path(str(directory))
        .format("json")
        .schema("id INT, event_time TIMESTAMP")
        .build()
    )


def millis(ts: datetime) -> int:
    return round(ts.timestamp() * 1000)


def test_a_source_with_its_own_event_time_column_renames_the_added_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    files = event_time_files(tmp_path / "data")
    renamed = (
        WatermarkStrategy.for_bounded_out_of_orderness(0)
        .with_timestamp_column("event_time")
        .with_event_time_column("et")
    )
    df = sluice.from_source(spark, files, renamed, name="renamed")
    assert df.columns == ["id", "event_time", "_split", "_position", "_timestamp", "et"]
    rows = (
        df.writeStream.format("memory")
        .queryName("py_renamed_rows")
        .option("checkpointLocation", str(tmp_path / "rows"))
        .trigger(availableNow=True)
        .start()
    )
    assert rows.awaitTermination(180), "the AvailableNow query did not end within 180 s"
    assert rows.exception() is None
    by_id = {r.id: millis(r.et) for r in spark.table("py_renamed_rows").collect()}
    # the data's event times exactly, milliseconds included
    assert by_id == {**ON_TIME, **LATE}

    # Spark's watermark on et: the first batch (about 20 records) holds on-time records only, so
    # every later batch is past the late records, which it drops, and only those
    limited = sluice.from_source(spark, files, renamed, name="renamed", options={"maxRecordsPerTrigger": 10})
    q = window_counts(limited, "et", "py_renamed_counts", tmp_path / "counts")
    assert sum(1 for p in q.recentProgress if p["numInputRows"] > 0) > 1
    assert late_dropped(q) == len(LATE)
    final: dict[int, int] = {}
    for row in spark.table("py_renamed_counts").collect():
        start = millis(row.window.start)
        final[start] = max(final.get(start, 0), row["count"])
    assert final == {ms // MINUTE * MINUTE: 1 for ms in ON_TIME.values()}


def test_a_clash_with_the_event_time_column_names_the_option(spark: SparkSession, tmp_path: Path) -> None:
    files = event_time_files(tmp_path / "data")
    unrenamed = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_column("event_time")
    with pytest.raises(
        SluiceConfigError,
        match=r"already has a column named 'event_time'.*option 'watermark.eventTimeColumn'.*"
        r"choose another name",
    ):
        sluice.from_source(spark, files, unrenamed)

"""sluice.status and sluice.plot on real queries: a skewed generator under alignment, a Kafka topic
with an idle partition, and a files → Kafka hybrid with alignment across the switch."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import sluice
from pyspark.sql import SparkSession
from sluice import (
    FileSource,
    GeneratorSource,
    HybridSource,
    KafkaSource,
    OffsetsInitializer,
    WatermarkStrategy,
)
from sluice._plot import _time
from sluice.testing import EmbeddedKafka

MINUTE = 60_000
START_MS = 1_700_000_000_000
MAX_WATERMARK = 2**63 - 1
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def unwatched_after(spark: SparkSession) -> Iterator[None]:
    """The listener the status calls register stays with this module's queries, not the next suites'."""
    yield
    sluice.unwatch(spark)
    sluice.unwatch(spark)  # removing twice is harmless


def ms(value: pd.Timestamp) -> int | None:
    return None if pd.isna(value) else value.value // 1_000_000


def metrics_of(query, batch_id: int, source: int = 0) -> dict[str, str]:
    """What Spark's own progress of that batch says the source reported."""
    progress = next(p for p in query.recentProgress if p.batchId == batch_id)
    return progress.sources[source].metrics


def run_available_now(spark: SparkSession, df, checkpoint: str):
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the AvailableNow query did not end within 180 s"
    assert query.exception() is None
    return query


def test_alignment_pauses_splits_and_the_table_says_why(spark: SparkSession, checkpoint: str) -> None:
    # split 0 starts 2 h before the others: alignment (drift 5 min) pauses 1..3 until it catches up
    source = (
        GeneratorSource.builder()
        .splits(4)
        .records_per_split(300)
        .event_time_start_ms(START_MS)
        .event_time_step(MINUTE)
        .split_skew(0, -120 * MINUTE)
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "status", max_drift=timedelta(minutes=5)
    )
    df = sluice.from_source(spark, source, strategy, name="skewed", options={"maxRecordsPerTrigger": 100})
    query = run_available_now(spark, df, checkpoint)

    kept = [p.batchId for p in query.recentProgress if p.sources]
    assert len(kept) >= 5
    paused_seen = False
    for batch_id in kept:
        table = sluice.status(query, batch=batch_id)
        metrics = metrics_of(query, batch_id)
        assert list(table.columns) == sluice.STATUS_COLUMNS
        # a split read to its end leaves the source's checkpoint, and the table, a batch later
        held = [s["split"] for s in json.loads(metrics["splitProgress"])]
        assert list(table["split"]) == held and set(held) <= {"0", "1", "2", "3"}
        if batch_id == kept[0]:
            assert held == ["0", "1", "2", "3"]
        assert set(table["source"]) == {"skewed"} and set(table["source_type"]) == {"generator"}
        # every figure is the one the source reported for that batch
        by_split = {s["split"]: s for s in json.loads(metrics["watermark.splits"])}
        progress = {s["split"]: s for s in json.loads(metrics["splitProgress"])}
        for row in table.itertuples():
            wm = by_split[row.split].get("watermarkMs")
            assert ms(row.watermark) == (None if wm in (None, MAX_WATERMARK) else wm)
            assert ms(row.event_time) == progress[row.split].get("maxEventTimeMs")
            assert row.records == progress[row.split]["records"]
            assert row.backlog == progress[row.split]["backlogRecords"]
            assert ms(row.limit) == int(metrics["alignment.maxAllowedWatermarkMs"])
            if by_split[row.split]["paused"]:
                paused_seen = True
                assert (row.state, row.reason) == ("paused", "alignment limit")
                # held back: its next record lies past the limit, and it had records to read
                assert row.backlog > 0
        # the source's count holds the splits that left too
        assert int(metrics["recordsRead"]) == sum(
            int(p.sources[0].numInputRows)
            for p in query.recentProgress
            if p.sources and p.batchId <= batch_id
        )
    assert paused_seen, "no batch paused a split: the test's skew no longer exercises alignment"
    # batch 0: split 0 (2 h behind) reads, the others wait for it
    first = sluice.status(query, batch=kept[0])
    assert list(first["state"]) == ["reading", "paused", "paused", "paused"]
    # at the end every split is read to its end: split 0 (ahead) finished first and left the
    # table a batch later; the others finished in the last batch
    last = sluice.status(query)
    assert list(last["split"]) == ["1", "2", "3"]
    assert list(last["state"]) == ["finished"] * 3
    assert list(last["reason"]) == ["read to its end"] * 3
    assert list(last["records"]) == [300] * 3 and list(last["backlog"]) == [0] * 3
    assert last["event_time"].map(ms).tolist() == [START_MS + 299 * MINUTE] * 3
    final = metrics_of(query, kept[-1])
    assert final["recordsRead"] == "1200" and final["finishedSplits"] == "1"
    assert int(final["maxEventTimeMs"]) == START_MS + 299 * MINUTE
    # the rate is measured between kept batches: records per second, positive where records came
    rated = sluice.status(query, batch=kept[2])
    assert rated["rate"].iloc[0] > 0
    assert "paused" in repr(first) and "alignment limit" in first._repr_html_()

    # the plot explains itself: its legend says what the dashed line is; per batch a diamond marks
    # the split that set the group's minimum (never held back) and a cross each split the limit
    # paused; no other split ends a batch above the limit by more than the out-of-orderness, which
    # the docs state as the bound with an exact index (docs/event-time.md; 0 here, monotonous)
    axes = sluice.plot(query).axes[0]
    drawn = {line.get_label(): line for line in axes.lines}
    limit = drawn["alignment limit (group status): slowest split's watermark + max drift"]
    minimum = drawn["set group status's minimum: not held back by the limit"]
    limits = dict(zip(limit.get_xdata(), limit.get_ydata(), strict=True))
    minima = dict(zip(minimum.get_xdata(), minimum.get_ydata(), strict=True))
    assert sorted(limits) == [b for b in kept if "alignment.maxAllowedWatermarkMs" in metrics_of(query, b)]
    splits = {line.get_label(): line for line in axes.lines if line.get_label().startswith("skewed ")}
    points = {
        (x, label): y
        for label, line in splits.items()
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
    }
    # batch 0: split 0, two hours behind, set the minimum; the others waited for it
    assert metrics_of(query, kept[0])["alignment.minimumSplit"] == "0"
    assert minima[kept[0]] == points[(kept[0], "skewed 0")]
    # the diamond sits on the split the planner names in every batch that names one, and only there
    named = {x: f"skewed {metrics_of(query, x)['alignment.minimumSplit']}" for x in minima}
    assert all(minima[x] == points[(x, named[x])] for x in minima), (minima, named)
    above = [
        (x, label, y, limits[x])
        for (x, label), y in points.items()
        if x in limits and named.get(x) != label and y > limits[x]
    ]
    assert not above, f"splits other than the minimum above the limit: {above}"
    assert [x for (x, label) in points if x in limits and named.get(x) != label], "nothing checked"
    # the splits paused here had read nothing yet: no point to put a cross on
    assert _crosses(query, axes, "status", kept) == set()


def test_an_empty_partition_turns_idle_while_another_reads(
    spark: SparkSession, kafka: EmbeddedKafka, checkpoint: str
) -> None:
    kafka.create_topic("status-idle", partitions=2)
    kafka.produce(
        "status-idle",
        [{"value": str(i), "partition": 0, "timestamp": START_MS + i * 1000} for i in range(3000)],
    )
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("status-idle")
        .starting_offsets(OffsetsInitializer.earliest())
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(timedelta(milliseconds=200))
    df = sluice.from_source(spark, source, strategy, name="topic", options={"maxRecordsPerTrigger": 20})
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            last = query.lastProgress
            if last and last.sources and last.sources[0].metrics.get("watermark.idleSplits") == "1":
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"partition 1 never turned idle: {query.lastProgress}")
    finally:
        query.stop()
    table = sluice.status(query)
    metrics = query.recentProgress[-1].sources[0].metrics
    rows = {row.split: row for row in table.itertuples()}
    assert set(rows) == {"status-idle-0", "status-idle-1"}
    idle, reading = rows["status-idle-1"], rows["status-idle-0"]
    assert (idle.state, idle.reason, idle.records, idle.backlog) == (
        "idle",
        "idleness timeout",
        0,
        0,
    )
    assert pd.isna(idle.event_time) and idle.to_live == pd.Timedelta(0)
    assert reading.state == "reading" and reading.reason == ""
    # Kafka's own figure: the partition furthest behind is partition 0
    assert reading.backlog == int(metrics["maxOffsetsBehindLatest"]) > 0
    assert reading.rate > 0
    assert reading.to_live == pd.Timedelta(seconds=reading.backlog / reading.rate)
    assert ms(reading.event_time) == START_MS + (reading.records - 1) * 1000
    assert ms(reading.watermark) == json.loads(metrics["watermark.splits"])[0]["watermarkMs"]


def test_the_plot_crosses_a_split_the_limit_paused_after_it_had_read(
    spark: SparkSession, kafka: EmbeddedKafka, checkpoint: str
) -> None:
    # partition 0 holds 10 minutes, partition 1 two hours, a record a minute: batch 0 reads
    # partition 0 whole and partition 1 up to the limit (10 + 5 minutes); a record at partition 0's
    # end then brings batch 1, in which partition 1, at the limit, is paused with a point to cross
    kafka.create_topic("status-paused", partitions=2)
    kafka.produce(
        "status-paused",
        [{"value": "a", "partition": 0, "timestamp": START_MS + i * MINUTE} for i in range(11)]
        + [{"value": "b", "partition": 1, "timestamp": START_MS + i * MINUTE} for i in range(121)],
    )
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("status-paused")
        .starting_offsets(OffsetsInitializer.earliest())
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "paused", max_drift=timedelta(minutes=5)
    )
    df = sluice.from_source(spark, source, strategy, name="topic")
    query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    try:
        query.processAllAvailable()
        kafka.produce("status-paused", [{"value": "a", "partition": 0, "timestamp": START_MS + 10 * MINUTE}])
        query.processAllAvailable()
    finally:
        query.stop()
    kept = [p.batchId for p in query.recentProgress if p.sources]
    last = sluice.status(query)
    rows = {row.split: row for row in last.itertuples()}
    held = rows["status-paused-1"]
    assert held.state == "paused" and ms(held.event_time) > START_MS + 10 * MINUTE + 5 * MINUTE - MINUTE
    axes = sluice.plot(query).axes[0]
    crosses = _crosses(query, axes, "paused", kept)
    assert (kept[-1], held.event_time.to_pydatetime()) in crosses
    minimum = next(x for x in axes.lines if x.get_label().startswith("set group paused"))
    assert minimum.get_ydata()[-1] == _time(START_MS + 10 * MINUTE)  # partition 0 held the minimum


def _crosses(query, axes, group: str, kept: list[int]) -> set[tuple[int, datetime]]:
    """The plot's paused marks, checked against the table: one wherever a split that had read is
    paused (it has a point to mark), none elsewhere."""
    line = next((x for x in axes.lines if x.get_label() == f"paused by group {group}'s limit"), None)
    crosses = set() if line is None else set(zip(line.get_xdata(), line.get_ydata(), strict=True))
    expected = {
        (batch_id, row.event_time.to_pydatetime())
        for batch_id in kept
        for row in sluice.status(query, batch=batch_id).itertuples()
        if row.state == "paused" and not pd.isna(row.event_time)
    }
    assert crosses == expected
    return crosses


def _iso(ms_: int) -> str:
    return datetime.fromtimestamp(ms_ / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_hybrid_switches_member_and_the_plot_marks_it(
    spark: SparkSession, kafka: EmbeddedKafka, tmp_path: Path, checkpoint: str
) -> None:
    history = tmp_path / "history"
    history.mkdir()
    # two archive files a day apart in event time, one record a minute: alignment reads them together
    for day in range(2):
        (history / f"day-{day}.json").write_text(
            "".join(
                f'{{"id": {i}, "ts": "{_iso(START_MS + day * 1440 * MINUTE + i * MINUTE)}"}}\n'
                for i in range(200)
            ),
            encoding="utf-8",
        )
    kafka.create_topic("status-live", partitions=2)
    live_start = START_MS + 1440 * MINUTE + 150 * MINUTE
    kafka.produce(
        "status-live",
        [
            {
                "value": f'{{"id": {i}, "ts": "{_iso(live_start + i * MINUTE)}"}}',
                "partition": i % 2,
                "timestamp": live_start + i * MINUTE,
            }
            for i in range(200)
        ],
    )
    schema = "id BIGINT, ts TIMESTAMP"
    files = (
        FileSource.builder().path(str(history)).format("json").schema(schema).timestamp_column("ts").build()
    )
    live = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("status-live")
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .option("format", "json")
        .option("schema", schema)
        .build()
    )
    hybrid = HybridSource.builder(files).add_source(live, start_at_previous_end_minus=60 * MINUTE).build()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "backfill", max_drift=timedelta(minutes=30)
    )
    df = sluice.from_source(spark, hybrid, strategy, name="backfill", options={"maxRecordsPerTrigger": 60})
    query = run_available_now(spark, df, checkpoint)

    kept = [p.batchId for p in query.recentProgress if p.sources]
    actives = {b: int(metrics_of(query, b)["activeSource"]) for b in kept}
    switch_batch = min(b for b, a in actives.items() if a == 1)
    assert actives[kept[0]] == 0
    before = sluice.status(query, batch=switch_batch - 1)
    after = sluice.status(query)

    # while the files are read: member 0's splits, each file a split, with the time left to the switch
    files_rows = before[before["member"] == 0]
    assert len(files_rows) == 2
    assert [
        s.startswith("0:") and s.endswith(f"day-{d}.json") for d, s in enumerate(sorted(files_rows["split"]))
    ] == [
        True,
        True,
    ]
    assert set(files_rows["member_type"]) == {"file"}
    assert before["to_switch"].notna().all()
    assert (before["to_switch"] >= pd.Timedelta(0)).all()
    # alignment held one file back in some batch before the switch: the table said so
    paused = [
        row
        for b in kept
        if b < switch_batch
        for row in sluice.status(query, batch=b).itertuples()
        if row.state == "paused"
    ]
    assert paused and {r.reason for r in paused} == {"alignment limit"}

    # after the switch: member 1 (kafka) reads, no switch is ahead; the files, read to their end,
    # left the checkpoint (and the table) once the last member was active, their records counted
    assert set(after["member"]) == {1}
    kafka_rows = after[after["member"] == 1]
    assert sorted(kafka_rows["split"]) == ["1:status-live-0", "1:status-live-1"]
    assert set(kafka_rows["member_type"]) == {"kafka"}
    assert after["to_switch"].isna().all()
    final = metrics_of(query, kept[-1])
    per_member = [int(n) for n in final["recordsPerSource"].split(",")]
    assert per_member == [400, 200]
    assert int(final["recordsRead"]) == sum(per_member)

    png = tmp_path / "backfill.png"
    figure = sluice.plot(query, path=png)
    data = png.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    width, height = (
        int.from_bytes(data[16:20], "big"),
        int.from_bytes(data[20:24], "big"),
    )
    assert (width, height) == (1000, 500) and len(data) > 20_000
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert "backfill: switch to member 1 (kafka)" in labels
    assert "alignment limit (group backfill): slowest split's watermark + max drift" in labels
    # batch 0: the first file set the minimum (it reads, the limit does not hold it back): its
    # point carries the diamond, however far above the limit the file's records take it
    minimum = next(line for line in figure.axes[0].lines if line.get_label().startswith("set group backfill"))
    first_file = next(line for line in figure.axes[0].lines if line.get_label().endswith("day-0.json"))
    assert minimum.get_xdata()[0] == kept[0]
    assert minimum.get_ydata()[0] == first_file.get_ydata()[list(first_file.get_xdata()).index(kept[0])]
    # every diamond is on the split the planner names as the minimum in that batch
    lines = {line.get_label(): line for line in figure.axes[0].lines}
    for x, y in zip(minimum.get_xdata(), minimum.get_ydata(), strict=True):
        named = metrics_of(query, x)["alignment.minimumSplit"].rsplit("/", 1)[-1]
        line = next(line for label, line in lines.items() if label.endswith(named))
        assert y == line.get_ydata()[list(line.get_xdata()).index(x)], (x, named)
    _crosses(query, figure.axes[0], "backfill", kept)  # the file held back had read nothing yet
    switch_lines = [line for line in figure.axes[0].lines if line.get_label().startswith("backfill: switch")]
    assert [line.get_xdata()[0] for line in switch_lines] == [switch_batch]


def test_status_of_a_query_without_sluice_sources_is_empty(spark: SparkSession, checkpoint: str) -> None:
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 10)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    table = sluice.status(query)
    assert table.empty and list(table.columns) == sluice.STATUS_COLUMNS
    assert "no Sluice source has reported progress yet" in repr(table)
    with pytest.raises(ValueError, match="batch 12345 of query .* is not kept"):
        sluice.status(query, batch=12345)


def test_the_listener_keeps_a_bounded_history_beyond_sparks_own(spark: SparkSession, checkpoint: str) -> None:
    # Spark keeps 2 progress updates per query here; the listener keeps the last 4 batches
    previous = spark.conf.get("spark.sql.streaming.numRecentProgressUpdates")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "2")
    sluice.watch(spark, history=4)
    try:
        source = GeneratorSource.builder().splits(2).records_per_split(400).build()
        df = sluice.from_source(spark, source, name="bounded", options={"maxRecordsPerTrigger": 100})
        query = run_available_now(spark, df, checkpoint)
        assert len(query.recentProgress) <= 2
        # the listener hears of batches asynchronously: the last one may come after the query ended
        deadline = time.monotonic() + 30
        while [b.batch_id for b in sluice.progress.batches(query)] != [
            4,
            5,
            6,
            7,
        ] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [b.batch_id for b in sluice.progress.batches(query)] == [4, 5, 6, 7]
        # an earlier batch, gone from Spark's recent progress, is still there to look at
        table = sluice.status(query, batch=4)
        assert list(table["records"]) == [250, 250]
        with pytest.raises(ValueError, match="batch 3 of query .* is not kept"):
            sluice.status(query, batch=3)
    finally:
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", previous)
        sluice.watch(spark, history=sluice.progress.DEFAULT_HISTORY)
    with pytest.raises(ValueError, match="history must keep at least 2 batches, got 1"):
        sluice.watch(spark, history=1)


def test_watch_adds_one_listener_per_session_and_unwatch_removes_it(spark: SparkSession) -> None:
    def listeners() -> int:
        return len(spark._jsparkSession.streams().listListeners())  # noqa: SLF001 - the JVM's own list

    sluice.unwatch(spark)
    before = listeners()
    sluice.watch(spark)
    sluice.watch(spark)
    assert listeners() == before + 1
    sluice.unwatch(spark)
    assert listeners() == before


def test_plot_without_matplotlib_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sluice import _plot

    monkeypatch.setattr(_plot, "_figure_class", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # what an absent package looks like
    with pytest.raises(
        ImportError,
        match=r"sluice.plot needs matplotlib, an optional extra: pip install 'spark-sluice\[plot\]'",
    ):
        sluice.plot(object())  # type: ignore[arg-type]

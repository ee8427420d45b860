"""Real-time mode from Python: the same builders and from_source, only the trigger changes."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
import sluice
from pyspark.sql import SparkSession
from sluice import KafkaSource, OffsetsInitializer, WatermarkStrategy
from sluice.testing import EmbeddedKafka

pytestmark = pytest.mark.slow


def _values(sink: Path) -> list[str]:
    return [line for f in sink.glob("*.txt") for line in f.read_text().splitlines()]


def _await(sink: Path, count: int, what: str, timeout: float = 90) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(got := _values(sink)) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {len(got)} of {count} rows")
        time.sleep(0.1)
    return got


def _paused_ms(query) -> int:
    """The time the source's splits spent paused by alignment, as query progress reported it."""
    return max(
        (int(p["sources"][0]["metrics"].get("alignmentPausedMs", "0")) for p in query.recentProgress),
        default=0,
    )


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "not-aligned"])
def test_kafka_in_real_time_mode_with_alignment_pauses_the_partition_ahead(
    spark: SparkSession, kafka: EmbeddedKafka, tmp_path: Path, checkpoint: str, aligned: bool
) -> None:
    # partition 1 starts two hours of event time after partition 0, far past the 1-minute drift:
    # aligned, it is held (what a few polls of 10 records let through before the first update may pass) until partition 0 catches up
    topic = f"py-rt-{'aligned' if aligned else 'free'}"
    kafka.create_topic(topic, partitions=2)
    base = 1_700_000_000_000
    hours = 2 * 3600 * 1000

    def records(partition: int, start: int, first: int, until: int) -> list[dict]:
        return [
            {"value": f"p{partition}-{i}", "partition": partition, "timestamp": start + i * 5000}
            for i in range(first, until)
        ]

    kafka.produce(topic, records(1, base + hours, 0, 100) + records(0, base, 0, 100))
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("kafka.max.poll.records", "10")
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    if aligned:
        strategy = strategy.with_watermark_alignment(topic, timedelta(minutes=1), timedelta(milliseconds=100))
    sink = tmp_path / "sink"
    sink.mkdir()

    def write(row) -> None:  # runs in Python workers: one file per process
        with open(sink / f"{os.getpid()}.txt", "a") as out:
            out.write(row.value.decode() + "\n")

    query = (
        sluice.from_source(spark, source, strategy, topic)
        .writeStream.foreach(write)
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(realTime="5 seconds")
        .start()
    )
    try:
        if aligned:
            got = _await(sink, 100, "partition 0's records")
            deadline = time.monotonic() + 90
            while _paused_ms(query) == 0:  # progress comes at each batch's end
                assert time.monotonic() < deadline, f"no pause in query progress: {query.recentProgress}"
                time.sleep(0.2)
            ahead = [v for v in _values(sink) if v.startswith("p1-")]
            assert len(ahead) <= 50, f"{len(ahead)} records of the partition ahead passed the pause"
            # partition 0 catches up: partition 1 runs on
            kafka.produce(topic, records(0, base, hours // 5000, hours // 5000 + 100))
            got = _await(sink, 300, "every record once partition 0 caught up")
            expected = records(0, base, 0, 100) + records(0, base, hours // 5000, hours // 5000 + 100)
        else:
            got = _await(sink, 200, "both partitions, nothing held")
            expected = records(0, base, 0, 100)
            assert _paused_ms(query) == 0, query.recentProgress
    finally:
        query.stop()
    expected += records(1, base + hours, 0, 100)
    assert sorted(got) == sorted(r["value"] for r in expected)

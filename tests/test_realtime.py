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


def test_kafka_in_real_time_mode_with_alignment_delivers_every_record(
    spark: SparkSession, kafka: EmbeddedKafka, tmp_path: Path, checkpoint: str
) -> None:
    kafka.create_topic("py-rt", partitions=2)
    base = 1_700_000_000_000
    kafka.produce(
        "py-rt",
        [{"value": f"v{i}", "partition": i % 2, "timestamp": base + i * 1000} for i in range(200)],
    )
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-rt")
        .starting_offsets(OffsetsInitializer.earliest())
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "py-rt", timedelta(minutes=1), timedelta(milliseconds=200)
    )
    sink = tmp_path / "sink"
    sink.mkdir()

    def write(row) -> None:  # runs in Python workers: one file per process
        with open(sink / f"{os.getpid()}.txt", "a") as out:
            out.write(row.value.decode() + "\n")

    query = (
        sluice.from_source(spark, source, strategy, "py-rt")
        .writeStream.foreach(write)
        .outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(realTime="5 seconds")
        .start()
    )
    try:
        _await(sink, 200, "the records already in the topic")
        kafka.produce(
            "py-rt",
            [{"value": f"v{i}", "partition": i % 2, "timestamp": base + i * 1000} for i in range(200, 250)],
        )
        got = _await(sink, 250, "the records produced while the query ran")
    finally:
        query.stop()
    assert sorted(got) == sorted(f"v{i}" for i in range(250))

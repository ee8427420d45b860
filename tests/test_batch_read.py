"""sluice.read: a bounded source as a batch DataFrame, against what the broker holds; an unbounded
source refused when the DataFrame is created, naming the fix."""

from __future__ import annotations

from collections import Counter

import pytest
import sluice
from pyspark.sql import SparkSession
from sluice import KafkaSource, OffsetsInitializer, SluiceConfigError, WatermarkStrategy
from sluice.kafka import KafkaSourceBuilder
from sluice.testing import EmbeddedKafka


def test_read_bounded_kafka_as_a_batch_and_refuse_unbounded(
    spark: SparkSession, kafka: EmbeddedKafka
) -> None:
    kafka.create_topic("py-batch", partitions=3)
    base = 1_700_000_000_000
    records = [
        {"key": f"k{i}", "value": f"v{i}", "partition": i % 3, "timestamp": base + i} for i in range(300)
    ]
    kafka.produce("py-batch", records)

    def builder() -> KafkaSourceBuilder:
        return (
            KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics("py-batch")
            .starting_offsets(OffsetsInitializer.earliest())
        )

    source = builder().stopping_offsets(OffsetsInitializer.latest()).build()
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    df = sluice.read(spark, source, strategy, name="py-batch")
    assert not df.isStreaming
    assert df.schema == sluice.from_source(spark, source, strategy).schema
    rows = df.collect()
    got = Counter(
        (
            r.key.decode(),
            r.value.decode(),
            r.partition,
            int(r.timestamp.timestamp() * 1000),
        )
        for r in rows
    )
    expected = Counter((rec["key"], rec["value"], rec["partition"], rec["timestamp"]) for rec in records)
    assert got == expected
    assert all(r.event_time == r.timestamp for r in rows)

    with pytest.raises(
        SluiceConfigError,
        match=r"give the Kafka source stopping offsets \(endingOffsets / stoppingOffsets",
    ):
        sluice.read(spark, builder().build())
    with pytest.raises(SluiceConfigError, match="option maxRecordsPerTrigger"):
        sluice.read(spark, source, options={"maxRecordsPerTrigger": 10})

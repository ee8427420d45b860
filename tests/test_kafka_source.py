"""The Python KafkaSource builder against a real broker, compared with what the broker holds."""

from __future__ import annotations

from collections import Counter

import pytest
import sluice
from pyspark.sql import SparkSession
from sluice import SluiceConfigError
from sluice.kafka import KafkaSource, OffsetsInitializer
from sluice.testing import EmbeddedKafka


def test_raw_rows_match_what_the_broker_holds(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    kafka.create_topic("py-raw", partitions=3)
    records = [
        {
            "key": None if i % 5 == 0 else f"k{i}",
            "value": f"v{i}",
            "partition": i % 3,
            "timestamp": 1_700_000_000_000 + i,
            "headers": [("h", str(i))] if i % 2 else None,
        }
        for i in range(300)
    ]
    kafka.produce("py-raw", records)
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-raw")
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .include_headers(True)
        .build()
    )
    query = (
        sluice.from_source(spark, source, name="raw")
        .writeStream.format("memory")
        .queryName("py_raw")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    rows = spark.table("py_raw").collect()
    got = Counter(
        (
            r.key.decode() if r.key is not None else None,
            r.value.decode(),
            r.partition,
            int(r.timestamp.timestamp() * 1000),
            tuple((h.key, h.value.decode()) for h in r.headers) if r.headers else None,
        )
        for r in rows
    )
    expected = Counter(
        (
            rec["key"],
            rec["value"],
            rec["partition"],
            rec["timestamp"],
            tuple(rec["headers"]) if rec["headers"] else None,
        )
        for rec in records
    )
    assert got == expected
    assert {r.topic for r in rows} == {"py-raw"}
    assert sorted(r.offset for r in rows if r.partition == 0) == list(range(100))


def test_specific_start_offsets(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    kafka.create_topic("py-specific", partitions=2)
    kafka.produce("py-specific", [{"value": f"v{i}", "partition": i % 2} for i in range(40)])
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-specific")
        .starting_offsets(OffsetsInitializer.offsets({("py-specific", 0): 15, ("py-specific", 1): -2}))
        .stopping_offsets(OffsetsInitializer.latest())
        .build()
    )
    query = (
        sluice.from_source(spark, source)
        .writeStream.format("memory")
        .queryName("py_specific")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    offsets = sorted((r.partition, r.offset) for r in spark.table("py_specific").collect())
    assert offsets == [(0, o) for o in range(15, 20)] + [(1, o) for o in range(20)]


def test_bad_configuration_fails_at_build(spark: SparkSession) -> None:
    with pytest.raises(SluiceConfigError, match="give what to read with option 'subscribe'"):
        KafkaSource.builder().bootstrap_servers("127.0.0.1:1").build()
    with pytest.raises(SluiceConfigError, match="'kafka.enable.auto.commit' is not supported"):
        KafkaSource.builder().bootstrap_servers("127.0.0.1:1").topics("t").property(
            "enable.auto.commit", "true"
        ).build()


def test_repr_hides_credentials() -> None:
    secret = "PLANTED-SECRET-py"
    source = (
        KafkaSource.builder()
        .bootstrap_servers("127.0.0.1:9")
        .topics("t")
        .property("sasl.jaas.config", f'PlainLoginModule required password="{secret}";')
        .property("ssl.truststore.password", secret)
    )
    built = source._source_class(source._options)  # no session needed to print one
    text = repr(built)
    assert secret not in text
    assert "127.0.0.1:9" in text

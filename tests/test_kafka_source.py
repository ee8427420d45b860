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


def _read(spark: SparkSession, source: KafkaSource, table: str, options: dict | None = None) -> list:
    """Every row `source` gives up to its end, through an AvailableNow query into a memory table."""
    query = (
        sluice.from_source(spark, source, name=table, options=options)
        .writeStream.format("memory")
        .queryName(table)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    if query.exception() is not None:
        raise query.exception()
    return spark.table(table).collect()


def _bounded(kafka: EmbeddedKafka) -> KafkaSource:
    return (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
    )


def test_partitions_reads_the_assigned_partitions_only(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    kafka.create_topic("py-assign", partitions=3)
    kafka.produce("py-assign", [{"value": f"v{i}", "partition": i % 3} for i in range(30)])
    rows = _read(spark, _bounded(kafka).partitions({"py-assign": [2, 0]}).build(), "py_assign")
    assert sorted((r.partition, r.offset, r.value.decode()) for r in rows) == sorted(
        (i % 3, i // 3, f"v{i}") for i in range(30) if i % 3 != 1
    )


def test_topic_pattern_reads_every_matching_topic(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    for topic in ("py-pat-a", "py-pat-b", "py-unpat"):
        kafka.create_topic(topic, partitions=1)
        kafka.produce(topic, [{"value": f"{topic}-{i}"} for i in range(5)])
    rows = _read(spark, _bounded(kafka).topic_pattern("py-pat-.*").build(), "py_pattern")
    assert Counter((r.topic, r.value.decode()) for r in rows) == Counter(
        (t, f"{t}-{i}") for t in ("py-pat-a", "py-pat-b") for i in range(5)
    )


def test_include_key_adds_the_key_to_compact_rows(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    kafka.create_topic("py-keys", partitions=1)
    kafka.produce("py-keys", [{"key": f"k{i}", "value": f"v{i}"} for i in range(10)])
    compact = {"forceTimestampSupport": "false"}
    plain = _read(spark, _bounded(kafka).topics("py-keys").build(), "py_keys_plain", compact)
    assert "key" not in plain[0].asDict()
    assert sorted(r.value.decode() for r in plain) == sorted(f"v{i}" for i in range(10))
    keyed = _read(spark, _bounded(kafka).topics("py-keys").include_key().build(), "py_keys", compact)
    assert sorted((r.key.decode(), r.value.decode()) for r in keyed) == sorted(
        (f"k{i}", f"v{i}") for i in range(10)
    )


def test_timestamp_start_begins_at_the_first_record_at_or_after_it(
    spark: SparkSession, kafka: EmbeddedKafka
) -> None:
    base = 1_700_000_000_000
    kafka.create_topic("py-from-time", partitions=2)
    kafka.produce(
        "py-from-time",
        [{"value": f"v{i}", "partition": i % 2, "timestamp": base + i * 1000} for i in range(40)],
    )
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-from-time")
        .starting_offsets(OffsetsInitializer.timestamp(base + 25_000))
        .stopping_offsets(OffsetsInitializer.latest())
        .build()
    )
    rows = _read(spark, source, "py_from_time")
    assert sorted((r.partition, r.offset) for r in rows) == sorted((i % 2, i // 2) for i in range(25, 40))


def test_fail_on_data_loss_fails_or_skips_records_deleted_before_they_were_read(
    spark: SparkSession, kafka: EmbeddedKafka
) -> None:
    kafka.create_topic("py-loss", partitions=1)
    kafka.produce("py-loss", [{"value": f"v{i}"} for i in range(20)])
    kafka.delete_records("py-loss", 0, 10)

    def source(fail: bool) -> KafkaSource:
        return (
            KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics("py-loss")
            .starting_offsets(OffsetsInitializer.offsets({("py-loss", 0): 0}))
            .stopping_offsets(OffsetsInitializer.latest())
            .fail_on_data_loss(fail)
            .build()
        )

    with pytest.raises(Exception, match="py-loss") as failed:
        _read(spark, source(True), "py_loss_fail")
    assert "failOnDataLoss=false" in str(failed.value)
    rows = _read(spark, source(False), "py_loss_skip")
    assert sorted(r.offset for r in rows) == list(range(10, 20))

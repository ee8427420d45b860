"""The Python KafkaSource builder against a real broker, compared with what the broker holds."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta

import pytest
import sluice
from memory_sink import run_to_memory
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import SluiceConfigError
from sluice.kafka import KafkaSource, KafkaSourceBuilder, OffsetsInitializer
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


def _to_memory(spark: SparkSession, df: DataFrame, table: str) -> list:
    """Every row of streaming `df` up to its end, through an AvailableNow query into memory table `table`."""
    run_to_memory(df, table)
    return spark.table(table).collect()


def _read(spark: SparkSession, source: KafkaSource, table: str, options: dict | None = None) -> list:
    """Every row `source` gives up to its end."""
    return _to_memory(spark, sluice.from_source(spark, source, name=table, options=options), table)


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


def _labelled(spark: SparkSession, sources: dict[str, KafkaSource]) -> DataFrame:
    """One stream of every source's rows, each row with the name of its source (`label`): one
    query reads them all, so a test pays for one query start."""
    frames = [
        sluice.from_source(spark, source, name=label).withColumn("label", F.lit(label))
        for label, source in sources.items()
    ]
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df


def _read_labelled(spark: SparkSession, sources: dict[str, KafkaSource], table: str) -> Counter:
    """(label, partition, offset, value) of every row the bounded sources give, as a multiset."""
    rows = _to_memory(spark, _labelled(spark, sources), table)
    return Counter((r.label, r.partition, r.offset, r.value.decode()) for r in rows)


def test_per_partition_timestamps_start_and_stop_and_a_stop_timestamp(
    spark: SparkSession, kafka: EmbeddedKafka
) -> None:
    base = 1_700_000_000_000
    topic = "py-by-time"
    kafka.create_topic(topic, partitions=2)
    # record i: partition i % 2, offset i // 2, timestamp base + i s
    kafka.produce(
        topic, [{"value": f"v{i}", "partition": i % 2, "timestamp": base + i * 1000} for i in range(40)]
    )

    def bounded() -> KafkaSourceBuilder:
        return KafkaSource.builder().bootstrap_servers(kafka.bootstrap_servers).topics(topic)

    got = _read_labelled(
        spark,
        {
            # partition 0 from record 10, partition 1 from record 31; both before record 35's time
            "start": bounded()
            .starting_offsets(
                OffsetsInitializer.timestamps({(topic, 0): base + 10_000, (topic, 1): base + 31_000})
            )
            .stopping_offsets(OffsetsInitializer.timestamp(base + 35_000))
            .build(),
            # from the start, partition 0 before record 4's time, partition 1 before record 9's
            "stop": bounded()
            .starting_offsets(OffsetsInitializer.earliest())
            .stopping_offsets(
                OffsetsInitializer.timestamps({(topic, 0): base + 4_000, (topic, 1): base + 9_000})
            )
            .build(),
        },
        "py_by_time",
    )

    def rows(label: str, keep: Callable[[int], bool]) -> Counter:
        return Counter((label, i % 2, i // 2, f"v{i}") for i in range(40) if keep(i))

    expected = rows("start", lambda i: (10 <= i < 35 and i % 2 == 0) or (31 <= i < 35 and i % 2 == 1))
    expected += rows("stop", lambda i: i < 4 if i % 2 == 0 else i < 9)
    assert got == expected


def test_partition_discovery_interval_finds_a_new_partition_only_when_it_is_due(
    spark: SparkSession, kafka: EmbeddedKafka
) -> None:
    """Three sources in one query, each on a topic of its own that grows a partition while it runs:
    a 200 ms interval finds it; an hour, given as a timedelta or through the deprecated
    milliseconds alias, does not (without an interval discovery runs at every batch, so both of
    those would find it too)."""
    topics = {"fast": "py-disc-fast", "slow": "py-disc-slow", "slow_ms": "py-disc-slow-ms"}
    for topic in topics.values():
        kafka.create_topic(topic, partitions=1)
        kafka.produce(topic, [{"value": f"{topic}-{i}"} for i in range(5)])

    def source(label: str) -> KafkaSourceBuilder:
        return (
            KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics(topics[label])
            .starting_offsets(OffsetsInitializer.earliest())
        )

    with pytest.warns(DeprecationWarning, match="partition_discovery_interval_ms is deprecated"):
        slow_ms = source("slow_ms").partition_discovery_interval_ms(3_600_000)
    sources = {
        "fast": source("fast").partition_discovery_interval(timedelta(milliseconds=200)).build(),
        "slow": source("slow").partition_discovery_interval(timedelta(hours=1)).build(),
        "slow_ms": slow_ms.build(),
    }
    query = (
        _labelled(spark, sources)
        .writeStream.format("memory")
        .queryName("py_discovery")
        .trigger(processingTime="200 milliseconds")
        .start()
    )

    def read() -> Counter:
        return Counter(
            (r.label, r.partition, r.value.decode()) for r in spark.table("py_discovery").collect()
        )

    def wait_for(what: str, done: Callable[[Counter], bool]) -> Counter:
        deadline = time.monotonic() + 60
        while not done(seen := read()):
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"waited 60 s for {what}; read {seen}"
            time.sleep(0.2)
        return seen

    try:
        first = Counter((label, 0, f"{t}-{i}") for label, t in topics.items() for i in range(5))
        wait_for("the first records", lambda seen: seen == first)
        for topic in topics.values():
            kafka.add_partitions(topic, 2)
            kafka.produce(topic, [{"value": f"{topic}-new-{i}", "partition": 1} for i in range(5)])
        found = Counter(("fast", 1, f"{topics['fast']}-new-{i}") for i in range(5))
        wait_for("the fast source to find its new partition", lambda seen: found <= seen)
        # more records in the partitions every source knows: once they are read, each source has
        # planned batches after its topic grew
        for topic in topics.values():
            kafka.produce(topic, [{"value": f"{topic}-more-{i}", "partition": 0} for i in range(3)])
        more = Counter((label, 0, f"{t}-more-{i}") for label, t in topics.items() for i in range(3))
        seen = wait_for("the records written after the growth", lambda seen: more <= seen)
        assert seen == first + found + more
    finally:
        query.stop()


def test_a_consumer_property_reaches_the_consumers(spark: SparkSession, kafka: EmbeddedKafka) -> None:
    """`property("isolation.level", "read_committed")` leaves an aborted transaction's records out;
    without it they are read (Kafka's default, read_uncommitted)."""
    topic = "py-isolation"
    kafka.create_topic(topic, partitions=1)
    kafka.produce(topic, [{"value": f"c{i}"} for i in range(5)])
    # an aborted transaction, written with Kafka's own producer in the session's JVM
    jvm = spark._jvm  # noqa: SLF001
    props = jvm.java.util.Properties()
    for key, value in {
        "bootstrap.servers": kafka.bootstrap_servers,
        "transactional.id": "py-isolation-aborted",
        "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
        "value.serializer": "org.apache.kafka.common.serialization.StringSerializer",
    }.items():
        props.setProperty(key, value)
    producer = jvm.org.apache.kafka.clients.producer.KafkaProducer(props)
    try:
        producer.initTransactions()
        producer.beginTransaction()
        for i in range(5):
            producer.send(jvm.org.apache.kafka.clients.producer.ProducerRecord(topic, f"a{i}"))
        producer.flush()
        producer.abortTransaction()
    finally:
        producer.close()
    kafka.produce(topic, [{"value": f"c{i}"} for i in range(5, 10)])

    def source() -> KafkaSourceBuilder:
        return _bounded(kafka).topics(topic)

    got = _read_labelled(
        spark,
        {
            "default": source().build(),
            "committed": source().property("isolation.level", "read_committed").build(),
        },
        "py_isolation",
    )
    committed = [f"c{i}" for i in range(10)]
    assert Counter((label, value) for label, _, _, value in got.elements()) == Counter(
        [("default", v) for v in [*committed, *(f"a{i}" for i in range(5))]]
        + [("committed", v) for v in committed]
    )
    # at the offsets the records hold (where the abort's marker lands among the later records is
    # the broker's affair: the coordinator writes it after it answered the producer)
    offsets = {value: offset for label, _, offset, value in got.elements() if label == "default"}
    assert {value: offset for label, _, offset, value in got.elements() if label == "committed"} == {
        value: offsets[value] for value in committed
    }

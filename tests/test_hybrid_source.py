"""The Python HybridSource builder: declarative start from the previous end, and Python factories."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, timedelta
from pathlib import Path

import pytest
import sluice
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from sluice import (
    FileSource,
    GeneratorSource,
    HybridSource,
    KafkaSource,
    OffsetsInitializer,
    SluiceConfigError,
)
from sluice.hybrid import SourceSwitchContext
from sluice.testing import EmbeddedKafka

SCHEMA = "id BIGINT, ts TIMESTAMP"


def run(spark: SparkSession, source, table: str) -> None:
    query = (
        sluice.from_source(spark, source, options={"maxRecordsPerTrigger": 50})
        .writeStream.format("memory")
        .queryName(table)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "the query did not end within 180 s"
    assert query.exception() is None


def test_files_then_kafka_from_the_files_end_minus_a_margin(
    spark: SparkSession, kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    base = 1_700_000_000  # seconds
    history = tmp_path / "history"
    history.mkdir()
    (history / "a.json").write_text(
        "\n".join(f'{{"id": {i}, "ts": "{_iso(base + i)}"}}' for i in range(100)) + "\n",
        encoding="utf-8",
    )
    kafka.create_topic("py-hybrid", partitions=2)
    kafka.produce(
        "py-hybrid",
        [
            {
                "value": f'{{"id": {i}, "ts": "{_iso(base + i)}"}}',
                "partition": i % 2,
                "timestamp": (base + i) * 1000,
            }
            for i in range(80, 150)
        ],
    )
    files = (
        FileSource.builder().path(str(history)).format("json").schema(SCHEMA).timestamp_column("ts").build()
    )
    live = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-hybrid")
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .option("format", "json")
        .option("schema", SCHEMA)
        .build()
    )
    hybrid = HybridSource.builder(files).add_source(live, start_at_previous_end_minus=5_000).build()
    run(spark, hybrid, "py_hybrid_files_kafka")
    ids = Counter(r.id for r in spark.table("py_hybrid_files_kafka").collect())
    # files: 0..99; Kafka from the files' last event time (id 99) minus 5 s: ids 94..149
    assert ids == Counter(list(range(100)) + list(range(94, 150)))


def test_a_python_factory_builds_the_next_source_from_the_end_state(
    spark: SparkSession,
) -> None:
    seen: list[SourceSwitchContext] = []

    def next_source(context: SourceSwitchContext) -> GeneratorSource:
        seen.append(context)
        start = context.previous_max_event_time_ms + 1_000
        return GeneratorSource.builder().splits(1).records_per_split(10).event_time_start_ms(start).build()

    first = GeneratorSource.builder().splits(2).records_per_split(20).event_time_start_ms(0).build()
    hybrid = HybridSource.builder(first).add_source_factory(next_source, bounded=True).build()
    run(spark, hybrid, "py_hybrid_factory")
    rows = spark.table("py_hybrid_factory").collect()
    assert len(rows) == 50
    assert len(seen) == 1
    assert seen[0].previous_source_index == 0
    assert seen[0].previous_max_event_time_ms == 19_000
    millis = Counter(round(r.timestamp.timestamp() * 1000) for r in rows)
    first_source = [i * 1_000 for i in range(20)] * 2
    built_at_switch = [20_000 + i * 1_000 for i in range(10)]
    assert millis == Counter(first_source + built_at_switch)


def _factories_registered(spark: SparkSession) -> int:
    return spark._jvm.sluice.hybrid.SourceFactories.size()  # noqa: SLF001


def _factory_hybrid() -> HybridSource:
    first = GeneratorSource.builder().splits(1).records_per_split(10).build()
    return (
        HybridSource.builder(first)
        .add_source_factory(
            lambda _: GeneratorSource.builder().splits(1).records_per_split(5).build(), bounded=True
        )
        .build()
    )


def test_a_factory_hybrid_restarted_holds_one_entry_until_released(spark: SparkSession) -> None:
    before = _factories_registered(spark)
    with _factory_hybrid() as hybrid:
        assert _factories_registered(spark) == before + 1
        for i in range(5):
            table = f"py_hybrid_restart_{i}"
            run(spark, hybrid, table)
            assert spark.table(table).count() == 15
            assert _factories_registered(spark) == before + 1, f"after run {i}"
    assert _factories_registered(spark) == before
    hybrid.release()  # twice is harmless
    assert _factories_registered(spark) == before


def test_a_hybrid_released_from_another_thread_gives_its_factories_up(spark: SparkSession) -> None:
    # the factories live in the JVM, not in a session: a thread pool's worker, which has no
    # active session of its own, must release them too
    import threading

    before = _factories_registered(spark)
    hybrid = _factory_hybrid()
    assert _factories_registered(spark) == before + 1
    worker = threading.Thread(target=hybrid.release)
    worker.start()
    worker.join(60)
    assert _factories_registered(spark) == before


def test_a_query_from_a_released_hybrid_fails_saying_to_define_it_again(spark: SparkSession) -> None:
    hybrid = _factory_hybrid()
    df = sluice.from_source(spark, hybrid)
    hybrid.release()
    query = df.writeStream.format("noop").trigger(availableNow=True).start()
    try:
        with pytest.raises(StreamingQueryException, match="define the query again in this application"):
            query.awaitTermination(180)
    finally:
        query.stop()


def test_a_builder_registers_its_factories_per_hybrid_built(spark: SparkSession) -> None:
    before = _factories_registered(spark)
    first = GeneratorSource.builder().splits(1).records_per_split(1).build()
    builder = HybridSource.builder(first).add_source_factory(lambda _: first, bounded=True)
    assert _factories_registered(spark) == before, "adding a factory registered it before build()"
    with builder.build() as a, builder.build() as b:
        assert a.options != b.options
        assert _factories_registered(spark) == before + 2
    assert _factories_registered(spark) == before


def test_validation_names_the_offending_source(spark: SparkSession) -> None:
    unbounded = GeneratorSource.builder().rows_per_second(1).build()
    bounded = GeneratorSource.builder().records_per_split(1).build()
    with pytest.raises(SluiceConfigError, match="source 0 \\(generator\\) is unbounded"):
        HybridSource.builder(unbounded).add_source(bounded).build()


def _iso(seconds: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def test_the_retention_check_is_a_hybrid_option_checked_before_any_jvm() -> None:
    first = sluice.GeneratorSource.builder().splits(1).records_per_split(10).build()
    hybrid = (
        HybridSource.builder(first)
        .add_source(first)
        .retention_check(timedelta(seconds=30), timedelta(hours=12))
        .build()
    )
    assert hybrid.options["hybrid.retentionCheckIntervalMs"] == "30000"
    assert hybrid.options["hybrid.retentionWarningMs"] == str(12 * 3600 * 1000)
    with pytest.raises(
        sluice.SluiceConfigError,
        match=r"HybridSource: invalid value '-1' for option 'hybrid.retentionCheckIntervalMs'; "
        r"allowed: an integer >= 0\.",
    ):
        HybridSource.builder(first).retention_check(-1, 0)

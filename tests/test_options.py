"""The Python builders mirror the JVM's option declarations (python/sluice/_options.json)."""

from __future__ import annotations

from importlib import resources

import pytest
from pyspark.sql import SparkSession
from sluice import (
    FileSource,
    GeneratorSource,
    HybridSource,
    IcebergSource,
    KafkaSource,
    OffsetsInitializer,
    SluiceConfigError,
    WatermarkStrategy,
    _options,
)
from sluice.sources import Source, _Builder


def test_shipped_declarations_are_the_jvms(spark: SparkSession) -> None:
    shipped = resources.files("sluice").joinpath("_options.json").read_text("utf-8")
    printed = spark._jvm.sluice.spark.OptionDeclarations.json()  # noqa: SLF001
    assert shipped == printed, "python/sluice/_options.json is stale: regenerate it with `make docs`"


def _unbuilt(builder: _Builder) -> Source:
    # the options as built, without the JVM check (which needs a session)
    return builder._source_class(builder._options)  # noqa: SLF001


def _every_builder_method() -> list[Source]:
    generator = _unbuilt(
        GeneratorSource.builder()
        .splits(2)
        .records_per_split(3)
        .rows_per_second(1)
        .event_time_start_ms(0)
        .event_time_step(1)
        .split_skew(0, -1)
        .payload_bytes(4)
    )
    file = _unbuilt(
        FileSource.builder()
        .paths("/a", "/b")
        .format("csv")
        .schema("a INT")
        .timestamp_column("a")
        .monitor_interval(1)
        .ignore_missing_files()
        .ignore_changed_files()
        .max_split_bytes(1)
        .max_open_compressed_files(2)
        .open_compressed_file_idle(3)
        .not_ready_timeout(4)
        .merge_schema()
    )
    kafka = _unbuilt(
        KafkaSource.builder()
        .bootstrap_servers("b:9")
        .topics("t")
        .topic_pattern("t.*")
        .partitions({"t": [1, 0]})
        .property("security.protocol", "SSL")
        .starting_offsets(OffsetsInitializer.timestamps({("t", 0): 1}))
        .stopping_offsets(OffsetsInitializer.timestamp(2))
        .fail_on_data_loss(False)
        .include_headers(True)
        .include_key()
        .partition_discovery_interval(5)
    )
    hybrid = _unbuilt(HybridSource.builder(file).add_source(kafka, start_at_previous_end_minus=1))
    iceberg = _unbuilt(
        IcebergSource.builder()
        .catalog("lake", {"type": "jdbc", "uri": "jdbc:sqlite:c.db"})
        .table("db.t")
        .snapshot_id(1)
        .timestamp_column("ts")
        .ignore_missing_files()
        .monitor_interval(1)
        .skip_changes()
    )
    return [generator, file, kafka, hybrid, iceberg]


def test_every_option_a_builder_sets_is_declared_on_the_jvm() -> None:
    for source in _every_builder_method():
        undeclared = [key for key in source.options if not _options.declarations(key)]
        assert not undeclared, f"{source.source_type}: {undeclared}"
    strategy = (
        WatermarkStrategy.for_bounded_out_of_orderness(1)
        .with_timestamp_column("ts")
        .with_event_time_column("et")
        .with_idleness(1)
        .with_watermark_alignment("g", 1, 1)
        .with_allow_unaligned_source_splits()
    )
    read = _options.declared("read")
    assert all(key in read for key in strategy.options)
    for kind in (
        WatermarkStrategy.no_watermarks(),
        strategy,
        WatermarkStrategy.for_monotonous_timestamps(),
    ):
        assert kind.options["watermark.kind"] in read["watermark.kind"].allowed.split(", ")
        assert kind.options["watermark.kind"] in read["watermark.kind"].values["words"]


def test_repr_masks_what_the_jvm_declares_secret_even_inside_a_hybrid() -> None:
    secret = "PLANTED-SECRET-hybrid"
    live = _unbuilt(
        KafkaSource.builder()
        .bootstrap_servers("127.0.0.1:9")
        .topics("t")
        .property("sasl.jaas.config", secret)
    )
    text = repr(_unbuilt(HybridSource.builder(live)))
    assert secret not in text
    assert f"hybrid.0.kafka.sasl.jaas.config={_options.MASK}" in text
    assert "hybrid.0.kafka.bootstrap.servers=127.0.0.1:9" in text
    # an Iceberg catalog's properties (a JDBC password, a REST token) likewise
    history = _unbuilt(IcebergSource.builder().catalog("lake", {"jdbc.password": secret}).table("db.t"))
    text = repr(_unbuilt(HybridSource.builder(history).add_source(live)))
    assert secret not in text
    assert f"hybrid.0.catalog.jdbc.password={_options.MASK}" in text
    assert "hybrid.0.catalogName=lake" in text


def test_a_negative_margin_fails_early_with_the_declared_rule() -> None:
    first = _unbuilt(GeneratorSource.builder().records_per_split(1))
    with pytest.raises(
        SluiceConfigError,
        match="'hybrid.1.startAtPreviousEndMinusMs'; allowed: an integer >= 0",
    ):
        HybridSource.builder(first).add_source(first, start_at_previous_end_minus=-1)


def test_an_undeclared_name_says_where_names_come_from() -> None:
    with pytest.raises(KeyError, match="make docs"):
        _options.declared("kafka")["startingOffset"]


def test_early_checks_read_the_declared_values_not_the_text() -> None:
    splits = _options.declared("generator")["splits"]
    assert splits.values == {"min": 1, "max": 100000}
    assert [splits.allows(v) for v in (1, 100000, 0, 100001, "four", " 7 ")] == [
        True,
        True,
        False,
        False,
        False,
        True,
    ]
    drift = _options.declared("read")["watermark.alignment.maxDriftMs"]
    assert [drift.allows(v) for v in ("auto", "AUTO", 0, -1)] == [True, True, True, False]
    kind = _options.declared("read")["watermark.kind"]
    assert [kind.allows(v) for v in ("monotonous", "MONOTONOUS")] == [True, False]
    column = _options.declared("read")["watermark.eventTimeColumn"]
    assert [column.allows(v) for v in ("et", " ")] == [True, False]
    # a word that is a number is the number, as the JVM reads it
    chars = _options.declared("file")["maxCharsPerColumn"]
    assert [chars.allows(v) for v in ("-1", "-01", " -1 ", 0, 5, -2)] == [
        True,
        True,
        True,
        False,
        True,
        False,
    ]
    # an option whose rule only the text states is left to the JVM
    assert _options.declared("kafka")["startingOffsets"].values is None
    assert _options.declared("kafka")["startingOffsets"].allows("anything")


def test_the_kafka_builder_replaces_start_and_stop_alternatives_as_the_jvm_declares_them() -> None:
    start, stop = _options.rule("kafka", "start"), _options.rule("kafka", "stop")
    assert (start.kind, start.options, start.qualifiers) == (
        "firstOf",
        ("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets"),
        ("startingOffsetsByTimestampStrategy",),
    )
    assert stop.options == ("endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets")
    builder = (
        KafkaSource.builder()
        .starting_offsets(OffsetsInitializer.timestamp(5))
        .stopping_offsets(OffsetsInitializer.timestamp(9))
    )
    assert builder._options["startingOffsetsByTimestampStrategy"] == "latest"  # noqa: SLF001
    options = _unbuilt(
        builder.starting_offsets(OffsetsInitializer.earliest()).stopping_offsets(OffsetsInitializer.latest())
    ).options
    assert {k: v for k, v in options.items() if k in start.replaced + stop.replaced} == {
        "startingOffsets": "earliest",
        "endingOffsets": "latest",
    }
    subscription = _options.rule("kafka", "subscription")
    assert (subscription.kind, subscription.options) == (
        "exactlyOne",
        ("subscribe", "subscribePattern", "assign"),
    )
    with pytest.raises(KeyError, match="make docs"):
        _options.rule("kafka", "ending")

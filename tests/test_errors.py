"""Sluice's errors in Python carry their error class, as PySpark's own errors do: the builders' early
checks, the JVM's refusals when a source is built or read, and faults that stop a running query (classic
PySpark here; Spark Connect's exception type converted directly, and test_connect.py for a real server)."""

from __future__ import annotations

from importlib import resources

import pytest
import sluice
from pyspark.errors import PySparkException
from pyspark.errors.exceptions import connect as connect_errors
from pyspark.sql import SparkSession
from sluice import (
    GeneratorSource,
    KafkaSource,
    OffsetsInitializer,
    SluiceConfigError,
    SluiceException,
    SluiceRuntimeError,
    sluice_error,
)
from sluice._options import declared, rule
from sluice.testing import EmbeddedKafka

SPLITS_ZERO = "GeneratorSource: invalid value '0' for option 'splits'; allowed: an integer from 1 to 100000."
SPLITS_ZERO_PARAMETERS = {
    "context": "GeneratorSource",
    "value": "0",
    "option": "splits",
    "allowed": "an integer from 1 to 100000",
}


def test_shipped_error_classes_are_the_jvms(spark: SparkSession) -> None:
    printed = spark._jvm.sluice.errors.ErrorClasses.json()  # noqa: SLF001
    shipped = resources.files("sluice").joinpath("_errors.json").read_text(encoding="utf-8")
    assert shipped == printed, "python/sluice/_errors.json is out of date: regenerate it with `make docs`"


def test_an_early_check_raises_the_class_with_the_jvms_words() -> None:
    # what a builder does without a JVM (Spark Connect, or no session yet)
    with pytest.raises(SluiceConfigError) as raised:
        declared("generator")["splits"].check_early(0, "GeneratorSource", "splits")
    error = raised.value
    assert isinstance(error, PySparkException) and isinstance(error, ValueError)
    assert str(error) == SPLITS_ZERO
    assert error.getCondition() == "SLUICE_INVALID_OPTION"
    assert error.getMessageParameters() == SPLITS_ZERO_PARAMETERS
    assert error.getSqlState() == "22023"
    assert error.getMessage() == f"[SLUICE_INVALID_OPTION] {SPLITS_ZERO}"


def test_the_jvms_refusal_at_build_carries_its_class(spark: SparkSession) -> None:
    with pytest.raises(SluiceConfigError) as raised:
        GeneratorSource.builder().splits(0).records_per_split(1).build()
    assert str(raised.value) == SPLITS_ZERO
    assert raised.value.getCondition() == "SLUICE_INVALID_OPTION"
    assert raised.value.getMessageParameters() == SPLITS_ZERO_PARAMETERS


def test_a_refusal_when_reading_carries_its_class(spark: SparkSession) -> None:
    source = GeneratorSource.builder().splits(2).records_per_split(5).build()
    with pytest.raises(SluiceConfigError) as raised:
        sluice.from_source(spark, source, options={"maxRecordPerTrigger": 5})
    assert raised.value.getCondition() == "SLUICE_UNKNOWN_OPTION"
    assert str(raised.value).startswith("GeneratorSource: unknown option 'maxRecordPerTrigger'. ")
    # read without Sluice's Python: PySpark's own exception already names the class
    with pytest.raises(PySparkException) as plain:
        spark.readStream.format("sluice").options(source="generator", splits="0").load()
    assert plain.value.getCondition() == "SLUICE_INVALID_OPTION"
    converted = sluice_error(plain.value)
    assert isinstance(converted, SluiceConfigError)
    assert (
        str(converted)
        == "GeneratorSource: invalid value '0' for option 'splits'; allowed: an integer from 1 to 100000."
    )


def test_a_fault_that_stops_a_running_query_is_found_among_the_causes(
    spark: SparkSession, kafka: EmbeddedKafka, checkpoint: str
) -> None:
    kafka.create_topic("py-errors-late", partitions=1)
    kafka.produce("py-errors-late", [{"value": f"v{i}", "timestamp": 1_000 + i} for i in range(5)])
    source = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics("py-errors-late")
        .starting_offsets(OffsetsInitializer.timestamp(1_000_000))
        .option("startingOffsetsByTimestampStrategy", "error")  # no record that late: fail
        .build()
    )
    query = (
        sluice.from_source(spark, source)
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(PySparkException) as raised:
        query.awaitTermination(120)
    error = sluice_error(raised.value)
    assert isinstance(error, SluiceRuntimeError), repr(raised.value)
    assert error.getCondition() == "SLUICE_SOURCE_FAULT"
    assert "has a timestamp at or after 1000000" in str(error)
    assert error.getSqlState() == "58030"


def test_spark_connects_exception_converts_by_its_class() -> None:
    # what the Connect client builds from the server's error details (no server needed here)
    received = connect_errors._convert_exception(  # noqa: SLF001 - the client's own conversion
        classes=["sluice.spark.SluiceSparkConfigException", "java.lang.IllegalArgumentException"],
        sql_state="22023",
        error_class="SLUICE_INVALID_OPTION",
        reason=None,
        root_error_idx=None,
        errors=None,
        truncated_message=SPLITS_ZERO,
        truncated_message_parameters=SPLITS_ZERO_PARAMETERS,
        truncated_stacktrace=None,
    )
    assert isinstance(received, connect_errors.IllegalArgumentException)
    assert received.getCondition() == "SLUICE_INVALID_OPTION"
    error = sluice_error(received)
    assert isinstance(error, SluiceConfigError)
    assert str(error) == SPLITS_ZERO
    assert error.getMessageParameters() == SPLITS_ZERO_PARAMETERS
    # the class on a cause (classic PySpark's captured causes are walked the same way)
    outer = connect_errors.StreamingQueryException(
        "Query failed", errorClass="STREAM_FAILED", messageParameters={}
    )
    outer.__cause__ = connect_errors.SparkConnectGrpcException(
        "KafkaSource: records lost. Set failOnDataLoss=false to go on without it.",
        errorClass="SLUICE_DATA_LOSS",
        messageParameters={"what": "KafkaSource: records lost.", "instead": "go on without it"},
    )
    lost = sluice_error(outer)
    assert isinstance(lost, SluiceRuntimeError) and lost.getCondition() == "SLUICE_DATA_LOSS"


def test_errors_of_other_origins_are_left_alone() -> None:
    assert sluice_error(ValueError("not ours")) is None
    other = connect_errors.IllegalArgumentException("no", errorClass="INVALID_OPTIONS", messageParameters={})
    assert sluice_error(other) is None
    assert issubclass(SluiceConfigError, SluiceException) and issubclass(SluiceRuntimeError, SluiceException)


@pytest.mark.parametrize(
    "chosen",
    [
        {},
        {"subscribe": "a", "assign": '{"a":[0]}'},
        {"subscribe": "a", "subscribePattern": "a.*", "assign": '{"a":[0]}'},
    ],
)
def test_the_exactly_one_rule_is_checked_early_in_the_jvms_words(
    spark: SparkSession, chosen: dict[str, str]
) -> None:
    # under Spark Connect the builder has no JVM to ask: it applies the declared rule itself
    builder = KafkaSource.builder().bootstrap_servers("127.0.0.1:1")
    for name, value in chosen.items():
        builder.option(name, value)
    with pytest.raises(SluiceConfigError) as early:
        rule("kafka", "subscription").check_early(builder._options, "KafkaSource")  # noqa: SLF001
    with pytest.raises(SluiceConfigError) as jvm:
        builder.build()  # a classic session: the JVM's own refusal
    assert str(early.value) == str(jvm.value)
    assert early.value.getCondition() == jvm.value.getCondition()
    assert early.value.getMessageParameters() == jvm.value.getMessageParameters()

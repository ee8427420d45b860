"""Sluice's errors in Python carry their error class, as PySpark's own errors do: the builders' early
checks, the JVM's refusals when a source is built or read, and faults that stop a running query (classic
PySpark here; Spark Connect's exception type converted directly, and test_connect.py for a real server)."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pyarrow as pa
import pytest
import sluice
from deltalake import DeltaTable, write_deltalake
from pyspark.errors import PySparkException
from pyspark.errors.exceptions import captured as captured_errors
from pyspark.errors.exceptions import connect as connect_errors
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from sluice import (
    DeltaSource,
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


def _same_error(found: SluiceException | None, expected: SluiceException) -> None:
    assert found is not None
    assert type(found) is type(expected)
    assert found.getCondition() == expected.getCondition()
    assert found.getMessageParameters() == expected.getMessageParameters()
    assert str(found) == str(expected)


def test_a_failed_querys_exception_gives_the_error_await_termination_raised(
    spark: SparkSession, tmp_path: Path, checkpoint: str
) -> None:
    """`query.exception()` and what `query.awaitTermination()` raised give the same Sluice error.
    PySpark builds the former from the JVM's message and cause without the JVM object, and makes a
    Sluice runtime fault (an IllegalStateException, a type it has none for) an exception of its
    text alone: the class and parameters must survive that."""
    table = tmp_path / "table"
    write_deltalake(table, pa.table({"id": list(range(10))}))

    def started() -> StreamingQuery:
        source = DeltaSource.builder().table(str(table)).build()
        return (
            sluice.from_source(spark, source)
            .writeStream.format("noop")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )

    first = started()
    assert first.awaitTermination(120) and first.exception() is None
    old_id = DeltaTable(str(table)).metadata().id
    shutil.rmtree(table)
    write_deltalake(table, pa.table({"id": list(range(100, 110))}))  # another table at the same place
    new_id = DeltaTable(str(table)).metadata().id
    query = started()
    with pytest.raises(PySparkException) as raised:
        query.awaitTermination(120)
    awaited = sluice_error(raised.value)
    assert isinstance(awaited, SluiceRuntimeError), repr(raised.value)
    assert awaited.getCondition() == "SLUICE_TABLE_REPLACED"
    parameters = awaited.getMessageParameters()
    assert (parameters["checkpointed"], parameters["current"]) == (old_id, new_id)
    _same_error(sluice_error(query.exception()), awaited)


def test_a_fault_inside_a_job_failure_is_found_in_a_querys_exception(spark: SparkSession) -> None:
    """A task's fault reaches the query inside Spark's job failure (a SparkException, which PySpark
    also converts without its JVM object): `StreamingQuery.exception()`'s construction from that
    cause finds it as `awaitTermination()`'s JVM chain does."""
    jvm = spark._jvm  # noqa: SLF001
    fault = jvm.sluice.spark.SparkErrors.toSpark(
        jvm.sluice.errors.SluiceError.sourceFault("KafkaSource: the broker refused a look-up.", None)
    )
    job_failed = jvm.org.apache.spark.SparkException("Job aborted due to stage failure", fault)
    # what StreamingQuery.exception() builds from the JVM's StreamingQueryException
    built = captured_errors.StreamingQueryException("Query failed", "at ...", job_failed)
    found = sluice_error(built)
    assert isinstance(found, SluiceRuntimeError)
    assert found.getCondition() == "SLUICE_SOURCE_FAULT"
    assert found.getMessageParameters() == {"message": "KafkaSource: the broker refused a look-up."}
    assert str(found) == "KafkaSource: the broker refused a look-up."


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

"""A Spark Connect client as a user runs one: its own process, no JVM, `SparkSession.builder.remote`.

    python connect_client.py <scenario> '<json arguments>'

Runs one scenario against the server at ``arguments["url"]`` and prints one JSON line of what it
saw; test_connect.py asserts on it. A scenario is a function below.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import sluice
from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from sluice import FileSource, GeneratorSource, HybridSource, KafkaSource, OffsetsInitializer

SCHEMA = "id BIGINT, ts TIMESTAMP"


def session(url: str) -> SparkSession:
    # what a notebook on a Connect cluster writes; configure leaves a remote builder as it is
    return sluice.configure(SparkSession.builder.remote(url)).getOrCreate()


def run_to_end(spark: SparkSession, source: sluice.Source, table: str) -> list[Any]:
    query = (
        sluice.from_source(spark, source, options={"maxRecordsPerTrigger": 40})
        .writeStream.format("memory")
        .queryName(table)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(180):
        raise AssertionError(f"{table}: the query did not end within 180 s")
    if query.exception() is not None:
        raise AssertionError(f"{table}: {query.exception()}")
    return spark.table(table).collect()


def refusal(build: Callable[[], object]) -> str | None:
    try:
        build()
    except Exception as error:  # noqa: BLE001 - the message is what is checked
        return f"{type(error).__name__}: {error}"
    return None


def refusal_class(build: Callable[[], object]) -> list[str | None] | None:
    """The error class of what ``build`` raised, as PySpark's exception gives it and as
    ``sluice.sluice_error`` converts it: ``[getCondition(), type of the converted error]``."""
    try:
        build()
    except Exception as error:  # noqa: BLE001 - the class is what is checked
        converted = sluice.sluice_error(error)
        condition = (
            error.getCondition() if isinstance(error, sluice.SluiceException | PySparkException) else None
        )
        return [condition, type(converted).__name__ if converted is not None else None]
    return None


def generator(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    source = GeneratorSource.builder().splits(2).records_per_split(50).build()
    rows = run_to_end(spark, source, "connect_numbers")
    unchecked = GeneratorSource.builder().splits(2).build()  # unbounded without a rate: the JVM's rule

    def start_unchecked() -> None:
        sluice.from_source(spark, unchecked).writeStream.format("memory").queryName("never").start()

    return {
        "remote": sluice.is_remote(spark),
        "jvm": SparkContext._jvm is not None,  # noqa: SLF001
        "ids": sorted(r.id for r in rows),
        "splits": sorted({r.split for r in rows}),
        "early": refusal(lambda: GeneratorSource.builder().splits(0).records_per_split(1).build()),
        "at_start": refusal(start_unchecked),
        "early_class": refusal_class(
            lambda: GeneratorSource.builder().splits(0).records_per_split(1).build()
        ),
        "at_start_class": refusal_class(start_unchecked),
    }


def kafka(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    source = (
        KafkaSource.builder()
        .bootstrap_servers(args["bootstrap"])
        .topics(args["topic"])
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .build()
    )
    rows = run_to_end(spark, source, "connect_kafka")
    records = [
        [
            r.key.decode() if r.key is not None else None,
            r.value.decode(),
            r.topic,
            r.partition,
            r.offset,
            round(r.timestamp.timestamp() * 1000),  # naive, in this process's time zone
        ]
        for r in rows
    ]
    return {"records": sorted(records, key=lambda record: (record[3], record[4]))}  # partition, offset


def hybrid(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    files = (
        FileSource.builder()
        .path(args["history"])
        .format("json")
        .schema(SCHEMA)
        .timestamp_column("ts")
        .build()
    )
    live = (
        KafkaSource.builder()
        .bootstrap_servers(args["bootstrap"])
        .topics(args["topic"])
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .option("format", "json")
        .option("schema", SCHEMA)
        .build()
    )
    source = (
        HybridSource.builder(files).add_source(live, start_at_previous_end_minus=args["margin_ms"]).build()
    )
    rows = run_to_end(spark, source, "connect_hybrid")
    return {
        "ids": sorted(r.id for r in rows),
        "factory": refusal(
            lambda: HybridSource.builder(files).add_source_factory(lambda _: live, bounded=False)
        ),
        "negative_margin": refusal(
            lambda: HybridSource.builder(files).add_source(live, start_at_previous_end_minus=-1)
        ),
    }


SCENARIOS = {"generator": generator, "kafka": kafka, "hybrid": hybrid}

if __name__ == "__main__":
    scenario, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(SCENARIOS[scenario](arguments)))

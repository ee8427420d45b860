"""A table (Iceberg or Delta, written by the format's own Python writer) as the history of a hybrid,
then Kafka from the table's largest event time minus a margin: the queries the restart tests stop,
change the table under and start again, written once for both formats.

The table holds `TABLE_IDS`, one event a second from `START`, in three commits of 20 rows, the
newest events committed first (the table's largest event time is not its last commit's); the
topic holds `TOPIC_IDS` (two partitions, even ids in 0, odd in 1, each record's timestamp its
event time). Kafka starts at the table's largest event time (id 59) minus `MARGIN_MS` (5 s): at
id 54 in partition 0 and id 55 in partition 1, offset 2 in each (`KAFKA_STARTS`). Rows appended
to the table later (`APPENDED_IDS`) are later still: read, they would move that start to offset
7."""

from __future__ import annotations

import json
import shutil
from abc import ABC, abstractmethod
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import sluice
from deltalake import DeltaTable, write_deltalake
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, TimestamptzType
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import DeltaSource, HybridSource, IcebergSource, KafkaSource, OffsetsInitializer
from sluice.testing import EmbeddedKafka

START = datetime(2026, 11, 1, tzinfo=UTC)
TABLE_IDS = range(0, 60)
TOPIC_IDS = range(50, 100)
APPENDED_IDS = range(60, 70)
MARGIN_MS = 5_000
KAFKA_STARTS = [2, 2]
#: rows a batch: the table takes three batches, so a stop can fall inside it
ROWS_PER_BATCH = 20
ARROW = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])


def events(ids: range) -> pa.Table:
    """Rows `ids`, event `i` at `START` + `i` seconds."""
    return pa.table({"id": list(ids), "ts": [START + timedelta(seconds=i) for i in ids]}, schema=ARROW)


class HistoryTable(ABC):
    """A table at a fixed place, written by its format's own writer, that a test can append to, or
    drop and create again there."""

    #: the format's name for a table's identity, as Sluice's messages give it
    identity_name: str

    def __init__(self, place: Path) -> None:
        self.place = place
        for first in (40, 0, 20):  # the newest events first
            self.append(range(first, first + 20))

    @abstractmethod
    def append(self, ids: range) -> None:
        """Commits `events(ids)` to the table (creating it if there is none)."""

    @abstractmethod
    def drop(self) -> None:
        """Drops the table, as its format's writer does."""

    @abstractmethod
    def identity(self) -> str:
        """The table's identity, as its metadata records it."""

    @abstractmethod
    def source(self) -> Any:
        """A bounded source of the table's current snapshot or version, `ts` its event time."""

    def create_again(self, ids: range) -> None:
        """Drops the table and creates another at the same place, holding `events(ids)`."""
        self.drop()
        self.append(ids)


class IcebergHistory(HistoryTable):
    """A table of pyiceberg's SQL catalog (sqlite), given to Sluice by its current metadata file."""

    identity_name = "table-uuid"
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestamptzType(), required=False),
    )

    def __init__(self, place: Path) -> None:
        place.mkdir()
        self.catalog = SqlCatalog(
            "sluice_hybrids", uri=f"sqlite:///{place / 'catalog.db'}", warehouse=place.as_uri()
        )
        self.catalog.create_namespace("db")
        self.table: Any = None
        super().__init__(place)

    def append(self, ids: range) -> None:
        if self.table is None:
            self.table = self.catalog.create_table("db.history", schema=self.schema)
        self.table.append(events(ids))

    def drop(self) -> None:
        self.catalog.drop_table("db.history")
        self.table = None

    def identity(self) -> str:
        return str(self.table.metadata.table_uuid)

    def source(self) -> IcebergSource:
        return IcebergSource.builder().table(self.table.metadata_location).timestamp_column("ts").build()


class DeltaHistory(HistoryTable):
    """A directory delta-rs writes; dropped by deleting it."""

    identity_name = "metaData.id"

    def append(self, ids: range) -> None:
        write_deltalake(self.place, events(ids), mode="append")

    def drop(self) -> None:
        shutil.rmtree(self.place)

    def identity(self) -> str:
        return DeltaTable(str(self.place)).metadata().id

    def source(self) -> DeltaSource:
        return DeltaSource.builder().table(str(self.place)).timestamp_column("ts").build()


HISTORIES = {"iceberg": IcebergHistory, "delta": DeltaHistory}


def produce_events(kafka: EmbeddedKafka, topic: str, ids: range) -> None:
    """`ids` as JSON records of `topic`'s two partitions (even ids in 0), timestamped at their event time."""
    kafka.produce(
        topic,
        [
            {
                "value": json.dumps({"id": i, "ts": (START + timedelta(seconds=i)).isoformat()}),
                "partition": i % 2,
                "timestamp": int((START + timedelta(seconds=i)).timestamp() * 1000),
            }
            for i in ids
        ],
    )


def table_then_kafka(history: HistoryTable, kafka: EmbeddedKafka, topic: str) -> HybridSource:
    """The table's current snapshot or version, then `topic` from its largest event time minus `MARGIN_MS`."""
    live = (
        KafkaSource.builder()
        .bootstrap_servers(kafka.bootstrap_servers)
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("format", "json")
        .option("schema", "id BIGINT, ts TIMESTAMP")
        .build()
    )
    return (
        HybridSource.builder(history.source()).add_source(live, start_at_previous_end_minus=MARGIN_MS).build()
    )


def rows_of(spark: SparkSession, source: Any) -> DataFrame:
    """`source`'s stream, `ROWS_PER_BATCH` rows a batch: the table (or hybrid) resolved now."""
    return sluice.from_source(spark, source, options={"maxRecordsPerTrigger": ROWS_PER_BATCH})


def run(spark: SparkSession, source: Any, tmp_path: Path, fail_where: str | None = None) -> Any:
    """Reads `source` (or a stream `rows_of` made of one earlier: a DataFrame a driver keeps and
    starts again) under Trigger.AvailableNow, `ROWS_PER_BATCH` rows a batch, into the Parquet sink
    `tmp_path / "sink"` (id, `_split`, `_position`) on the checkpoint `tmp_path / "checkpoint"`.
    With `fail_where` (SQL over those columns), the batch that reads a row it holds fails before the
    sink commits it, as a driver stopped then: Spark logged the batch's offset and never commits
    it, and the next run replays it from there. Returns what the query failed with, as
    `awaitTermination` raises it (None: the query ended)."""
    rows = source if isinstance(source, DataFrame) else rows_of(spark, source)
    rows = rows.select("id", "_split", "_position")
    if fail_where is not None:
        stop = F.raise_error(F.lit(f"stopped at a row where {fail_where}"))
        rows = rows.where(F.when(F.expr(fail_where), stop).otherwise(F.lit(True)))
    query = (
        rows.writeStream.format("parquet")
        .option("path", str(tmp_path / "sink"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        ended = query.awaitTermination(180)
    except Exception as failed:  # noqa: BLE001: what the query failed with is the caller's to check
        return failed
    if not ended:
        query.stop()
        raise AssertionError("the query did not end within 180 s")
    return None


def read_rows(spark: SparkSession, tmp_path: Path, topic: str) -> Counter[tuple[str, int]]:
    """The sink's rows as ("table" or "kafka", id), a multiset: each row the committed batches gave."""
    sink = tmp_path / "sink"
    if not (sink / "_spark_metadata").exists():
        return Counter()
    return Counter(
        ("kafka" if topic in r["_split"] else "table", r["id"])
        for r in spark.read.parquet(str(sink)).collect()
    )


def expected_rows(table: range, kafka: range) -> Counter[tuple[str, int]]:
    return Counter([("table", i) for i in table] + [("kafka", i) for i in kafka])


def kafka_starts(spark: SparkSession, tmp_path: Path, topic: str) -> list[int]:
    """The first offset the sink holds of each of `topic`'s partitions, by partition."""
    rows = spark.read.parquet(str(tmp_path / "sink")).where(F.col("_split").contains(topic))
    starts = rows.groupBy("_split").agg(F.min("_position").alias("start")).collect()
    return [r["start"] for r in sorted(starts, key=lambda r: r["_split"])]

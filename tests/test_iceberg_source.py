"""Iceberg tables as sources: tables written by pyiceberg (a local SQL catalog on sqlite, in pytest's
tmp dirs), read by Sluice, compared with pyiceberg's own scan of the same snapshot as multisets."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sluice
from checkpoints import as_written_by_the_bounded_build, logged_enumerator_field
from memory_sink import run_to_memory
from parquet_sink import (
    run_to_parquet_available_now,
    to_parquet,
    to_parquet_available_now,
    to_parquet_running,
)
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import (
    IcebergSource,
    WatermarkStrategy,
)
from window_counts import final_counts, late_dropped, window_counts


def test_the_assembled_jar_plans_an_iceberg_table_on_sparks_class_path(
    spark: SparkSession, tmp_path: Path
) -> None:
    """iceberg-core runs in the session's JVM with Spark's Avro and Jackson and its own relocated
    Caffeine: a table is created, a data file appended (metadata JSON, Avro manifests) and planned."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    iceberg = jvm.org.apache.iceberg
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    schema = iceberg.Schema(
        [iceberg.types.Types.NestedField.required(1, "id", iceberg.types.Types.LongType.get())]
    )
    location = str(tmp_path / "t")
    table = iceberg.hadoop.HadoopTables(conf).create(schema, location)
    data = (
        iceberg.DataFiles.builder(iceberg.PartitionSpec.unpartitioned())
        .withPath(location + "/data/f.parquet")
        .withFileSizeInBytes(100)
        .withRecordCount(3)
        .build()
    )
    table.newAppend().appendFile(data).commit()
    tasks = iceberg.hadoop.HadoopTables(conf).load(location).newScan().planFiles().iterator()
    planned = []
    while tasks.hasNext():
        planned.append(tasks.next().file().location())
    assert planned == [location + "/data/f.parquet"]
    # Caffeine comes relocated from Sluice's jar, never as com.github.benmanes.caffeine
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    assert loader.loadClass("sluice.shaded.com.github.benmanes.caffeine.cache.Caffeine") is not None


def _catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog(
        "sluice_tests",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=(tmp_path / "warehouse").as_uri(),
    )
    catalog.create_namespace("db")
    return catalog


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "city", StringType(), required=False),
    NestedField(3, "ts", TimestamptzType(), required=False),
)
ARROW = pa.schema([("id", pa.int64()), ("city", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
START = datetime(2026, 11, 1, tzinfo=UTC)


def _events(ids: range, minutes_from: int) -> pa.Table:
    """Rows `ids`, one a minute from `minutes_from` on, in two cities."""
    return pa.table(
        {
            "id": list(ids),
            "city": ["a" if i % 3 else "b" for i in ids],
            "ts": [START + timedelta(minutes=minutes_from + n) for n in range(len(ids))],
        },
        schema=ARROW,
    )


def _multiset(columns: list[str], rows: list[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[columns.index(c)] for c in sorted(columns)) for r in rows)


def _expected(
    table: Any, ts: str = "ts", as_named: dict[str, str] | None = None, **scan: Any
) -> Counter[tuple[Any, ...]]:
    """pyiceberg's own read of the snapshot, timestamp column `ts` as epoch microseconds; with
    `as_named`, only its columns, each under the name it maps to (a stream's names at its start)."""
    arrow = table.scan(**scan).to_arrow()
    arrow = arrow.set_column(arrow.schema.get_field_index(ts), ts, arrow.column(ts).cast(pa.int64()))
    if as_named is not None:
        arrow = arrow.select(list(as_named)).rename_columns(list(as_named.values()))
    return _multiset(arrow.column_names, [tuple(r.values()) for r in arrow.to_pylist()])


def _got(df: DataFrame, ts: str = "ts") -> Counter[tuple[Any, ...]]:
    data = df.drop("_split", "_position", "_timestamp", "event_time")
    data = data.withColumn(ts, F.unix_micros(ts)) if ts in data.columns else data
    return _multiset(data.columns, [tuple(r) for r in data.collect()])


def test_a_table_written_in_commits_out_of_event_time_order_streams_the_same_rows_as_pyiceberg(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Three appends, the newest events first: a micro-batch read of 25 rows a batch (so batches end
    inside files and row groups) gives pyiceberg's rows of the snapshot, once each."""
    table = _catalog(tmp_path).create_table("db.events", schema=SCHEMA)
    for ids, minutes in ((range(40, 60), 40), (range(0, 20), 0), (range(20, 40), 20)):
        table.append(_events(ids, minutes))
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    query = (
        sluice.from_source(spark, source, name="iceberg_events")
        .writeStream.format("memory")
        .queryName("py_iceberg_events")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("maxRecordsPerTrigger", "25")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    got = spark.table("py_iceberg_events")
    assert got.columns[:3] == ["id", "city", "ts"]
    assert _got(got) == _expected(table)
    assert got.select("_split").distinct().count() == 3  # one split per file (one row group each)


def test_partitioned_table_with_deletes_and_an_added_column_reads_as_pyiceberg(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Identity-partitioned by city, rows deleted (pyiceberg rewrites the files: copy-on-write), a
    column added after the first files: a batch read equals pyiceberg's scan (the old files' rows
    have a null in the new column); a pushed filter on the partition column reads only its files."""
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city")
    )
    table = _catalog(tmp_path).create_table("db.partitioned", schema=SCHEMA, partition_spec=spec)
    table.append(_events(range(0, 30), 0))
    table.delete("id < 5")
    with table.update_schema() as update:
        update.add_column("extra", LongType())
    newer = _events(range(30, 45), 30)
    table.append(newer.append_column("extra", pa.array(list(range(15)), pa.int64())))
    table = table.refresh()

    got = sluice.read(spark, IcebergSource.builder().table(table.metadata_location).build())
    assert got.columns[:4] == ["id", "city", "ts", "extra"]
    assert _got(got) == _expected(table)
    assert sum(_got(got).values()) == 40

    only_b = got.where(F.col("city") == "b")
    assert _got(only_b) == _expected(table, row_filter="city == 'b'")
    # what the source read, before Spark's filter: the rows of city b's files only (unpruned, 40)
    source = IcebergSource.builder().table(table.metadata_location).build()
    stream = sluice.from_source(spark, source, name="partitioned_b").where(F.col("city") == "b")
    query = run_to_memory(stream, "py_iceberg_partitioned_b", tmp_path / "checkpoint")
    assert sum(p["numInputRows"] for p in query.recentProgress) == sum(_got(only_b).values()) < 40


def _append_file(table: Any, rows: list[dict[str, Any]], schema: Schema, partition: str, name: str) -> None:
    """Commits a data file of `rows` with `schema` (the table's fields it holds: Iceberg's spec lets a
    writer leave an identity partition's source field out of a file) to `table`'s partition
    `partition` (a one-field partition tuple): written by pyiceberg's own Parquet writer (field ids,
    its statistics) and committed by its own fast append."""
    from pyiceberg.io.pyarrow import ParquetFormatWriter, schema_to_pyarrow
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    arrow = pa.Table.from_pylist(rows, schema=schema_to_pyarrow(schema))
    path = f"{table.location()}/data/{name}.parquet"
    output = table.io.new_output(path)
    with ParquetFormatWriter(output, schema, table.properties) as writer:
        writer.write(arrow)
    data = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(partition),
        file_size_in_bytes=len(output),
        spec_id=table.metadata.default_spec_id,
        **writer.result().to_serialized_dict(),
    )
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(data)


def _append_without_the_partition_column(table: Any, rows: pa.Table, city: str) -> None:
    """Commits a data file of `rows` (id and ts only) to `table`'s partition city=`city`."""
    kept = Schema(*[f for f in table.schema().fields if f.name != "city"])
    _append_file(
        table, rows.select([f.name for f in kept.fields]).to_pylist(), kept, city, "without-the-column"
    )


def test_a_file_without_its_identity_partition_column_reads_the_partition_value_as_pyiceberg(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A data file that leaves out its identity partition column (city 'c'), beside files that
    hold it: its rows read 'c' there, as pyiceberg reads them (Iceberg fills the column from the
    file's partition tuple), never null: read as column batches and as rows, bounded and as a
    stream planned from the manifests' statistics (a batch ending inside the file), and a pushed
    filter on the column keeps exactly that file's rows."""
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="city")
    )
    table = _catalog(tmp_path).create_table("db.omitted", schema=SCHEMA, partition_spec=spec)
    table.append(_events(range(0, 12), 0))
    _append_without_the_partition_column(table, _events(range(100, 110), 100), "c")
    table = table.refresh()
    expected = _expected(table)
    # pyiceberg's own read gives the partition's value in the file without the column
    assert Counter(city for city, _, _ in expected.elements()) == {"a": 8, "b": 4, "c": 10}

    source = IcebergSource.builder().table(table.metadata_location).build()
    assert _got(sluice.read(spark, source)) == expected
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        as_rows = sluice.read(spark, source).collect()
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    assert _got(spark.createDataFrame(as_rows)) == expected
    only_c = sluice.read(spark, source).where(F.col("city") == "c")
    assert _got(only_c) == _expected(table, row_filter="city == 'c'")
    assert sum(_got(only_c).values()) == 10

    timed = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    stream = sluice.from_source(spark, timed, name="omitted", options={"maxRecordsPerTrigger": 15})
    run_to_memory(stream, "py_iceberg_omitted", tmp_path / "checkpoint")
    assert _got(spark.table("py_iceberg_omitted")) == expected


def test_a_file_without_a_struct_fields_identity_partition_reads_the_partition_value_as_pyiceberg(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Partitioned by identity on a field inside a struct (loc.city): a file whose struct leaves the
    field out reads its partition's value there in every row whose struct is there (a null struct
    stays null), as pyiceberg reads it, as column batches and as rows, and a filter on the field
    keeps exactly those rows."""
    loc = StructType(
        NestedField(4, "city", StringType(), required=False),
        NestedField(5, "zone", StringType(), required=False),
    )
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "loc", loc, required=False),
        NestedField(3, "ts", TimestamptzType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=4, field_id=1000, transform=IdentityTransform(), name="city")
    )
    table = _catalog(tmp_path).create_table("db.nested", schema=schema, partition_spec=spec)

    def rows(ids: range, loc: Any) -> list[dict[str, Any]]:
        return [{"id": i, "loc": loc(i), "ts": START + timedelta(minutes=i)} for i in ids]

    _append_file(table, rows(range(0, 6), lambda i: {"city": "a", "zone": f"z{i % 2}"}), schema, "a", "whole")
    without_city = Schema(
        schema.fields[0],
        NestedField(2, "loc", StructType(loc.fields[1]), required=False),
        schema.fields[2],
    )
    _append_file(
        table,
        rows(range(100, 106), lambda i: None if i == 103 else {"zone": f"z{i % 2}"}),
        without_city,
        "c",
        "without",
    )
    table = table.refresh()

    def flat(loc: Any) -> tuple[Any, ...]:
        return (None, None, True) if loc is None else (loc["city"], loc["zone"], False)

    expected = Counter(
        (r["id"], *flat(r["loc"]), int(r["ts"].timestamp() * 1_000_000))
        for r in table.scan().to_arrow().to_pylist()
    )
    # pyiceberg fills the field in the struct, and keeps the null struct null
    assert (
        expected[(103, None, None, True, int((START + timedelta(minutes=103)).timestamp() * 1_000_000))] == 1
    )
    assert sum(n for (_, city, _, _, _), n in expected.items() if city == "c") == 5

    def got(df: DataFrame) -> Counter[tuple[Any, ...]]:
        return Counter(
            tuple(r)
            for r in df.select(
                "id", "loc.city", "loc.zone", F.col("loc").isNull(), F.unix_micros("ts")
            ).collect()
        )

    source = IcebergSource.builder().table(table.metadata_location).build()
    assert got(sluice.read(spark, source)) == expected
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        assert got(sluice.read(spark, source)) == expected
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    only_c = sluice.read(spark, source).where(F.col("loc.city") == "c")
    assert got(only_c) == Counter({k: n for k, n in expected.items() if k[1] == "c"})


def test_snapshots_by_id_and_time_and_columns_renamed_or_named_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An earlier snapshot by id or time reads its rows. Columns are found in the files by field id,
    as Iceberg finds them: after a rename every file's values read under the new name, and a new
    column given a dropped column's name reads null from the files written before it, as pyiceberg's
    own scan reads them; an unbounded read started before the rename reads the files appended after
    it under the column's name at its start."""
    table = _catalog(tmp_path).create_table("db.history", schema=SCHEMA)
    table.append(_events(range(0, 10), 0))
    first = table.current_snapshot()
    assert first is not None
    table.append(_events(range(10, 20), 10))
    at_first = IcebergSource.builder().table(table.refresh().metadata_location).snapshot_id(first.snapshot_id)
    assert _got(sluice.read(spark, at_first.build())) == _expected(table, snapshot_id=first.snapshot_id)
    by_time = IcebergSource.builder().table(table.metadata_location).as_of_timestamp(first.timestamp_ms)
    assert _got(sluice.read(spark, by_time.build())) == _expected(table, snapshot_id=first.snapshot_id)

    def latest() -> DataFrame:
        return sluice.read(spark, IcebergSource.builder().table(table.refresh().metadata_location).build())

    def appended(ids: range, column: str, value: str) -> pa.Table:
        rows = _events(ids, ids.start).rename_columns(["id", column, "ts"])
        return rows.set_column(1, column, pa.array([value] * len(ids)))

    # an unbounded read started before the rename keeps the columns it started with
    stream = IcebergSource.builder().table(table.metadata_location).monitor_interval(1).build()
    running = to_parquet_running(spark, stream, tmp_path, "renamed")
    running.processAllAvailable()

    with table.update_schema() as update:
        update.rename_column("city", "town")
    table.append(appended(range(20, 25), "town", "c"))
    running.processAllAvailable()
    running.stop()
    # pyiceberg's rows (id, town, ts) as the stream's columns sort them (city, id, ts)
    as_started = Counter({(t[1], t[0], t[2]): n for t, n in _expected(table).items()})
    assert _got(spark.read.parquet(str(tmp_path / "sink"))) == as_started
    renamed = latest()
    assert renamed.columns[:3] == ["id", "town", "ts"]
    assert _got(renamed) == _expected(table)
    assert _got(renamed.where("id < 20")) == _expected(table, row_filter="id < 20")  # written as city
    # a pushed filter on the new name prunes the older files' row groups by their column of its id
    assert _got(renamed.where("town = 'a'")) == _expected(table, row_filter="town == 'a'")

    with table.update_schema() as update:
        update.delete_column("town")
    with table.update_schema() as update:
        update.add_column("city", StringType())
    table.append(appended(range(25, 30), "city", "new"))
    again = latest()
    assert again.columns[:3] == ["id", "ts", "city"]
    assert _got(again) == _expected(table)
    assert again.where("city IS NOT NULL").count() == 5  # none of the dropped column's values
    # Pushed filters on the reused name are mapped to each file's columns by the field id the column
    # is read by: the files written first hold a column of that name (the dropped one, without
    # nulls), whose statistics would skip every row group of theirs under 'city IS NULL' were they
    # found by name, and those rows would be missing here (what is read is counted in the next test)
    for where in ("city IS NULL", "city = 'new'", "city IS NULL AND id >= 5"):
        expected = _expected(table, row_filter=where)
        assert sum(expected.values()) > 0 and _got(again.where(where)) == expected, where


def test_promoted_columns_read_and_pushed_filters_prune_the_files_written_before_the_promotion(
    spark: SparkSession, tmp_path: Path
) -> None:
    """`n` promoted from int to long and `f` from float to double (Iceberg's type promotions): the
    files written before hold INT32 and FLOAT columns, read under the promoted types, and a pushed
    filter, whose literals are of the promoted types, prunes their row groups (5 rows each) without
    losing a row: the rows are pyiceberg's scan of the same filter."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "n", IntegerType(), required=False),
        NestedField(3, "f", FloatType(), required=False),
    )
    table = _catalog(tmp_path).create_table(
        "db.promoted", schema=schema, properties={"write.parquet.row-group-limit": "5"}
    )
    old = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("f", pa.float32())])
    table.append(pa.table({"id": range(20), "n": range(20), "f": [i * 1.5 for i in range(20)]}, schema=old))
    with table.update_schema() as update:
        update.update_column("n", field_type=LongType())
        update.update_column("f", field_type=DoubleType())
    new = pa.schema([("id", pa.int64()), ("n", pa.int64()), ("f", pa.float64())])
    table.append(
        pa.table({"id": range(20, 40), "n": range(20, 40), "f": [i * 1.5 for i in range(20, 40)]}, schema=new)
    )

    got = sluice.read(spark, IcebergSource.builder().table(table.metadata_location).build())
    assert [(f.name, f.dataType.simpleString()) for f in got.schema.fields[:3]] == [
        ("id", "bigint"),
        ("n", "bigint"),
        ("f", "double"),
    ]
    rows = Counter((r.id, r.n, r.f) for r in got.collect())
    assert rows == Counter((i, i, i * 1.5) for i in range(40))
    for where in ("n = 5", "n >= 12 AND n < 27", "n >= 19 AND n <= 20", "f > 20.0", "f = 4.5"):
        expected = Counter(
            (r["id"], r["n"], r["f"]) for r in table.scan(row_filter=where).to_arrow().to_pylist()
        )
        assert sum(expected.values()) > 0, where
        assert Counter((r.id, r.n, r.f) for r in got.where(where).collect()) == expected, where
    # the pushed filter prunes: `n = 5` reads one row group of the old file (rows 5..9) and none of the new
    source = IcebergSource.builder().table(table.metadata_location).build()
    stream = sluice.from_source(spark, source, name="promoted").where("n = 5")
    query = run_to_memory(stream, "py_iceberg_promoted", tmp_path / "checkpoint")
    assert sum(p["numInputRows"] for p in query.recentProgress) == 5
    assert [r.id for r in spark.table("py_iceberg_promoted").collect()] == [5]


def test_an_unbounded_read_with_a_pushed_filter_finds_its_column_by_field_id_across_a_rename_a_reused_name_and_a_restart(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A stream filtered on `city` ('b'), pushed to Iceberg's planning and to the row groups: the column
    renamed `town` while it runs and its old name given to a new column while it is stopped, every
    snapshot appended after is planned by the field id the stream reads `city` by (its current name
    `town`), not by the name: the restarted stream holds pyiceberg's rows with `town` 'b', once each,
    under the columns it started with, none of the new `city`'s values. (Planned by name, the plan
    after the rename failed, not finding `city`; pruned by name, the new file's row groups were
    skipped by its new `city`'s statistics.)"""
    table = _catalog(tmp_path).create_table("db.evolving", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    first = table.current_snapshot()
    assert first is not None
    sink = str(tmp_path / "sink")

    def start() -> Any:
        # the start snapshot named: restarted, the source keeps its columns (built from the table
        # alone, a restart would take the current snapshot's schema, where `city` is the new column)
        builder = IcebergSource.builder().table(table.metadata_location).snapshot_id(first.snapshot_id)
        return to_parquet_running(
            spark, builder.monitor_interval(1).build(), tmp_path, "evolving", "city = 'b'"
        )

    query = start()
    query.processAllAvailable()
    with table.update_schema() as update:
        update.rename_column("city", "town")
    table.append(_events(range(20, 30), 20).rename_columns(["id", "town", "ts"]))  # while it runs
    query.processAllAvailable()
    query.stop()
    with table.update_schema() as update:
        update.add_column("city", StringType())
    # while it is stopped: a file whose new `city` is 'x' only (its bounds leave 'b' out)
    reused = _events(range(30, 40), 30).rename_columns(["id", "town", "ts"])
    table.append(reused.append_column("city", pa.array(["x"] * 10)))
    query = start()  # from the checkpoint
    query.processAllAvailable()
    query.stop()
    as_started = {"id": "id", "town": "city", "ts": "ts"}
    expected = _expected(table.refresh(), as_named=as_started, row_filter="town == 'b'")
    # `city` 'b' where the id is divisible by 3: 7 rows before the rename, 3 after it, 4 after the reuse
    assert sum(expected.values()) == 14
    assert _got(spark.read.parquet(sink)) == expected


def test_a_watermark_on_a_renamed_column_places_every_file_by_its_statistics_of_the_columns_field_id(
    spark: SparkSession, tmp_path: Path
) -> None:
    """`ts` renamed `at` between two appends, the newer events first; aligned, every file is planned by
    its footer's row groups: the file written before the rename, whose footer names the column `ts`,
    is placed by its statistics of the same field id, as the one written after. The aligned watermark
    query reads them in event-time order and drops nothing as late; its rows are pyiceberg's."""
    table = _catalog(tmp_path).create_table("db.renamed_ts", schema=SCHEMA)
    table.append(_events(range(20, 40), 20))
    with table.update_schema() as update:
        update.rename_column("ts", "at")
    table.append(_events(range(0, 20), 0).rename_columns(["id", "city", "at"]))
    source = IcebergSource.builder().table(table.refresh().metadata_location).timestamp_column("at").build()
    placed = Counter((rows, lo, hi) for _, rows, lo, hi in _splits(spark, source, aligned_within_ms=60_000))
    assert placed == Counter(
        [
            (20, _ms(START), _ms(START + timedelta(minutes=19))),
            (20, _ms(START + timedelta(minutes=20)), _ms(START + timedelta(minutes=39))),
        ]
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "iceberg-renamed-ts", timedelta(minutes=1), timedelta(milliseconds=100)
    )
    stream = sluice.from_source(spark, source, strategy, name="renamed_ts")
    query = window_counts(stream, "event_time", "py_iceberg_renamed_ts", tmp_path / "checkpoint")
    assert late_dropped(query) == 0
    windows = final_counts(spark, "py_iceberg_renamed_ts")
    assert windows.count() == 40 and windows.where("n != 1").count() == 0
    assert _got(sluice.read(spark, source), ts="at") == _expected(table, ts="at")


def test_files_out_of_event_time_order_drop_nothing_as_late_where_sparks_parquet_stream_does(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Three files of 30 minutes each, committed in shuffled order; 1-minute windows under a 10-minute
    watermark. Sluice, aligned by the files' statistics, reads them in event-time order: no row is
    dropped as late. Spark's Parquet stream over the same files (a file a batch, in the order they
    were written) drops rows of every file older than the newest read."""
    table = _catalog(tmp_path).create_table("db.shuffled", schema=SCHEMA)
    for half_hour in (2, 0, 1):  # 180 rows a file, one every 10 s: 6 a minute
        ids = range(half_hour * 180, (half_hour + 1) * 180)
        rows = {"id": list(ids), "city": ["a"] * 180, "ts": [START + timedelta(seconds=10 * i) for i in ids]}
        table.append(pa.table(rows, schema=ARROW))
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "iceberg-shuffled", timedelta(minutes=1), timedelta(milliseconds=100)
    )
    sluice_query = window_counts(
        sluice.from_source(spark, source, strategy, name="shuffled"),
        "event_time",
        "py_iceberg_windows",
        tmp_path / "sluice-checkpoint",
    )
    assert late_dropped(sluice_query) == 0
    windows = final_counts(spark, "py_iceberg_windows")
    assert windows.count() == 90 and windows.where("n != 6").count() == 0

    data = table.location() + "/data"
    parquet = spark.readStream.schema(spark.read.parquet(data).schema).option("maxFilesPerTrigger", 1)
    spark_query = window_counts(
        parquet.parquet(data), "ts", "py_iceberg_windows_spark", tmp_path / "spark-checkpoint"
    )
    assert late_dropped(spark_query) > 0


def test_a_restarted_query_reads_its_snapshot_on_not_the_tables_newer_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The snapshot is the query's, kept in its checkpoint: after a commit to the table, the query
    restarted from its checkpoint reads nothing more (Spark's file sink holds each row once), also
    from a checkpoint as the bounded build wrote it; read unbounded from that one, it is refused."""
    table = _catalog(tmp_path).create_table("db.restarted", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    sink = str(tmp_path / "sink")

    def run() -> None:
        source = IcebergSource.builder().table(table.refresh().metadata_location).build()
        run_to_parquet_available_now(spark, source, tmp_path, "restarted")

    run()
    first = table.current_snapshot()
    assert first is not None
    table.append(_events(range(20, 40), 20))
    # as the bounded build wrote it (enumerator state version 1, no snapshot planned): it still reads
    as_written_by_the_bounded_build(tmp_path / "checkpoint")
    run()
    assert _got(spark.read.parquet(sink)) == _expected(table, snapshot_id=first.snapshot_id)
    # read unbounded from such a checkpoint, which does not say which snapshot it planned: refused
    unbounded = IcebergSource.builder().table(table.metadata_location).monitor_interval(1).build()
    query = to_parquet_available_now(spark, unbounded, tmp_path, "restarted")
    with pytest.raises(Exception) as refused:
        query.awaitTermination(120)
    failure = str(refused.value)
    assert "does not record which snapshot" in failure and "'monitorIntervalMs'" in failure, failure


def _splits(
    spark: SparkSession, source: Any, aligned_within_ms: int | None = None
) -> list[tuple[str, int, int | None, int | None]]:
    """The splits the source's enumerator makes on the driver: (file name, rows, min, max event time);
    told the alignment group's drift first when `aligned_within_ms` is given, as the query's runtime does."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jmap = jvm.java.util.HashMap()
    for k, v in source.options.items():
        jmap.put(k, v)
    enumerator = jvm.sluice.Sources.fromJavaOptions(jmap).createEnumerator()
    if aligned_within_ms is not None:
        enumerator.alignedWithin(aligned_within_ms)
    found = enumerator.discoverSplits()

    def opt(o: Any) -> int | None:
        return o.get() if o.isDefined() else None

    splits = [found.apply(i) for i in range(found.size())]
    return sorted(
        (Path(s.path()).name, s.rowCount(), opt(s.minEventTime()), opt(s.maxEventTime())) for s in splits
    )


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def test_with_statistics_planning_opens_no_data_file_and_a_broken_one_fails_when_read(
    spark: SparkSession, tmp_path: Path
) -> None:
    """With a timestampColumn each data file is one split placed by its manifest bounds: a data file
    whose footer is broken (its last bytes zeroed, its length kept) is planned all the same, and only
    reading it fails, naming the file."""
    table = _catalog(tmp_path).create_table("db.unopened", schema=SCHEMA)
    for ids, minutes in ((range(40, 60), 40), (range(0, 20), 0)):
        table.append(_events(ids, minutes))
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    files = sorted(Path(t.file.file_path.removeprefix("file:")) for t in table.scan().plan_files())
    by_name = {f.name: f for f in files}
    splits = _splits(spark, source)
    assert sorted((rows, lo, hi) for _, rows, lo, hi in splits) == [
        (20, _ms(START), _ms(START + timedelta(minutes=19))),
        (20, _ms(START + timedelta(minutes=40)), _ms(START + timedelta(minutes=59))),
    ]
    broken = by_name[splits[0][0]]
    with open(broken, "r+b") as f:
        f.seek(-8, 2)
        f.write(b"\0" * 8)
    assert _splits(spark, source) == splits
    with pytest.raises(Exception, match=broken.name):
        sluice.read(spark, source).collect()


def test_a_table_without_bounds_of_the_column_falls_back_to_footers_and_reads_exactly(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Metrics mode `counts` keeps no bounds: the source warns once, naming the column, the table and
    the property to set, splits each file by its row groups' footer statistics, and reads the same
    rows as pyiceberg."""
    table = _catalog(tmp_path).create_table(
        "db.counts", schema=SCHEMA, properties={"write.metadata.metrics.default": "counts"}
    )
    for ids, minutes in ((range(20, 40), 20), (range(0, 20), 0)):
        table.append(_events(ids, minutes))
    snapshot = table.current_snapshot()
    assert snapshot is not None
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    # from the footers: the same ranges, each file opened
    assert sorted((rows, lo, hi) for _, rows, lo, hi in _splits(spark, source)) == [
        (20, _ms(START), _ms(START + timedelta(minutes=19))),
        (20, _ms(START + timedelta(minutes=20)), _ms(START + timedelta(minutes=39))),
    ]
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    warning = jvm.sluice.connector.table.TableEventTimes.warning(
        table.metadata_location, f"snapshot {snapshot.snapshot_id}", "ts"
    )
    assert warning.isDefined()
    assert "2 data file(s)" in warning.get() and "write.metadata.metrics.column.ts" in warning.get()
    assert _got(sluice.read(spark, source)) == _expected(table)


def test_a_file_of_several_row_groups_is_one_split_read_exactly_as_rows_and_as_batches(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Row groups of 7 rows (3 a file of 20): each file is one split from its manifest bounds, read
    over its whole byte range. A stream of 20 rows a batch (10 a file) ends inside row groups, so a range resumes
    mid-file, read as column batches; a batch read without Spark's vectorized reader reads rows:
    both give every row once, as pyiceberg reads them, its `_position` its row index in the file."""
    import pyarrow.parquet as pq

    table = _catalog(tmp_path).create_table(
        "db.row_groups", schema=SCHEMA, properties={"write.parquet.row-group-limit": "7"}
    )
    for ids, minutes in ((range(20, 40), 20), (range(0, 20), 0)):
        table.append(_events(ids, minutes))
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    assert [rows for _, rows, _, _ in _splits(spark, source)] == [20, 20]
    for task in table.scan().plan_files():
        assert pq.ParquetFile(task.file.file_path.removeprefix("file:")).num_row_groups == 3
    stream = sluice.from_source(spark, source, name="row_groups", options={"maxRecordsPerTrigger": 20})
    query = run_to_memory(stream, "py_iceberg_row_groups", tmp_path / "checkpoint")
    # two batches of 10 rows a file: the second's ranges [10, 20) start in each file's row group
    # [7, 14), so only its rows 7-9 are decoded and dropped (3 a file), not the file's rows 0-9
    progress = [(p["numInputRows"], p["sources"][0]["metrics"]) for p in query.recentProgress]
    assert [(rows, int(m["rowsDecodedBeforeStart"])) for rows, m in progress] == [(20, 0), (20, 6)]
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        as_rows = sluice.read(spark, source).collect()
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    for got in (spark.table("py_iceberg_row_groups"), spark.createDataFrame(as_rows)):
        assert _got(got) == _expected(table)
        # rows in each file are in id order: a row's position is its id's place in its file
        assert got.where((F.col("id") % 20) != F.col("_position")).count() == 0


def test_aligned_every_file_is_planned_by_its_row_groups_and_drops_nothing_late(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A compacted file of an hour, in row groups of 10 minutes, and a file of 45 s inside it in row
    groups of 15 s; aligned with a 1-minute drift under a 10-minute watermark. Both files are planned
    by their footers' row groups, as the Parquet source plans them, the short one too though its
    span is within the drift: a whole-file split straddling the horizon is read whole, carrying the
    watermark past it by the file's span, not a row group's, and a lagging member's rows would be
    dropped as late. The query's offsets name row groups only; no row is dropped as late: every
    minute's window has all its rows. Not aligned, each file is one split from its manifest bounds."""
    table = _catalog(tmp_path).create_table(
        "db.compacted", schema=SCHEMA, properties={"write.parquet.row-group-limit": "10"}
    )
    table.append(_events(range(0, 60), 0))
    short = {
        "id": list(range(100, 130)),
        "city": ["a"] * 30,
        "ts": [START + timedelta(minutes=30, seconds=1.5 * n) for n in range(30)],
    }
    table.append(pa.table(short, schema=ARROW))
    source = IcebergSource.builder().table(table.metadata_location).timestamp_column("ts").build()
    splits = _splits(spark, source, aligned_within_ms=60_000)
    assert sorted(rows for _, rows, _, _ in splits) == [10] * 9
    assert sorted(Counter(name for name, _, _, _ in splits).values()) == [3, 6]
    # not aligned: both files whole, from their manifest bounds
    assert sorted(rows for _, rows, _, _ in _splits(spark, source)) == [30, 60]
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "iceberg-compacted", timedelta(minutes=1), timedelta(milliseconds=100)
    )
    query = window_counts(
        sluice.from_source(spark, source, strategy, name="compacted"),
        "event_time",
        "py_iceberg_compacted",
        tmp_path / "checkpoint",
    )
    assert late_dropped(query) == 0
    windows = final_counts(spark, "py_iceberg_compacted")
    assert sorted(r["n"] for r in windows.collect()) == [1] * 59 + [31]
    # the query's own splits, as its offset log holds them: row groups of both files, no whole file
    in_offsets = set()
    for batch in (tmp_path / "checkpoint" / "offsets").glob("[0-9]*"):
        for line in batch.read_text().splitlines():
            if line.startswith("{") and '"splits"' in line:
                in_offsets |= {s["id"] for s in json.loads(line)["splits"]}
    assert in_offsets and all("#rowgroup=" in i for i in in_offsets), in_offsets
    assert {Path(i.split("#")[0]).name for i in in_offsets} == {name for name, _, _, _ in splits}


def test_unbounded_reads_each_appended_row_once_across_a_restart_and_refuses_or_skips_a_delete(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Unbounded (monitor_interval): appends committed while the query runs, and while it is stopped,
    are read once each (Spark's file sink keeps each row once: the sink equals pyiceberg's read of
    the table). A delete snapshot fails the query naming it; restarted with skip_changes, it is
    passed over and the append after it read (under Trigger.AvailableNow), the deleted rows staying
    read."""
    table = _catalog(tmp_path).create_table("db.unbounded", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    sink = str(tmp_path / "sink")

    def start(skip: bool = False, available_now: bool = False) -> Any:
        builder = IcebergSource.builder().table(table.metadata_location).monitor_interval(1)
        writer = to_parquet(spark, builder.skip_changes(skip).build(), tmp_path, "unbounded")
        if available_now:  # reads what was committed when it starts, then ends
            return writer.trigger(availableNow=True).start()
        return writer.trigger(processingTime="100 milliseconds").start()  # each trigger plans

    def sink_rows() -> Counter[tuple[Any, ...]]:
        return _got(spark.read.parquet(sink))

    def current() -> int:
        snapshot = table.refresh().current_snapshot()
        assert snapshot is not None
        return snapshot.snapshot_id

    def planned() -> list[int]:  # each snapshot the offset log records as planned last, once
        return list(dict.fromkeys(logged_enumerator_field(tmp_path / "checkpoint", "tableVersion")))

    appends = [current()]
    query = start()
    query.processAllAvailable()
    table.append(_events(range(20, 40), 20))  # while it runs
    appends.append(current())
    query.processAllAvailable()
    query.stop()
    # the sink keeps a file once whatever the checkpoint says: the snapshots are asserted apart
    assert planned() == appends
    table.append(_events(range(40, 60), 40))  # while it is stopped
    appends.append(current())
    query = start()  # from the checkpoint: neither the start snapshot again nor past an append
    query.processAllAvailable()
    table.append(_events(range(60, 80), 60))
    appends.append(current())
    query.processAllAvailable()
    assert sink_rows() == _expected(table)
    assert sum(sink_rows().values()) == 80
    assert planned() == appends
    before_delete = table.current_snapshot()
    assert before_delete is not None

    table.delete("id < 20")  # every row of the first file: a delete snapshot
    deleted = next(s for s in table.snapshots() if s.parent_snapshot_id == before_delete.snapshot_id)
    with pytest.raises(Exception) as failed:
        query.processAllAvailable()
    query.stop()
    message = str(failed.value)
    assert f"snapshot {deleted.snapshot_id} of table" in message, message
    assert "is not an append" in message and "'skipChanges'" in message, message
    assert sink_rows() == _expected(table, snapshot_id=before_delete.snapshot_id)

    table.append(_events(range(80, 90), 80))
    query = start(skip=True, available_now=True)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    # the delete was skipped (its rows stay read), the append after it read once
    assert sink_rows() == _expected(table, snapshot_id=before_delete.snapshot_id) + _expected(
        table, row_filter="id >= 80"
    )
    # the refused delete snapshot was never logged, then skipped: the append after it is the last
    assert planned() == [*appends, current()]


def _append_again(table: Any, ids_from: int) -> None:
    """A fast append (pyiceberg's own) of the data file whose first row has id `ids_from`, which an
    earlier snapshot appended: the table then holds the file twice, as Iceberg Java's
    `newFastAppend().appendFile(file)` of the same DataFile leaves it. (pyiceberg's add_files with
    check_duplicate_files=False does the same but sets a name mapping, which Sluice refuses.)"""
    data = next(t.file for t in table.scan(row_filter=f"id == {ids_from}").plan_files())
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(data)


def test_an_unbounded_read_of_a_metadata_file_whose_name_gives_no_version_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A metadata file named without its version (a copy, another naming) cannot be followed to
    later commits: read bounded it reads its snapshot; unbounded it is refused when the source is
    defined, naming the file and what to give instead, rather than never seeing a later commit."""
    table = _catalog(tmp_path).create_table("db.unnamed", schema=SCHEMA)
    table.append(_events(range(0, 10), 0))
    copy = tmp_path / "warehouse" / "db" / "unnamed" / "metadata" / "current.metadata.json"
    copy.write_bytes(Path(table.metadata_location.removeprefix("file://")).read_bytes())
    bounded = IcebergSource.builder().table(str(copy)).build()
    assert _got(sluice.read(spark, bounded)) == _expected(table)
    with pytest.raises(Exception) as refused:
        unbounded = IcebergSource.builder().table(str(copy)).monitor_interval(1).build()
        run_to_memory(sluice.from_source(spark, unbounded, name="unnamed"), "py_iceberg_unnamed")
    failure = str(refused.value)
    assert "current.metadata.json' names none" in failure and "'monitorIntervalMs'" in failure, failure


def test_a_table_that_removes_old_metadata_files_is_followed_running_and_a_restart_names_the_current_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A table that removes its old metadata files after commits (delete-after-commit, one previous
    version kept) removes the file a query was started with: the running query follows the newest
    file beside it all the same; restarted with the removed file it fails, naming it and saying to
    give the current one; given the current one, it goes on from its checkpoint, every row once."""
    table = _catalog(tmp_path).create_table(
        "db.pruned",
        schema=SCHEMA,
        properties={
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "1",
        },
    )
    table.append(_events(range(0, 10), 0))
    first = table.metadata_location

    def source(location: str) -> Any:
        return IcebergSource.builder().table(location).monitor_interval(1).build()

    query = to_parquet_running(spark, source(first), tmp_path, "pruned")
    query.processAllAvailable()
    table.append(_events(range(10, 20), 10))
    table.append(_events(range(20, 30), 20))
    assert not Path(first.removeprefix("file://")).exists(), "pyiceberg kept the first metadata file"
    query.processAllAvailable()
    query.stop()
    assert _got(spark.read.parquet(str(tmp_path / "sink"))) == _expected(table)

    table.append(_events(range(30, 40), 30))
    with pytest.raises(Exception) as refused:
        run_to_parquet_available_now(spark, source(first), tmp_path, "pruned")
    failure = str(refused.value)
    assert first.removeprefix("file://") in failure and "delete-after-commit" in failure, failure
    assert "given the table's current metadata file" in failure, failure
    run_to_parquet_available_now(spark, source(table.metadata_location), tmp_path, "pruned")
    read = _got(spark.read.parquet(str(tmp_path / "sink")))
    assert read == _expected(table) and sum(read.values()) == 40


def test_a_file_appended_twice_is_read_twice_as_pyiceberg_reads_it_bounded_and_unbounded_across_a_restart(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A snapshot may append a data file an earlier snapshot appended (same path): Iceberg's scans,
    pyiceberg's too, then give its rows twice, and so does Sluice, unbounded (the append read while
    the query runs and while it is stopped, each once, across a restart from the checkpoint) and
    bounded (each entry a split of its own, named by the snapshot)."""
    table = _catalog(tmp_path).create_table("db.twice", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    table.append(_events(range(20, 40), 20))
    sink = str(tmp_path / "sink")

    def start() -> Any:
        source = IcebergSource.builder().table(table.metadata_location).monitor_interval(1).build()
        return to_parquet_running(spark, source, tmp_path, "twice")

    def sink_rows() -> Counter[tuple[Any, ...]]:
        return _got(spark.read.parquet(sink))

    query = start()
    query.processAllAvailable()
    _append_again(table, 0)  # while it runs
    query.processAllAvailable()
    expected = _expected(table.refresh())
    # pyiceberg's own read gives the file appended twice twice: what a reader of the table returns
    assert sum(expected.values()) == 60 and max(expected.values()) == 2
    assert sink_rows() == expected
    query.stop()
    _append_again(table, 20)  # while it is stopped
    query = start()  # from the checkpoint: the entries read before are known, the new one is not
    query.processAllAvailable()
    query.stop()
    expected = _expected(table.refresh())
    assert sum(expected.values()) == 80 and set(expected.values()) == {2}
    assert sink_rows() == expected

    bounded = sluice.read(spark, IcebergSource.builder().table(table.metadata_location).build())
    assert _got(bounded) == expected
    splits = sorted(r[0] for r in bounded.select("_split").distinct().collect())
    assert len(splits) == 4, splits  # each of the two files twice, under its own entry
    assert all(s.split("#")[0].endswith(".parquet") for s in splits), splits


def test_a_restart_on_a_table_created_again_under_the_same_name_is_refused_naming_both_identities(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The offset log records which table its snapshots are of (Iceberg's table-uuid): the table
    dropped and created again in its catalog under the same name (same location), a restart on it
    is refused naming both identities, reading none of its rows from the old table's snapshots."""
    catalog = _catalog(tmp_path)
    table = catalog.create_table("db.recreated", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    sink = str(tmp_path / "sink")
    checkpoint = tmp_path / "checkpoint"

    def run(metadata_location: str) -> Any:
        source = IcebergSource.builder().table(metadata_location).monitor_interval(1).build()
        return to_parquet_available_now(spark, source, tmp_path, "recreated_iceberg")

    query = run(table.metadata_location)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    old_uuid = str(table.metadata.table_uuid)
    assert logged_enumerator_field(checkpoint, "tableId") == [old_uuid]

    catalog.drop_table("db.recreated")
    again = catalog.create_table("db.recreated", schema=SCHEMA)
    again.append(_events(range(100, 120), 100))
    new_uuid = str(again.metadata.table_uuid)
    assert new_uuid != old_uuid and again.location() == table.location()
    with pytest.raises(Exception) as refused:
        run(again.metadata_location).awaitTermination(120)
    message = str(refused.value)
    assert f"of table-uuid {old_uuid}, but the table there now has table-uuid {new_uuid}" in message, message
    assert "The checkpoint's snapshots and files are the old table's" in message, message
    error = sluice.sluice_error(refused.value)
    assert error is not None and error.getCondition() == "SLUICE_TABLE_REPLACED"
    assert _got(spark.read.parquet(sink)) == _expected(table)  # nothing of the new table read

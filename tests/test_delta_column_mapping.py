"""Delta tables with column mapping (`delta.columnMapping.mode` `name` and `id`), written by delta-rs
(`deltalake`): data files name columns by physical names (`col-<uuid>`, with Parquet field ids),
lie in random two-character directories instead of `city=a/`, and the log keys partition values
and statistics by physical names. Sluice's rows are compared, as multisets, with delta-rs' SQL
read of the same version (`QueryBuilder`): its `to_pyarrow_table()` reads every data column of
such a table as null (a delta-rs bug), its SQL engine reads them right. delta-rs neither renames
columns nor evolves a column-mapped table's schema; Delta Kernel's own schema update
(`withUpdatedSchema`, from the session's JVM) does."""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sluice
from checkpoints import logged_enumerator_field
from deltalake import DeltaTable, QueryBuilder, WriterProperties, write_deltalake
from memory_sink import run_to_memory
from parquet_sink import to_parquet_running
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import DeltaSource

START = datetime(2026, 11, 1, tzinfo=UTC)
NESTED = pa.struct([("x", pa.int64()), ("y", pa.string())])
TAGS = pa.list_(pa.struct([("k", pa.string()), ("v", pa.int64())]))
ARROW = pa.schema(
    [
        ("id", pa.int64()),
        ("city", pa.string()),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("nest", NESTED),
        ("tags", TAGS),
    ]
)


def _events(ids: range) -> pa.Table:
    """Rows `ids`, one a minute, in two cities and two days, with a struct and a list of structs."""
    return pa.table(
        {
            "id": list(ids),
            "city": ["a" if i % 3 else "b" for i in ids],
            "day": [date(2026, 11, 1 + i % 2) for i in ids],
            "ts": [START + timedelta(minutes=i) for i in ids],
            "nest": [{"x": i * 10, "y": f"n{i}"} for i in ids],
            "tags": [[{"k": f"t{i}", "v": i}] + ([None] if i % 5 == 0 else []) for i in ids],
        },
        schema=ARROW,
    )


def _value(v: Any) -> Any:
    """A value as both sides compare it: timestamps as epoch microseconds, structs and lists as
    tuples."""
    if isinstance(v, datetime):
        return int(v.timestamp()) * 1_000_000 + v.microsecond
    if isinstance(v, dict):
        return tuple(_value(x) for x in v.values())
    if isinstance(v, tuple | list):  # a Row, a list
        return tuple(_value(x) for x in v)
    return v


def _multiset(columns: list[str], rows: list[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_value(r[columns.index(c)]) for c in sorted(columns)) for r in rows)


def _expected(path: Path, version: int | None = None, where: str | None = None) -> Counter[tuple[Any, ...]]:
    """delta-rs' SQL read of the version (its engine resolves physical names itself), of the rows
    `where` keeps if given."""
    table = DeltaTable(str(path), version=version)
    sql = "select * from t" + (f" where {where}" if where else "")
    arrow = pa.table(QueryBuilder().register("t", table).execute(sql).read_all())
    return _multiset(arrow.column_names, [tuple(r.values()) for r in arrow.to_pylist()])


def _got(df: DataFrame) -> Counter[tuple[Any, ...]]:
    data = df.drop("_split", "_position", "_timestamp")
    return _multiset(data.columns, [tuple(r) for r in data.collect()])


def _physical(path: Path) -> dict[str, str]:
    """The physical name of each top-level column, from the table's schema in its log."""
    return {
        f.name: f.metadata["delta.columnMapping.physicalName"] for f in DeltaTable(str(path)).schema().fields
    }


def _update_schema(spark: SparkSession, path: Path, renamed: dict[str, str], added: list[str]) -> int:
    """Commits a schema change by Delta Kernel's own schema update: columns `renamed` (their
    physical names and ids kept, as Delta's RENAME COLUMN keeps them) and string columns `added`
    (Kernel gives them a physical name and an id). The version committed."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    kernel = jvm.io.delta.kernel
    engine = kernel.defaults.engine.DefaultEngine.create(jvm.org.apache.hadoop.conf.Configuration())
    snapshot = kernel.TableManager.loadSnapshot(str(path)).build(engine)
    schema = snapshot.getSchema()
    fields = jvm.java.util.ArrayList()
    for i in range(schema.length()):
        f = schema.at(i)
        name = renamed.get(f.getName(), f.getName())
        fields.add(kernel.types.StructField(name, f.getDataType(), f.isNullable(), f.getMetadata()))
    for name in added:
        fields.add(kernel.types.StructField(name, kernel.types.StringType.STRING, True))
    transaction = (
        snapshot.buildUpdateTableTransaction("sluice-tests", kernel.Operation.MANUAL_UPDATE)
        .withUpdatedSchema(kernel.types.StructType(fields))
        .build(engine)
    )
    return int(transaction.commit(engine, kernel.utils.CloseableIterable.emptyIterable()).getVersion())


def _added_files(path: Path) -> list[dict[str, Any]]:
    """The version's `add` actions as delta-rs lists them."""
    return pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()


@pytest.mark.parametrize("mode", ["name", "id"])
def test_a_partitioned_column_mapped_table_reads_as_delta_rs_and_skips_files_by_the_log(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """Partitioned by city and day (values in the log only, under physical names; the directories are
    random), three appends and a row whose city is null: a batch read and a micro-batch read (batches ending inside files) give
    delta-rs' rows, the struct column's fields too. A filter on a mapped partition column, and one on
    a mapped data column (the log's statistics under physical names), are pruned by Kernel before a
    file is opened: the files they skip are deleted from disk and the filtered reads still succeed,
    where an unfiltered read fails on them."""
    path = tmp_path / mode
    configuration = {"delta.columnMapping.mode": mode}
    for ids in (range(40, 60), range(0, 20), range(20, 40)):
        write_deltalake(
            path, _events(ids), partition_by=["city", "day"], mode="append", configuration=configuration
        )
    # a null partition value, which the log records as null under the physical name
    write_deltalake(
        path, _events(range(60, 61)).set_column(1, "city", pa.array([None], pa.string())), mode="append"
    )
    physical = _physical(path)
    assert physical["city"].startswith("col-") and physical["nest"].startswith("col-")
    assert not any("city=" in str(p) for p in path.rglob("*.parquet"))  # no name=value directories

    expected = _expected(path)
    got = sluice.read(spark, DeltaSource.builder().table(str(path)).build())
    assert got.columns[:6] == ["id", "ts", "nest", "tags", "city", "day"]  # partition columns last
    assert _got(got) == expected
    assert sum(_got(got).values()) == 61
    assert [r.city for r in got.where(F.col("id") == 60).collect()] == [None]

    query = (
        sluice.from_source(spark, DeltaSource.builder().table(str(path)).build(), name=f"mapped_{mode}")
        .writeStream.format("memory")
        .queryName(f"py_delta_mapped_{mode}")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("maxRecordsPerTrigger", "7")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    assert _got(spark.table(f"py_delta_mapped_{mode}")) == expected

    # the files neither filter can need: city a's (pruned by partition values), then of the
    # others those of ids below 20 (pruned by the statistics of `id`)
    actions = _added_files(path)
    city_b = [a for a in actions if a["partition.city"] == "b"]
    assert 0 < len(city_b) < len(actions)
    for a in actions:  # delta-rs lists statistics under physical names, partition values not
        if a["partition.city"] != "b" or a[f"max.{physical['id']}"] < 20:
            (path / a["path"]).unlink()
    only_b = got.where((F.col("city") == "b") & (F.col("id") >= 20))
    assert _got(only_b) == Counter(
        {k: n for k, n in expected.items() if k[0] == "b" and k[2] >= 20}  # city, day, id, ...
    )
    assert sum(_got(only_b).values()) == sum(1 for i in range(20, 60) if i % 3 == 0)
    with pytest.raises(Exception, match="cannot be read"):  # unfiltered, a deleted file is planned
        sluice.read(spark, DeltaSource.builder().table(str(path)).build()).collect()


@pytest.mark.parametrize("mode", ["name", "id"])
def test_a_renamed_column_reads_by_its_physical_name_and_a_new_one_under_its_old_name_is_another(
    spark: SparkSession, tmp_path: Path, mode: str
) -> None:
    """Delta Kernel renames `city` to `town` (its physical name stays) and adds a new column named
    `city` (a physical name of its own), then delta-rs appends: the old files' values read under
    `town`, and the new `city` is null in them, as delta-rs' SQL read gives; the earlier version
    reads under its own names. A reader by logical names would read `town` as null in the old
    files and `city` from them."""
    path = tmp_path / mode
    write_deltalake(path, _events(range(0, 10)), configuration={"delta.columnMapping.mode": mode})
    version = _update_schema(spark, path, {"city": "town"}, ["city"])
    assert version == 1
    physical = _physical(path)
    assert physical["town"].startswith("col-") and physical["city"] != physical["town"]
    later = pa.table(
        {
            "id": [100, 101],
            "town": ["c", "d"],
            "day": [date(2026, 11, 3)] * 2,
            "ts": [START, START],
            "nest": [{"x": 1, "y": "q"}, None],
            "tags": [None, []],
            "city": ["new-1", None],
        },
        schema=ARROW.set(1, pa.field("town", pa.string())).append(pa.field("city", pa.string())),
    )
    write_deltalake(path, later, mode="append")

    got = sluice.read(spark, DeltaSource.builder().table(str(path)).build())
    assert got.columns[:7] == ["id", "town", "day", "ts", "nest", "tags", "city"]
    assert _got(got) == _expected(path)
    towns = {r.id: (r.town, r.city) for r in got.select("id", "town", "city").collect()}
    assert towns[0] == ("b", None) and towns[1] == ("a", None) and towns[100] == ("c", "new-1")
    # filters pushed to the row groups find each column by its physical name and field id: the old
    # files' `town` is the column they wrote as `city`; the new `city` is not in them
    for where in ("city IS NULL", "city = 'new-1'", "town = 'b'", "town = 'c' OR city IS NULL"):
        expected = _expected(path, where=where)
        assert sum(expected.values()) > 0 and _got(got.where(where)) == expected, where
    first = sluice.read(spark, DeltaSource.builder().table(str(path)).version_as_of(0).build())
    assert first.columns[:6] == ["id", "city", "day", "ts", "nest", "tags"]
    assert _got(first) == _expected(path, version=0)


def test_unbounded_reads_appends_to_a_column_mapped_table_once_and_fails_on_a_rename(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Unbounded (monitor_interval) on a partitioned name-mode table: appends while the query runs
    and while it is stopped are read once each (the file sink equals delta-rs' read), their partition
    values from the log of the versions that added them. A rename committed after (Delta Kernel)
    fails the query naming the column, as Delta's own streaming source fails on it: the stream's
    columns are those of the version it started from."""
    path = tmp_path / "u"
    configuration = {"delta.columnMapping.mode": "name"}
    write_deltalake(path, _events(range(0, 20)), partition_by=["city"], configuration=configuration)
    sink = str(tmp_path / "sink")

    def start() -> Any:
        source = DeltaSource.builder().table(str(path)).monitor_interval(1).build()
        return to_parquet_running(spark, source, tmp_path, "unbounded_mapped")

    query = start()
    query.processAllAvailable()
    write_deltalake(path, _events(range(20, 40)), partition_by=["city"], mode="append")
    query.processAllAvailable()
    query.stop()
    write_deltalake(path, _events(range(40, 60)), partition_by=["city"], mode="append")
    query = start()
    query.processAllAvailable()
    assert _got(spark.read.parquet(sink)) == _expected(path)
    assert sum(_got(spark.read.parquet(sink)).values()) == 60
    assert list(dict.fromkeys(logged_enumerator_field(tmp_path / "checkpoint", "tableVersion"))) == [0, 1, 2]

    renamed = _update_schema(spark, path, {"id": "key"}, [])
    with pytest.raises(Exception) as failed:
        query.processAllAvailable()
    query.stop()
    message = str(failed.value)
    assert f"version {renamed} of Delta table" in message, message
    assert f"column 'id' (physical name {_physical(path)['key']}) was renamed to 'key'" in message, message
    assert "Start the query on a new checkpoint" in message, message
    assert sum(_got(spark.read.parquet(sink)).values()) == 60


def test_event_times_from_physically_keyed_statistics_and_row_groups_pruned_by_a_mapped_column(
    spark: SparkSession, tmp_path: Path
) -> None:
    """An id-mode table with `ts` as timestampColumn: each file's event-time range comes from the
    log's statistics, keyed by `ts`'s physical name (planning works with every footer broken); with
    a filter on `id`, the files' row groups (10 rows each) are pruned by their footers' statistics of
    `id`'s physical column: only row groups holding ids from 35 are read, the rows delta-rs reads."""
    path = tmp_path / "t"
    small = WriterProperties(max_row_group_size=10)
    for ids in (range(20, 40), range(0, 20)):
        write_deltalake(
            path,
            _events(ids),
            mode="append",
            writer_properties=small,
            configuration={"delta.columnMapping.mode": "id"},
        )
    source = DeltaSource.builder().table(str(path)).timestamp_column("ts").build()
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    options = jvm.java.util.HashMap()
    for k, v in source.options.items():
        options.put(k, v)
    footers = {}
    for data in path.glob("*/*.parquet"):  # every footer broken: planned from the log alone
        with open(data, "r+b") as f:
            f.seek(-8, 2)
            footers[data] = (f.read(), data.stat().st_mtime_ns)
            f.seek(-8, 2)
            f.write(b"\0" * 8)
    found = jvm.sluice.Sources.fromJavaOptions(options).createEnumerator().discoverSplits()
    for data, (tail, mtime) in footers.items():
        with open(data, "r+b") as f:
            f.seek(-8, 2)
            f.write(tail)
        os.utime(data, ns=(mtime, mtime))
    splits = sorted(
        (s.minEventTime().get(), s.maxEventTime().get(), s.rowCount())
        for s in (found.apply(i) for i in range(found.size()))
    )
    start_ms = int(START.timestamp() * 1000)
    assert splits == [
        (start_ms, start_ms + 19 * 60_000, 20),
        (start_ms + 20 * 60_000, start_ms + 39 * 60_000, 20),
    ]

    late = sluice.read(spark, source).where(F.col("id") >= 35)
    assert _got(late) == Counter({k: n for k, n in _expected(path).items() if k[2] >= 35})  # city, day, id
    # what was read, not only what passed the filter: the stream's input rows, 10 (row group 1
    # of the first file written, ids 30..39: the second file is skipped by Kernel, row group 0 by
    # its footer's statistics of `id`'s physical column; unpruned, 20 rows are read)
    stream = sluice.from_source(spark, source, name="mapped_pruned").where(F.col("id") >= 35)
    query = run_to_memory(stream, "py_delta_mapped_pruned", tmp_path / "checkpoint")
    assert sum(p["numInputRows"] for p in query.recentProgress) == 10
    read = {r["_split"].rsplit("#", 1)[-1] for r in spark.table("py_delta_mapped_pruned").collect()}
    assert read == {"rowgroup=1"}, read
    everything = {r["_split"] for r in sluice.read(spark, source).select("_split").collect()}
    assert len(everything) == 2  # unfiltered, each file is one split from the log

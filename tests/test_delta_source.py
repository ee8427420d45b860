"""Delta tables as sources: tables written by delta-rs (`deltalake`, in pytest's tmp dirs), read by
Sluice, compared with delta-rs' own read of the same version as multisets."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sluice
from checkpoints import (
    as_written_before_table_identity,
    as_written_by_the_bounded_build,
    logged_enumerator_field,
)
from deltalake import DeltaTable, write_deltalake
from parquet_sink import run_to_parquet_available_now, to_parquet, to_parquet_available_now
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sluice import (
    DeltaSource,
    SluiceConfigError,
    WatermarkStrategy,
)
from window_counts import final_counts, late_dropped, window_counts

ARROW = pa.schema(
    [("id", pa.int64()), ("city", pa.string()), ("day", pa.date32()), ("ts", pa.timestamp("us", tz="UTC"))]
)
START = datetime(2026, 11, 1, tzinfo=UTC)


def _events(ids: range) -> pa.Table:
    """Rows `ids`, one a minute, in two cities and two days."""
    return pa.table(
        {
            "id": list(ids),
            "city": ["a" if i % 3 else "b" for i in ids],
            "day": [date(2026, 11, 1 + i % 2) for i in ids],
            "ts": [START + timedelta(minutes=i) for i in ids],
        },
        schema=ARROW,
    )


def _multiset(columns: list[str], rows: list[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r[columns.index(c)] for c in sorted(columns)) for r in rows)


def _expected(path: Path, version: int | None = None) -> Counter[tuple[Any, ...]]:
    """delta-rs' own read of the version, timestamps as epoch microseconds."""
    table = DeltaTable(str(path), version=version)
    arrow = table.to_pyarrow_table()
    arrow = arrow.set_column(arrow.schema.get_field_index("ts"), "ts", arrow.column("ts").cast(pa.int64()))
    return _multiset(arrow.column_names, [tuple(r.values()) for r in arrow.to_pylist()])


def _got(df: DataFrame) -> Counter[tuple[Any, ...]]:
    data = df.drop("_split", "_position", "_timestamp").withColumn("ts", F.unix_micros("ts"))
    return _multiset(data.columns, [tuple(r) for r in data.collect()])


def test_a_table_written_in_three_commits_streams_the_same_rows_as_delta_rs(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Three appends, the newest events first: a micro-batch read of 25 rows a batch (batches end
    inside files) gives delta-rs' rows of the latest version, once each. Delta Kernel runs in the
    session's JVM from the assembled jar (its own Jackson relocated inside), with Spark's Hadoop,
    Parquet and RoaringBitmap."""
    for ids in (range(40, 60), range(0, 20), range(20, 40)):
        write_deltalake(tmp_path / "t", _events(ids), mode="append")
    source = DeltaSource.builder().table(str(tmp_path / "t")).timestamp_column("ts").build()
    query = (
        sluice.from_source(spark, source, name="delta_events")
        .writeStream.format("memory")
        .queryName("py_delta_events")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("maxRecordsPerTrigger", "25")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    got = spark.table("py_delta_events")
    assert got.columns[:4] == ["id", "city", "day", "ts"]
    assert _got(got) == _expected(tmp_path / "t")
    assert got.select("_split").distinct().count() == 3  # one split per file (one row group each)
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    kernel = loader.loadClass("io.delta.kernel.defaults.engine.DefaultEngine")
    assert "sluice-spark-assembly" in kernel.getProtectionDomain().getCodeSource().getLocation().toString()

    # Kernel plans only the files whose statistics in the log let a row pass a pushed filter: the
    # file of ids 0..19, deleted, is never opened by a read of ids from 40
    actions = pa.table(DeltaTable(str(tmp_path / "t")).get_add_actions(flatten=True)).to_pylist()
    (tmp_path / "t" / next(a["path"] for a in actions if a["min.id"] == 0)).unlink()
    late = sluice.read(spark, DeltaSource.builder().table(str(tmp_path / "t")).build()).where(
        F.col("id") >= 40
    )
    assert sorted(r.id for r in late.select("id").collect()) == list(range(40, 60))
    with pytest.raises(Exception, match="cannot be read"):  # unfiltered, it is planned and missed
        sluice.read(spark, DeltaSource.builder().table(str(tmp_path / "t")).build()).collect()


def test_a_partitioned_table_with_deletes_reads_as_delta_rs_and_prunes_by_partition(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Partitioned by city and day (values only in the log and the directories, not in the files),
    rows deleted (delta-rs rewrites the files): a batch read equals delta-rs' read; a filter on a
    partition column reads only its files; an earlier version by number and by time reads its rows."""
    path = tmp_path / "p"
    write_deltalake(path, _events(range(0, 30)), partition_by=["city", "day"])
    DeltaTable(str(path)).delete("id < 5")
    write_deltalake(path, _events(range(30, 45)), partition_by=["city", "day"], mode="append")

    got = sluice.read(spark, DeltaSource.builder().table(str(path)).build())
    assert got.columns[:4] == ["id", "ts", "city", "day"]  # partition columns after the data columns
    assert _got(got) == _expected(path)
    assert sum(_got(got).values()) == 40

    only_b = got.where(F.col("city") == "b")
    assert sum(_got(only_b).values()) == sum(n for k, n in _expected(path).items() if k[0] == "b")
    assert all("city=b" in r["_split"] for r in only_b.select("_split").collect())

    first = DeltaSource.builder().table(str(path)).version_as_of(0).build()
    assert _got(sluice.read(spark, first)) == _expected(path, version=0)
    # Kernel finds a version by its commit file's time
    at = int((path / "_delta_log" / "00000000000000000001.json").stat().st_mtime * 1000)
    by_time = DeltaSource.builder().table(str(path)).as_of_timestamp(at).build()
    assert _got(sluice.read(spark, by_time)) == _expected(path, version=1)


def test_an_unknown_version_is_refused_when_the_source_is_built(spark: SparkSession, tmp_path: Path) -> None:
    """A version the table does not have is refused, naming the option (column-mapped tables are
    read: test_delta_column_mapping.py)."""
    write_deltalake(tmp_path / "plain", _events(range(0, 3)))
    with pytest.raises(SluiceConfigError, match="versionAsOf"):
        DeltaSource.builder().table(str(tmp_path / "plain")).version_as_of(7).build()


def test_a_restarted_query_reads_its_version_on_not_the_tables_newer_one(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The version is the query's, kept in its checkpoint: after a commit to the table, the query
    restarted from its checkpoint reads nothing more (Spark's file sink holds each row once), also
    from a checkpoint as the bounded build wrote it; read unbounded from that one, it is refused."""
    path = tmp_path / "r"
    write_deltalake(path, _events(range(0, 20)))
    sink = str(tmp_path / "sink")

    def run() -> None:
        source = DeltaSource.builder().table(str(path)).build()
        run_to_parquet_available_now(spark, source, tmp_path, "restarted")

    run()
    write_deltalake(path, _events(range(20, 40)), mode="append")
    # as the bounded build wrote it (enumerator state version 1, no version planned): it still reads
    as_written_by_the_bounded_build(tmp_path / "checkpoint")
    run()
    assert _got(spark.read.parquet(sink)) == _expected(path, version=0)
    # read unbounded from such a checkpoint, which does not say which version it planned: refused
    unbounded = DeltaSource.builder().table(str(path)).monitor_interval(1).build()
    query = to_parquet_available_now(spark, unbounded, tmp_path, "restarted")
    with pytest.raises(Exception) as refused:
        query.awaitTermination(120)
    failure = str(refused.value)
    assert "does not record which version" in failure and "'monitorIntervalMs'" in failure, failure


def test_event_times_from_the_logs_statistics_never_below_a_rows_despite_millisecond_truncation(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The latest row of the table is at .123999 s; the log's statistics of `ts` (which Delta
    writers may truncate to milliseconds) give each file's split its event-time range without a
    footer (planning works with every footer broken), and the largest is never below that row's
    event time (123 ms). Rows as delta-rs reads."""
    late = START + timedelta(minutes=5, microseconds=123_999)
    first = _events(range(0, 5))
    second = pa.table(
        {"id": [5], "city": ["a"], "day": [date(2026, 11, 1)], "ts": [late]},
        schema=ARROW,
    )
    write_deltalake(tmp_path / "t", second, mode="append")
    write_deltalake(tmp_path / "t", first, mode="append")
    source = DeltaSource.builder().table(str(tmp_path / "t")).timestamp_column("ts").build()
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jmap = jvm.java.util.HashMap()
    for k, v in source.options.items():
        jmap.put(k, v)
    # every data file's footer broken (its last bytes zeroed, its length kept): planned from the log
    # alone, or planning would fail here; the footers are put back to read
    footers = {}
    for data in (tmp_path / "t").glob("*.parquet"):
        with open(data, "r+b") as f:
            f.seek(-8, 2)
            footers[data] = (f.read(), data.stat().st_mtime_ns)
            f.seek(-8, 2)
            f.write(b"\0" * 8)
    found = jvm.sluice.Sources.fromJavaOptions(jmap).createEnumerator().discoverSplits()
    for data, (tail, mtime) in footers.items():
        with open(data, "r+b") as f:
            f.seek(-8, 2)
            f.write(tail)
        os.utime(data, ns=(mtime, mtime))
    splits = sorted(
        (found.apply(i).minEventTime().get(), found.apply(i).maxEventTime().get(), found.apply(i).rowCount())
        for i in range(found.size())
    )
    start_ms = int(START.timestamp() * 1000)
    late_ms = int(late.timestamp() * 1_000_000) // 1000
    assert splits[0] == (start_ms, start_ms + 4 * 60_000, 5)
    assert splits[1][2] == 1 and splits[1][0] <= late_ms <= splits[1][1] <= late_ms + 1
    assert _got(sluice.read(spark, source)) == _expected(tmp_path / "t")


def test_files_out_of_event_time_order_drop_nothing_as_late_where_sparks_parquet_stream_does(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Three files of 30 minutes each, committed in shuffled order; 1-minute windows under a 10-minute
    watermark. Sluice, aligned by the files' statistics (each spans more than the 1-minute drift, so
    each is planned by its footer's row groups rather than whole from the log), reads them in event-time order: no row is dropped as late. Spark's Parquet stream over the same files
    (a file a batch, oldest first) drops rows of every file older than the newest read."""
    arrow = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    half_hour_order = (2, 0, 1)
    for half_hour in half_hour_order:  # 180 rows a file, one every 10 s: 6 a minute
        ids = range(half_hour * 180, (half_hour + 1) * 180)
        rows = {"id": list(ids), "ts": [START + timedelta(seconds=10 * i) for i in ids]}
        before = set((tmp_path / "t").glob("*.parquet"))
        write_deltalake(tmp_path / "t", pa.table(rows, schema=arrow), mode="append")
        # Spark's stream takes files oldest first: their times say the commit order (written
        # within one millisecond, they would be taken in the order of their random names)
        (written,) = set((tmp_path / "t").glob("*.parquet")) - before
        os.utime(written, (1_700_000_000 + half_hour_order.index(half_hour),) * 2)
    source = DeltaSource.builder().table(str(tmp_path / "t")).timestamp_column("ts").build()
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "delta-shuffled", timedelta(minutes=1), timedelta(milliseconds=100)
    )
    sluice_query = window_counts(
        sluice.from_source(spark, source, strategy, name="delta_shuffled"),
        "event_time",
        "py_delta_windows",
        tmp_path / "sluice-checkpoint",
    )
    assert late_dropped(sluice_query) == 0
    windows = final_counts(spark, "py_delta_windows")
    assert windows.count() == 90 and windows.where("n != 6").count() == 0

    data = str(tmp_path / "t")
    parquet = spark.readStream.schema(spark.read.parquet(data).schema).option("maxFilesPerTrigger", 1)
    spark_query = window_counts(
        parquet.parquet(data), "ts", "py_delta_windows_spark", tmp_path / "spark-checkpoint"
    )
    assert late_dropped(spark_query) > 0


@pytest.mark.parametrize("vectorized", ["true", "false"])
def test_a_log_counting_fewer_rows_than_its_file_holds_fails_naming_the_file_and_the_logs_count(
    spark: SparkSession, tmp_path: Path, vectorized: str
) -> None:
    """A file of 5 rows whose `add` says numRecords 3: planned whole from the log, it would lose its
    last 2 rows if a reader stopped at the count. Both readers (column batches and rows) fail
    instead, naming the file and the log's count as what miscounted. No Delta writer writes such a
    log: the count is edited by hand here because a corrupt log is the case under test."""
    write_deltalake(tmp_path / "t", _events(range(0, 5)))
    log = tmp_path / "t" / "_delta_log" / "00000000000000000000.json"
    text = log.read_text()
    assert text.count('\\"numRecords\\":5') == 1
    log.write_text(text.replace('\\"numRecords\\":5', '\\"numRecords\\":3'))
    (data,) = (tmp_path / "t").glob("*.parquet")
    source = DeltaSource.builder().table(str(tmp_path / "t")).timestamp_column("ts").build()
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", vectorized)
    try:
        with pytest.raises(Exception) as failed:
            sluice.read(spark, source).collect()
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    message = str(failed.value)
    assert data.name in message and "than the 3" in message and "numRecords" in message


def test_unbounded_reads_each_appended_row_once_across_a_restart_and_refuses_or_skips_a_delete(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Unbounded (monitor_interval): versions appended while the query runs, and while it is
    stopped, are read once each (Spark's file sink keeps each row once: the sink equals delta-rs'
    read of the table). A DELETE version fails the query naming it; restarted with skip_changes
    (under Trigger.AvailableNow), it is passed over and the append after it read, the deleted rows
    staying read."""
    path = tmp_path / "u"
    write_deltalake(path, _events(range(0, 20)))
    sink = str(tmp_path / "sink")

    def start(skip: bool = False, available_now: bool = False) -> Any:
        source = DeltaSource.builder().table(str(path)).monitor_interval(1).skip_changes(skip).build()
        writer = to_parquet(spark, source, tmp_path, "unbounded_delta")
        if available_now:  # reads what was committed when it starts, then ends
            return writer.trigger(availableNow=True).start()
        return writer.trigger(processingTime="100 milliseconds").start()  # each trigger plans

    query = start()
    query.processAllAvailable()
    write_deltalake(path, _events(range(20, 40)), mode="append")  # while it runs
    query.processAllAvailable()
    query.stop()

    def planned() -> list[int]:  # each version the offset log records as planned last, once
        return list(dict.fromkeys(logged_enumerator_field(tmp_path / "checkpoint", "tableVersion")))

    # the sink keeps a file once whatever the checkpoint says: the versions are asserted apart
    assert planned() == [0, 1]
    write_deltalake(path, _events(range(40, 60)), mode="append")  # while it is stopped
    query = start()  # from the checkpoint: neither the start version again nor past an append
    query.processAllAvailable()
    write_deltalake(path, _events(range(60, 80)), mode="append")
    query.processAllAvailable()
    assert _got(spark.read.parquet(sink)) == _expected(path)
    assert sum(_got(spark.read.parquet(sink)).values()) == 80
    assert planned() == [0, 1, 2, 3]

    DeltaTable(str(path)).delete("id < 30")  # version 4: removes (and rewrites) files
    with pytest.raises(Exception) as failed:
        query.processAllAvailable()
    query.stop()
    message = str(failed.value)
    assert "version 4 of table" in message and "(DELETE) is not an append" in message, message
    assert "'skipChanges'" in message, message
    assert _got(spark.read.parquet(sink)) == _expected(path, version=3)

    write_deltalake(path, _events(range(80, 90)), mode="append")  # version 5
    query = start(skip=True, available_now=True)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    # the delete was skipped (its rows stay read), the append after it read once
    appended = _expected(path, version=5) - _expected(path, version=4)
    assert sum(appended.values()) == 10
    assert _got(spark.read.parquet(sink)) == _expected(path, version=3) + appended
    assert planned() == [0, 1, 2, 3, 5]  # the refused version 4 was never logged, then skipped


def test_unbounded_fails_naming_the_versions_its_log_no_longer_keeps(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Restarted after the log was cleaned past the version it planned last (a checkpoint, then
    delta-rs' cleanup with no retention), an unbounded read cannot tell what the versions since
    changed: it fails naming the version and the retention, never skipping them silently."""
    path = tmp_path / "cleaned"
    write_deltalake(
        path, _events(range(0, 10)), configuration={"delta.logRetentionDuration": "interval 0 seconds"}
    )

    def run() -> Any:
        source = DeltaSource.builder().table(str(path)).monitor_interval(1).build()
        return to_parquet_available_now(spark, source, tmp_path, "cleaned")

    assert run().awaitTermination(120), "the query did not end within 120 s"
    write_deltalake(path, _events(range(10, 20)), mode="append")
    write_deltalake(path, _events(range(20, 30)), mode="append")
    table = DeltaTable(str(path))
    table.create_checkpoint()
    table.cleanup_metadata()
    assert not (path / "_delta_log" / f"{1:020d}.json").exists()
    with pytest.raises(Exception) as failed:
        run().awaitTermination(120)
    message = str(failed.value)
    assert "after version 0, the last this query planned, cannot be read" in message, message
    assert "delta.logRetentionDuration" in message, message


def test_a_path_removed_then_added_again_is_read_again_as_deltas_own_stream_reads_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A version may add a path an earlier version removed (delta-rs' RESTORE after a DELETE adds the
    deleted file back, with dataChange): the path is live again, and an append of its rows. Unbounded
    with skip_changes, across a restart, Sluice reads it again as Delta's own streaming source with
    skipChangeCommits does (every `add` with a data change is new data): the rows the skipped
    DELETE deleted stay read, and the restored rows are read once more. A bounded read of the
    version after gives delta-rs' rows (the path once)."""
    path = tmp_path / "restored"
    write_deltalake(path, _events(range(0, 20)))
    write_deltalake(path, _events(range(20, 40)), mode="append")
    sink = str(tmp_path / "sink")

    def run() -> None:
        source = DeltaSource.builder().table(str(path)).monitor_interval(1).skip_changes(True).build()
        run_to_parquet_available_now(spark, source, tmp_path, "restored_delta")

    run()
    assert _got(spark.read.parquet(sink)) == _expected(path, version=1)
    (first,) = DeltaTable(str(path), version=0).file_uris()
    table = DeltaTable(str(path))
    table.delete("id < 20")  # version 2 removes the first file whole
    assert first not in DeltaTable(str(path)).file_uris()
    assert table.restore(1)["numRemovedFile"] == 0  # version 3 adds it back, removing nothing
    assert first in DeltaTable(str(path)).file_uris()
    run()  # restarted from the checkpoint, the DELETE skipped
    restored = _expected(path, version=3) - _expected(path, version=2)
    assert sum(restored.values()) == 20
    assert _got(spark.read.parquet(sink)) == _expected(path, version=1) + restored
    bounded = sluice.read(spark, DeltaSource.builder().table(str(path)).build())
    assert _got(bounded) == _expected(path, version=3)


def test_a_restart_on_a_table_created_again_at_the_same_place_is_refused_naming_both_identities(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The offset log records which table its versions are of (Delta's metaData.id). A checkpoint
    that does not (an earlier Sluice's) still restarts, and records it from then on; once the table
    is deleted and created again at the same place (versions numbered from 0 again, here past the
    version planned last), a restart is refused naming both identities, reading no row of the new
    table from the old table's versions."""
    path = tmp_path / "recreated"
    write_deltalake(path, _events(range(0, 20)))
    write_deltalake(path, _events(range(20, 40)), mode="append")
    sink = str(tmp_path / "sink")
    checkpoint = tmp_path / "checkpoint"

    def source() -> Any:
        return DeltaSource.builder().table(str(path)).monitor_interval(1).build()

    def ran() -> None:
        run_to_parquet_available_now(spark, source(), tmp_path, "recreated_delta")

    ran()
    old_id = DeltaTable(str(path)).metadata().id
    assert logged_enumerator_field(checkpoint, "tableId") == [old_id]
    as_written_before_table_identity(checkpoint)  # as a Sluice that kept no identity wrote it
    write_deltalake(path, _events(range(40, 50)), mode="append")  # version 2
    ran()
    assert _got(spark.read.parquet(sink)) == _expected(path)
    assert logged_enumerator_field(checkpoint, "tableId")[-1] == old_id  # taken on trust, then recorded

    shutil.rmtree(path)
    write_deltalake(path, _events(range(100, 110)))  # another table: versions 0 to 3
    for first in (110, 120, 130):
        write_deltalake(path, _events(range(first, first + 10)), mode="append")
    new_id = DeltaTable(str(path)).metadata().id
    assert new_id != old_id
    with pytest.raises(Exception) as refused:
        to_parquet_available_now(spark, source(), tmp_path, "recreated_delta").awaitTermination(120)
    message = str(refused.value)
    assert f"{path}' of metaData.id {old_id}, " in message, message
    assert f"but the table there now has metaData.id {new_id}" in message, message
    assert "Start the query on a new checkpoint to read this table" in message, message
    error = sluice.sluice_error(refused.value)
    assert error is not None and error.getCondition() == "SLUICE_TABLE_REPLACED"
    assert error.getMessageParameters()["current"] == new_id
    assert sum(_got(spark.read.parquet(sink)).values()) == 50  # nothing of the new table read


def test_a_restart_without_a_recorded_identity_on_a_younger_table_is_refused(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A checkpoint of a Sluice that kept no table identity cannot tell a table created again by its
    metaData.id; but a table whose latest version is below the one planned last was created again (a
    Delta table's versions only grow): the restart is refused, instead of waiting for the new table
    to pass that version and skipping every version before it."""
    path = tmp_path / "younger"
    write_deltalake(path, _events(range(0, 10)))
    for first in (10, 20, 30):  # versions 1 to 3
        write_deltalake(path, _events(range(first, first + 10)), mode="append")
    sink = str(tmp_path / "sink")
    checkpoint = tmp_path / "checkpoint"

    def source() -> Any:
        return DeltaSource.builder().table(str(path)).monitor_interval(1).build()

    run_to_parquet_available_now(spark, source(), tmp_path, "younger_delta")
    assert logged_enumerator_field(checkpoint, "tableVersion")[-1] == 3
    as_written_before_table_identity(checkpoint)  # as a Sluice that kept no identity wrote it
    shutil.rmtree(path)
    write_deltalake(path, _events(range(100, 110)))  # another table, at version 0
    with pytest.raises(Exception) as refused:
        to_parquet_available_now(spark, source(), tmp_path, "younger_delta").awaitTermination(120)
    message = str(refused.value)
    assert f"{path}' is at version 0, below version 3 this query planned last" in message, message
    assert "Start the query on a new checkpoint to read this table" in message, message
    error = sluice.sluice_error(refused.value)
    assert error is not None and error.getCondition() == "SLUICE_SOURCE_FAULT"
    assert sum(_got(spark.read.parquet(sink)).values()) == 40  # nothing of the new table read

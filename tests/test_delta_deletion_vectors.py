"""Delta tables with deletion vectors, written by delta-spark (tests/fixtures/delta_dv: its own
writer, on an older PySpark, by generate.py there) and read by Sluice: every read gives the rows
delta-spark read at the same version, as multisets, the rows a vector deletes never."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sluice
from parquet_sink import to_parquet_available_now
from pyspark.sql import DataFrame, SparkSession
from sluice import DeltaSource

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "delta_dv"
#: each table's latest version, and an earlier one whose files already carry deletion vectors
VERSIONS = {"unpartitioned": (4, 2), "partitioned": (3, 2)}


def _table(tmp_path: Path, name: str) -> Path:
    """A copy of the fixture table (a read never writes into the checkout)."""
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def _expected(name: str, version: int) -> Counter[tuple[Any, ...]]:
    """delta-spark's rows of the version, as generate.py saved them, columns by name."""
    rows = json.loads((FIXTURES / f"{name}.expected.json").read_text())[str(version)]
    return Counter(tuple(r[c] for c in sorted(r)) for r in rows)


def _got(df: DataFrame) -> Counter[tuple[Any, ...]]:
    data = df.drop("_split", "_position", "_timestamp")
    columns = sorted(data.columns)
    return Counter(tuple(r[c] for c in columns) for r in data.collect())


def _source(path: Path, version: int) -> Any:
    return DeltaSource.builder().table(str(path)).version_as_of(version).build()


def test_batch_reads_of_every_version_give_delta_sparks_rows(spark: SparkSession, tmp_path: Path) -> None:
    """Each version of both tables, from before the first DELETE to the last: a vector on a file, a
    second DELETE replacing it, one added later to a file that had none, vectors in two partitions.
    Also each file planned whole, from the log's statistics. A row's `_position` is still its row
    index in the file: in the first file row i holds id i."""
    for name, (latest, _) in VERSIONS.items():
        path = _table(tmp_path, name)
        for version in range(latest + 1):
            got = sluice.read(spark, _source(path, version))
            assert _got(got) == _expected(name, version), (name, version)
        # with an event-time column (id as epoch milliseconds) each file is one split planned from
        # the log's statistics, never opened to plan: its split carries all of the file's deleted rows
        timed = DeltaSource.builder().table(str(path)).timestamp_column("id").build()
        timed_rows = sluice.read(spark, timed)
        assert _got(timed_rows) == _expected(name, latest), name
        files = {r._split.split("#")[0] for r in sluice.read(spark, _source(path, latest)).collect()}
        splits = {r._split for r in timed_rows.select("_split").collect()}
        assert len(files) > 1 and splits == files, (name, splits, files)  # a split a file, whole
    first = sluice.read(spark, _source(tmp_path / "unpartitioned", 4)).where("id < 30")
    assert sorted((r.id, r._position) for r in first.collect()) == [
        (i, i) for i in range(30) if i % 5 and i not in (1, 2)
    ]


@pytest.mark.parametrize("name", sorted(VERSIONS))
def test_micro_batches_of_a_few_rows_give_delta_sparks_rows(
    spark: SparkSession, tmp_path: Path, name: str
) -> None:
    """Trigger.AvailableNow, 4 positions a batch (batches end inside files, among deleted rows), at the
    latest version and an earlier one: each row delta-spark reads, once."""
    path = _table(tmp_path, name)
    for version in VERSIONS[name]:
        query = (
            sluice.from_source(
                spark,
                _source(path, version),
                name=f"dv_{name}_{version}",
                options={"maxRecordsPerTrigger": 4},
            )
            .writeStream.format("memory")
            .queryName(f"py_delta_dv_{name}_{version}")
            .option("checkpointLocation", str(tmp_path / f"checkpoint-{version}"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120), "the query did not end within 120 s"
        assert query.exception() is None
        assert _got(spark.table(f"py_delta_dv_{name}_{version}")) == _expected(name, version), version
        # the limit counts positions, deleted rows included (as for Iceberg's deletes): at most 4
        # rows a batch, at least 6 batches (24 positions or more): reads resumed inside files
        batches = [p["numInputRows"] for p in query.recentProgress]
        assert max(batches) <= 4 and len(batches) >= 24 // 4, batches


def test_a_query_restarted_inside_a_file_reads_each_remaining_row_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    """5 positions a batch; the sink fails the second batch (its offsets logged, never committed), so
    the first ended inside the file of ids 0..29, past deleted rows. Restarted from the checkpoint, the
    query replays that batch from its logged range and reads on: with the first batch's rows, each of
    delta-spark's rows once."""
    path = _table(tmp_path, "unpartitioned")
    kept: list[tuple[Any, ...]] = []

    def sink(fail_at: int | None) -> Any:
        def write(batch: DataFrame, batch_id: int) -> None:
            if batch_id == fail_at:
                raise RuntimeError(f"the sink fails batch {batch_id}")
            kept.extend(tuple(r) for r in batch.select("id", "name").collect())

        return write

    def run(fail_at: int | None) -> Any:
        return (
            sluice.from_source(
                spark, _source(path, 4), name="dv_restart", options={"maxRecordsPerTrigger": 5}
            )
            .writeStream.foreachBatch(sink(fail_at))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )

    query = run(fail_at=1)
    with pytest.raises(Exception, match="the sink fails batch 1"):
        query.awaitTermination(120)
    # the first batch alone committed: 5 positions across the two files, ids 0..2 deleted in the first
    assert sorted(kept) == [(3, "n3"), (30, "n30")]
    query = run(fail_at=None)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    assert Counter(kept) == _expected("unpartitioned", 4)


def test_unbounded_a_version_adding_vectors_to_read_files_is_refused_or_skipped(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Unbounded from version 1 (no vector yet): version 2 gives the file read a deletion vector,
    which Delta logs as the file removed and added again with it, a change, not an append: the
    query fails naming it; with skip_changes versions 2 and 4 (which adds vectors to both files)
    are skipped, the rows they delete staying read, and version 3's appended file read once."""
    path = _table(tmp_path, "unpartitioned")

    def run(skip: bool) -> Any:
        source = (
            DeltaSource.builder().table(str(path)).version_as_of(1).monitor_interval(1).skip_changes(skip)
        )
        return to_parquet_available_now(spark, source.build(), tmp_path, "dv_unbounded")

    query = run(skip=False)
    with pytest.raises(Exception) as refused:
        query.awaitTermination(120)
    message = str(refused.value)
    assert "version 2 of table" in message and "(DELETE) is not an append" in message, message
    query = run(skip=True)
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    appended = _expected("unpartitioned", 3) - _expected("unpartitioned", 2)
    assert sorted(i for i, _ in appended) == list(range(30, 40))
    assert _got(spark.read.parquet(str(tmp_path / "sink"))) == _expected("unpartitioned", 1) + appended

"""Iceberg tables by catalog: the SQL catalog pyiceberg writes on sqlite, read by iceberg-core's own
JdbcCatalog (the sqlite JDBC driver is on the test session's class path, as a user adds it with
--packages), given by properties; their values never shown."""

from __future__ import annotations

import socket
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sluice
from pyiceberg.catalog.sql import SqlCatalog
from pyspark.sql import SparkSession
from sluice import IcebergSource, SluiceConfigError, SluiceRuntimeError
from test_iceberg_source import SCHEMA, _events, _expected, _got

#: the catalog's name: pyiceberg keys its tables by it, so Sluice must give the same one
NAME = "sluice_catalog_tests"
#: a credential among the properties: sqlite takes no password, but a catalog passes it on
PASSWORD = "pw-6f1e9c-never-shown"
#: a REST catalog's header: Spark's redaction patterns match neither its name nor its value
HEADER = "Bearer hdr-81d0-never-shown"


def _sql_catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog(
        NAME,
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=(tmp_path / "warehouse").as_uri(),
    )
    catalog.create_namespace("db")
    return catalog


def _properties(tmp_path: Path, db: str = "catalog.db") -> dict[str, str]:
    """The same catalog as iceberg-core's JdbcCatalog takes it."""
    return {
        "type": "jdbc",
        "uri": f"jdbc:sqlite:{tmp_path / db}",
        # pyiceberg created the catalog's tables; JdbcCatalog's check for them leaves the sqlite
        # connection's read transaction open, which would keep the catalog at that moment's state
        "jdbc.init-catalog-tables": "false",
        "warehouse": (tmp_path / "warehouse").as_uri(),
        "jdbc.user": "reader",
        "jdbc.password": PASSWORD,
    }


def _await_rows(spark: SparkSession, name: str, expected: Counter[tuple[Any, ...]]) -> None:
    deadline = time.monotonic() + 90
    while (got := _got(spark.table(name))) != expected:
        assert time.monotonic() < deadline, f"after 90 s the query holds {sum(got.values())} rows"
        time.sleep(0.2)


def test_a_table_of_pyicebergs_sql_catalog_by_its_identifier_batch_and_unbounded(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table named `db.events` in the catalog: a batch read equals pyiceberg's scan; an
    unbounded read asks the catalog for the table again at each plan, so an append pyiceberg
    commits to the catalog while the query runs is read. The password and a header are in no
    repr, progress, explain() or source description."""
    table = _sql_catalog(tmp_path).create_table("db.events", schema=SCHEMA)
    table.append(_events(range(0, 20), 0))
    properties = {**_properties(tmp_path), "header.Authorization": HEADER}

    def builder() -> Any:
        return IcebergSource.builder().catalog(NAME, properties).table("db.events")

    assert _got(sluice.read(spark, builder().build())) == _expected(table)

    source = builder().monitor_interval(1).build()
    assert PASSWORD not in repr(source) and "***" in repr(source)
    df = sluice.from_source(spark, source, name="by_catalog")
    df.explain(True)
    explained = capsys.readouterr().out
    assert "catalog.header.Authorization=***" in explained, explained
    query = (
        df.writeStream.format("memory")
        .queryName("py_iceberg_by_catalog")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        assert _got(spark.table("py_iceberg_by_catalog")) == _expected(table)
        table.append(_events(range(20, 35), 20))  # committed to the catalog while the query runs
        _await_rows(spark, "py_iceberg_by_catalog", _expected(table.refresh()))
        assert sum(_expected(table).values()) == 35
        shown = [str(p) for p in query.recentProgress] + [
            explained,
            query._jsq.explainInternal(True),
            df._jdf.queryExecution().toString(),
            str(query.lastProgress["sources"][0]["description"]),
        ]
        assert all(PASSWORD not in s and HEADER not in s for s in shown)
        assert shown[-1] == "SluiceMicroBatchStream[by_catalog]"
    finally:
        query.stop()


def test_catalog_errors_name_the_options_and_never_show_a_credential(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A catalog the library cannot open (its URI names a folder that is not there, the folder's
    name the password), a table it does not have, and options that do not describe a catalog:
    each refused when the source is built, saying what to give, no credential in the message."""
    _sql_catalog(tmp_path)
    missing = _properties(tmp_path, db=f"no-such-folder-{PASSWORD}/catalog.db")
    missing["jdbc.password"] = PASSWORD
    with pytest.raises(SluiceConfigError, match="cannot build Iceberg catalog 'elsewhere'") as failed:
        IcebergSource.builder().catalog("elsewhere", missing).table("db.events").build()
    assert PASSWORD not in str(failed.value), str(failed.value)
    assert "properties jdbc.init-catalog-tables, jdbc.password, jdbc.user, type, uri, warehouse" in str(
        failed.value
    )

    with pytest.raises(
        SluiceConfigError, match="cannot load table 'db.nothing' from Iceberg catalog"
    ) as failed:
        IcebergSource.builder().catalog(NAME, _properties(tmp_path)).table("db.nothing").build()
    assert PASSWORD not in str(failed.value), str(failed.value)
    assert "the table's identifier in that catalog (namespace.name" in str(failed.value)

    with pytest.raises(SluiceConfigError, match="option 'catalogName' does not name it"):
        IcebergSource.builder().table("db.events").option("catalog.type", "jdbc").build()
    with pytest.raises(SluiceConfigError, match="no 'catalog.<property>' option describes it"):
        IcebergSource.builder().table("db.events").option("catalogName", NAME).build()
    with pytest.raises(
        SluiceConfigError, match="option 'catalogTimeoutMs' bounds the calls to a catalog, but no"
    ):
        IcebergSource.builder().table("db.events").catalog_timeout(1000).build()


def test_a_catalog_that_never_answers_fails_the_build_after_catalog_timeout(spark: SparkSession) -> None:
    """A REST catalog whose server takes connections and never answers: the source's build fails
    after ``catalog_timeout``, naming the catalog, the table, the bound and the option."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # listens; never accepts nor answers
        port = silent.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(
            SluiceRuntimeError,
            match=r"Iceberg catalog 'silent' \(properties type, uri\) did not answer within 1500 ms "
            r"\(option 'catalogTimeoutMs'\) while building it for table 'db.events'",
        ):
            IcebergSource.builder().catalog(
                "silent", {"type": "rest", "uri": f"http://127.0.0.1:{port}"}
            ).table("db.events").catalog_timeout(timedelta(milliseconds=1500)).build()
        assert 1.5 <= time.monotonic() - started < 30

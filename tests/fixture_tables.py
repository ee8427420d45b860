"""The tables of the table checkpoint fixtures (jvm/spark's sluice.compat.CheckpointFixtures), written
by the formats' own Python writers: ``python tests/fixture_tables.py iceberg|delta <folder> [more]``.

Three appends of rows ``id`` (BIGINT), ``v`` (``p<id>``) and ``ts`` (a timestamp, a minute apart),
one data file each: ids 0-3 from minute 0, 4-7 from minute 60, 8-41 from minute 120 of a fixed day.
Read under watermark alignment with a drift of a minute, the files' statistics put them in that
order: each is read to its end before the next starts. ``more`` appends ids 42-51 from minute 200
to the table written before (a fourth data file: what an unbounded read finds after a restart). An Iceberg table is written through a SQL
catalog on sqlite kept outside ``folder`` (the fixture reads the table by its last metadata file);
a Delta table's log names its files relative to the table, so it can be moved as it is.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa

APPENDS = [(range(0, 4), 0), (range(4, 8), 60), (range(8, 42), 120)]  # ids, first minute
MORE = (range(42, 52), 200)
START = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("v", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)


def rows(ids: range, minute: int) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "v": [f"p{i}" for i in ids],
            "ts": [START + timedelta(minutes=minute + n) for n in range(len(ids))],
        },
        schema=SCHEMA,
    )


def write_iceberg(folder: Path, appends: list[tuple[range, int]]) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    location = folder / "iceberg"
    with tempfile.TemporaryDirectory() as catalog_dir:
        catalog = SqlCatalog("fixture", uri=f"sqlite:///{catalog_dir}/catalog.db", warehouse=folder.as_uri())
        catalog.create_namespace("db")
        if location.exists():  # the table written before, by its last metadata file
            last = max((location / "metadata").glob("*.metadata.json"), key=lambda f: f.name)
            table = catalog.register_table("db.events", last.as_uri())
        else:
            table = catalog.create_table("db.events", schema=SCHEMA, location=location.as_uri())
        for ids, minute in appends:
            table.append(rows(ids, minute))
        catalog.engine.dispose()


def write_delta(folder: Path, appends: list[tuple[range, int]]) -> None:
    from deltalake import write_deltalake

    for ids, minute in appends:
        write_deltalake(str(folder / "delta"), rows(ids, minute), mode="append")


if __name__ == "__main__":
    kind, target = sys.argv[1], Path(sys.argv[2])
    more = sys.argv[3:] == ["more"]
    {"iceberg": write_iceberg, "delta": write_delta}[kind](target, [MORE] if more else APPENDS)

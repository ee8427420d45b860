"""Compressed line files from Python: .json.gz and .csv.bz2 give spark.read's rows."""

from __future__ import annotations

import bz2
import gzip
from collections import Counter
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import FileSource


def _collect(spark: SparkSession, source: FileSource, table: str, checkpoint: Path) -> list:
    df = sluice.from_source(spark, source, name=table)
    query = (
        df.drop("_split", "_position", "_timestamp")
        .writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    return spark.table(table).collect()


def test_gzip_json_and_bzip2_csv_give_spark_read_rows(spark: SparkSession, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    lines = [f'{{"a": {i}, "b": "row {i}"}}' for i in range(300)] + ["not json"]
    (data / "a.json.gz").write_bytes(gzip.compress("\n".join(lines).encode("utf-8")))
    (data / "b.json.gz").write_bytes(gzip.compress(b'{"a": 1000, "b": "other"}\n'))
    schema = "a INT, b STRING, _corrupt_record STRING"
    source = FileSource.builder().path(str(data)).format("json").schema(schema).build()
    got = _collect(spark, source, "py_gz_json", tmp_path / "ckpt-json")
    expected = spark.read.schema(schema).json(str(data)).collect()
    assert Counter(tuple(r) for r in got) == Counter(tuple(r) for r in expected)
    assert len(got) == 302

    csv = tmp_path / "csv"
    csv.mkdir()
    content = "id,name\n" + "\n".join(f"{i},n{i}" for i in range(50)) + "\n"
    (csv / "a.csv.bz2").write_bytes(bz2.compress(content.encode("utf-8")))
    source = (
        FileSource.builder()
        .path(str(csv))
        .format("csv")
        .schema("id INT, name STRING")
        .option("header", "true")
        .build()
    )
    got = _collect(spark, source, "py_bz2_csv", tmp_path / "ckpt-csv")
    expected = spark.read.schema("id INT, name STRING").option("header", "true").csv(str(csv)).collect()
    assert Counter(tuple(r) for r in got) == Counter(tuple(r) for r in expected)
    assert len(got) == 50

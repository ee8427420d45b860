"""FileSource from Python: builder -> from_source -> sink, against spark.read on the same files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sluice
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from sluice import FileSource, SluiceConfigError

LINES = [
    '{"a": 1, "b": "one"}',
    '{"a": 2, "b": "héllo 🌍"}',
    '{"a": 3, "b": ',
    "",
    '{"a": "x", "b": "wrong type"}',
    '{"a": 4, "b": "crlf"}\r',
    '{"a": 5, "b": "last"}',
]


@pytest.mark.parametrize("schema", ["a INT, b STRING, _corrupt_record STRING", "struct"])
def test_rows_equal_spark_read_json(spark: SparkSession, tmp_path: Path, schema: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "part-0.json").write_text("\n".join(LINES), encoding="utf-8")
    (tmp_path / "data" / "part-1.json").write_text("", encoding="utf-8")
    if schema == "struct":
        schema_arg: object = StructType([StructField("a", IntegerType()), StructField("b", StringType())])
    else:
        schema_arg = schema
    source = FileSource.builder().path(str(tmp_path / "data")).format("json").schema(schema_arg).build()
    df = sluice.from_source(spark, source, name="files")
    assert [f.name for f in df.schema.fields][-3:] == [
        "_split",
        "_position",
        "_timestamp",
    ]
    table = f"py_files_{'struct' if schema == 'struct' else 'ddl'}"
    query = (
        df.drop("_split", "_position", "_timestamp")
        .writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    got = spark.table(table).collect()
    expected = spark.read.schema(schema_arg).json(str(tmp_path / "data")).collect()
    assert Counter(tuple(r) for r in got) == Counter(tuple(r) for r in expected)
    assert len(got) == 6


@pytest.mark.parametrize(
    ("configure", "message"),
    [
        (lambda b: b.schema("a INT"), "missing required option 'path'"),
        (
            lambda b: b.path("/x").schema("a INT").option("mode", "LENIENT"),
            "invalid value 'LENIENT' for option 'mode'; allowed: PERMISSIVE, DROPMALFORMED or FAILFAST",
        ),
        (
            lambda b: b.path("/x").schema("a INT").option("sep", ";"),
            "option 'sep' does not apply to format 'json'",
        ),
        (
            lambda b: b.path("/x").format("xml"),
            "invalid value 'xml' for option 'format'",
        ),
        (
            lambda b: b.path("/x").schema("a INT").option("modee", "x"),
            "unknown option 'modee'",
        ),
    ],
)
def test_bad_options_fail_at_build(spark: SparkSession, configure, message: str) -> None:
    with pytest.raises(SluiceConfigError) as error:
        configure(FileSource.builder()).build()
    assert message in str(error.value)


def test_parquet_rows_equal_spark_read_parquet(spark: SparkSession, tmp_path: Path) -> None:
    """Parquet files in partition directories, several row groups each: the same rows (partition
    columns typed as Spark types them) as spark.read.parquet, and one split per row group."""
    data = str(tmp_path / "parquet")
    (
        spark.range(0, 900, 1, 2)
        .selectExpr(
            "id",
            "CASE WHEN id % 4 = 0 THEN NULL ELSE concat('n', id) END AS name",
            "CAST(id / 3 AS DECIMAL(10, 2)) AS amount",
            "CASE WHEN id % 2 = 0 THEN DATE'2026-11-01' ELSE DATE'2026-11-02' END AS date",
        )
        .write.option("parquet.block.size", "2048")
        .partitionBy("date")
        .parquet(data)
    )
    source = FileSource.builder().path(data).format("parquet").timestamp_column("id").build()
    df = sluice.from_source(spark, source, name="parquet")
    query = (
        df.writeStream.format("memory")
        .queryName("py_parquet")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("maxRecordsPerTrigger", "200")
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    table = spark.table("py_parquet")
    got = table.drop("_split", "_position", "_timestamp")
    expected = spark.read.parquet(data)
    assert got.schema == expected.schema
    assert Counter(tuple(r) for r in got.collect()) == Counter(tuple(r) for r in expected.collect())
    files = len(expected.inputFiles())
    assert table.select("_split").distinct().count() > files


def test_parquet_row_groups_are_not_skipped_by_a_comparison_with_a_double_nan_passes(
    spark: SparkSession, tmp_path: Path
) -> None:
    """pyarrow (so pyiceberg and delta-rs) leaves NaN out of a row group's minimum and maximum, and
    Spark orders NaN above every number: `d > 1.0` holds for the NaN row of a row group whose
    statistics say [0.25, 0.5]. Sluice reads the rows of the unpushed plan; `spark.read.parquet`,
    which prunes by such a comparison, loses the NaN row."""
    path = tmp_path / "nan"
    path.mkdir()
    rows = pa.table({"id": list(range(6)), "d": [0.5, float("nan"), 0.25, 2.0, 3.0, 2.5]})
    pq.write_table(rows, path / "f.parquet", row_group_size=3)
    statistics = pq.ParquetFile(path / "f.parquet").metadata.row_group(0).column(1).statistics
    assert (statistics.min, statistics.max) == (0.25, 0.5)  # the NaN left out
    source = FileSource.builder().path(str(path)).format("parquet").build()
    got = sorted(r.id for r in sluice.read(spark, source).where("d > 1.0").collect())
    assert got == [1, 3, 4, 5]
    spark_pushed = sorted(r.id for r in spark.read.parquet(str(path)).where("d > 1.0").collect())
    assert spark_pushed == [3, 4, 5]  # Spark's own pushdown: the NaN row is lost


def test_parquet_options_fail_at_build(spark: SparkSession, tmp_path: Path) -> None:
    data = str(tmp_path / "p")
    spark.range(3).selectExpr("id", "CAST(id AS STRING) AS s").write.parquet(data)
    with pytest.raises(SluiceConfigError) as error:
        FileSource.builder().path(data).format("parquet").timestamp_column("s").build()
    assert (
        "invalid value 's' for option 'timestampColumn'; allowed: a TIMESTAMP or BIGINT column of the schema: id"
        in str(error.value)
    )
    with pytest.raises(SluiceConfigError) as error:
        FileSource.builder().path(data).format("parquet").max_split_bytes(10).build()
    assert "unknown option 'maxSplitBytes'" in str(error.value)

"""Iceberg tables as sources: tables written by pyiceberg (a local SQL catalog on sqlite, in pytest's
tmp dirs), read by Sluice, compared with pyiceberg's own scan of the same snapshot as multisets."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession


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

"""docs/migrating-from-spark-kafka.md: the snippet that turns a format("kafka") checkpoint into
Sluice's startingOffsets, run against a checkpoint Spark's own Kafka source wrote."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SPARK_KAFKA_JARS
from pyspark.sql import SparkSession
from sluice.testing import EmbeddedKafka

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "migrating-from-spark-kafka.md"
TOPIC = "migrate"


def page_snippet() -> Callable[[str], str]:
    """The page's tested Python block, executed: its `last_spark_offsets`."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- tested: tests/test_migration.py[^>]*-->\s*```python\n(.*?)```",
        text,
        re.S,
    )
    assert match, f"{PAGE} has no tested Python block"
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), str(PAGE), "exec"), namespace)  # noqa: S102 - our own docs
    return namespace["last_spark_offsets"]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def spark_checkpoint(
    spark: SparkSession, kafka: EmbeddedKafka, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A format("kafka") checkpoint over 300 records in 3 partitions, read 150 a trigger, by Spark's
    own Kafka source (on the shared session's classpath: tests/conftest.py)."""
    if not SPARK_KAFKA_JARS.exists():
        pytest.fail(f"{SPARK_KAFKA_JARS} is missing: run `make build`")
    kafka.create_topic(TOPIC, partitions=3)
    kafka.produce(TOPIC, [{"value": f"old-{i}", "partition": i % 3} for i in range(300)])
    work = tmp_path_factory.mktemp("spark-kafka")
    checkpoint = work / "checkpoint"
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "150")
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(300), "Spark's Kafka query did not end within 300 s"
    assert query.exception() is None, query.exception()
    return checkpoint


@pytest.mark.slow
def test_the_snippet_reads_the_last_committed_batch(spark_checkpoint: Path, tmp_path: Path) -> None:
    last_spark_offsets = page_snippet()
    # two batches of 150, 50 a partition each (Spark shares its limit in proportion)
    assert sorted(n for n in os.listdir(spark_checkpoint / "commits") if n.isdigit()) == ["0", "1"]
    assert json.loads(last_spark_offsets(str(spark_checkpoint))) == {TOPIC: {"0": 100, "1": 100, "2": 100}}
    # a batch planned but not committed (the query died in it) is not skipped
    crashed = tmp_path / "crashed"
    shutil.copytree(spark_checkpoint, crashed)
    (crashed / "commits" / "1").unlink()
    assert json.loads(last_spark_offsets(str(crashed))) == {TOPIC: {"0": 50, "1": 50, "2": 50}}
    empty = tmp_path / "empty"
    (empty / "commits").mkdir(parents=True)
    (empty / "offsets").mkdir()
    with pytest.raises(ValueError, match="no committed batch"):
        last_spark_offsets(str(empty))


@pytest.mark.slow
def test_sluice_goes_on_where_the_spark_query_got(
    spark: SparkSession, kafka: EmbeddedKafka, spark_checkpoint: Path, checkpoint: str
) -> None:
    kafka.produce(TOPIC, [{"value": f"new-{i}", "partition": i % 3} for i in range(90)])
    start = page_snippet()(str(spark_checkpoint))

    # the old checkpoint is refused: a new one is needed
    old = Path(checkpoint).parent / "old-checkpoint"
    shutil.copytree(spark_checkpoint, old)
    reuse = (
        spark.readStream.format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", TOPIC)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(old))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match="it was not written by Sluice"):  # Spark's StreamingQueryException
        reuse.awaitTermination(120)

    query = (
        spark.readStream.format("sluice")
        .option("source", "kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", start)
        .load()
        .selectExpr("CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName("migrated")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert query.exception() is None
    values = sorted(r.value for r in spark.table("migrated").collect())
    assert values == sorted(f"new-{i}" for i in range(90))

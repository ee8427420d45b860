"""The Python builders over the JVM source model, read by a real PySpark streaming query."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
import sluice
from pyspark.sql import SparkSession
from sluice import GeneratorSource, SluiceConfigError


def expected_ids(splits: int, records: int) -> Counter[tuple[int, int]]:
    return Counter((i * splits + s, s) for s in range(splits) for i in range(records))


def _last_sink_batch(sink: Path) -> int:
    """The last batch a file sink committed (its _spark_metadata log): what reading it sees."""
    names = [p.name.removesuffix(".compact") for p in (sink / "_spark_metadata").iterdir()]
    return max(int(n) for n in names if n.isdigit())


def _logged_positions(checkpoint: Path, batch: int) -> dict[str, int]:
    """Each split's position at the end of `batch`, from the offset log (written before it ran)."""
    lines = (checkpoint / "offsets" / str(batch)).read_text(encoding="utf-8").splitlines()
    return {s["id"]: s["position"] for s in json.loads(lines[2])["splits"]}


def test_stop_and_restart_from_checkpoint_writes_each_record_exactly_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    source = GeneratorSource.builder().splits(4).records_per_split(2_000).build()
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start(limit: int, **trigger: object):
        df = sluice.from_source(spark, source, name="numbers", options={"maxRecordsPerTrigger": limit})
        return (
            df.writeStream.format("json")
            .option("path", out)
            .option("checkpointLocation", checkpoint)
            .trigger(**trigger)
            .start()
        )

    first = start(1_500, processingTime="0 seconds")
    try:
        deadline = time.time() + 120
        while sum(1 for p in first.recentProgress if p["numInputRows"] > 0) < 2:
            assert first.isActive, f"the first run ended: {first.exception()}"
            assert time.time() < deadline, f"the first run made no two batches in 120 s: {first.lastProgress}"
            time.sleep(0.1)
    finally:
        first.stop()
    # The sink holds exactly the records the offset log planned up to the last batch the sink
    # committed, however far the first run got before stop() landed (at least the two batches).
    committed = _last_sink_batch(tmp_path / "out")
    reached = _logged_positions(tmp_path / "checkpoint", committed)
    first_rows = spark.read.json(out).select("id", "split").collect()
    assert Counter((r.id, r.split) for r in first_rows) == Counter(
        (i * 4 + int(s), int(s)) for s, position in reached.items() for i in range(position)
    ), f"the first run's batches 0 to {committed} end at {reached}"
    assert len(first_rows) >= 3_000

    second = start(5_000, availableNow=True)
    assert second.awaitTermination(180), "the restarted query did not end within 180 s"
    assert second.exception() is None

    rows = spark.read.json(out).select("id", "split").collect()
    assert Counter((r.id, r.split) for r in rows) == expected_ids(4, 2_000)


def test_rows_have_the_generator_schema_and_values(spark: SparkSession) -> None:
    source = (
        GeneratorSource.builder()
        .splits(2)
        .records_per_split(3)
        .event_time_start_ms(0)
        .event_time_step(1_000)
        .split_skew(1, 500)
        .payload_bytes(4)
        .build()
    )
    df = sluice.from_source(spark, source, watermark_strategy=sluice.WatermarkStrategy.no_watermarks())
    assert df.isStreaming
    assert [f.name for f in df.schema.fields] == ["id", "split", "timestamp", "payload"]
    query = df.writeStream.format("memory").queryName("py_gen_values").trigger(availableNow=True).start()
    assert query.awaitTermination(120), "the query did not end within 120 s"
    rows = {r.id: r for r in spark.table("py_gen_values").collect()}
    assert sorted(rows) == [0, 1, 2, 3, 4, 5]
    assert rows[3].split == 1
    assert int(rows[3].timestamp.timestamp() * 1000) == 1 * 1_000 + 500
    assert rows[3].payload == "r3-x"


@pytest.mark.parametrize(
    ("configure", "message"),
    [
        (
            lambda b: b.splits(-1).records_per_split(5),
            "GeneratorSource: invalid value '-1' for option 'splits'; allowed: an integer from 1 to 100000.",
        ),
        (
            lambda b: b.rows_per_second(0),
            "GeneratorSource: invalid value '0' for option 'rowsPerSecond'; allowed: an integer >= 1.",
        ),
        (
            lambda b: b.option("splits", "four").records_per_split(1),
            "GeneratorSource: invalid value 'four' for option 'splits'; allowed: an integer from 1 to 100000.",
        ),
        (lambda b: b.splits(2), "an unbounded generator needs option 'rowsPerSecond'"),
        (lambda b: b.option("recordsPerSplt", 3), "unknown option 'recordsPerSplt'"),
    ],
)
def test_bad_values_fail_at_build_with_the_jvm_message(spark: SparkSession, configure, message: str) -> None:
    with pytest.raises(SluiceConfigError) as error:
        configure(GeneratorSource.builder()).build()
    assert message in str(error.value)


def test_options_path_reads_the_same_rows_as_the_builder_path(
    spark: SparkSession,
) -> None:
    """The route Spark Connect takes: format("sluice") with the builder's options."""
    source = GeneratorSource.builder().splits(3).records_per_split(50).build()
    assert source.options == {
        "source": "generator",
        "splits": "3",
        "recordsPerSplit": "50",
    }
    via_options = spark.readStream.format("sluice").options(**source.options).load()
    query = (
        via_options.writeStream.format("memory").queryName("py_gen_opts").trigger(availableNow=True).start()
    )
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert Counter((r.id, r.split) for r in spark.table("py_gen_opts").collect()) == expected_ids(3, 50)


def test_a_missing_required_option_names_it(spark: SparkSession) -> None:
    with pytest.raises(Exception) as error:
        spark.readStream.format("sluice").option("splits", "2").load()
    assert "missing required option 'source'" in str(error.value)


def test_under_spark_connect_from_source_takes_the_options_route(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark Connect has no py4j: from_source must only use readStream.format("sluice").options()."""
    import sluice as package

    monkeypatch.setattr(package, "is_remote", lambda _spark: True)

    def no_py4j(_call):
        raise AssertionError("from_source used py4j, which Spark Connect does not have")

    monkeypatch.setattr(package, "call_jvm", no_py4j)
    source = GeneratorSource.builder().splits(2).records_per_split(4).build()
    df = package.from_source(
        spark,
        source,
        watermark_strategy=sluice.WatermarkStrategy.no_watermarks(),
        name="remote",
        options={"maxRecordsPerTrigger": 3},
    )
    query = df.writeStream.format("memory").queryName("py_gen_remote").trigger(availableNow=True).start()
    assert query.awaitTermination(120), "the query did not end within 120 s"
    assert Counter((r.id, r.split) for r in spark.table("py_gen_remote").collect()) == expected_ids(2, 4)
    assert all(p["numInputRows"] <= 3 for p in query.recentProgress)
    assert query.recentProgress[-1]["sources"][0]["metrics"]["source"] == "remote"

"""A Spark Connect client as a user runs one: its own process, no JVM, `SparkSession.builder.remote`.

    python connect_client.py <scenario> '<json arguments>'

Runs one scenario against the server at ``arguments["url"]`` and prints one JSON line of what it
saw; test_connect.py asserts on it. A scenario is a function below.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import sluice
from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from sluice import (
    FileSource,
    GeneratorSource,
    HybridSource,
    KafkaSource,
    OffsetsInitializer,
    WatermarkStrategy,
)

SCHEMA = "id BIGINT, ts TIMESTAMP"
MINUTE = 60_000
START_MS = 1_700_000_000_000


def session(url: str) -> SparkSession:
    # what a notebook on a Connect cluster writes; configure leaves a remote builder as it is
    return sluice.configure(SparkSession.builder.remote(url)).getOrCreate()


def run_to_end(spark: SparkSession, source: sluice.Source, table: str) -> list[Any]:
    query = (
        sluice.from_source(spark, source, options={"maxRecordsPerTrigger": 40})
        .writeStream.format("memory")
        .queryName(table)
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(180):
        raise AssertionError(f"{table}: the query did not end within 180 s")
    if query.exception() is not None:
        raise AssertionError(f"{table}: {query.exception()}")
    return spark.table(table).collect()


def refusal(build: Callable[[], object]) -> str | None:
    try:
        build()
    except Exception as error:  # noqa: BLE001 - the message is what is checked
        return f"{type(error).__name__}: {error}"
    return None


def refusal_class(build: Callable[[], object]) -> list[str | None] | None:
    """The error class of what ``build`` raised, as PySpark's exception gives it and as
    ``sluice.sluice_error`` converts it: ``[getCondition(), type of the converted error]``."""
    try:
        build()
    except Exception as error:  # noqa: BLE001 - the class is what is checked
        converted = sluice.sluice_error(error)
        condition = (
            error.getCondition() if isinstance(error, sluice.SluiceException | PySparkException) else None
        )
        return [condition, type(converted).__name__ if converted is not None else None]
    return None


def generator(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    source = GeneratorSource.builder().splits(2).records_per_split(50).build()
    rows = run_to_end(spark, source, "connect_numbers")
    unchecked = GeneratorSource.builder().splits(2).build()  # unbounded without a rate: the JVM's rule

    def start_unchecked() -> None:
        sluice.from_source(spark, unchecked).writeStream.format("memory").queryName("never").start()

    return {
        "remote": sluice.is_remote(spark),
        "jvm": SparkContext._jvm is not None,  # noqa: SLF001
        "ids": sorted(r.id for r in rows),
        "splits": sorted({r.split for r in rows}),
        "early": refusal(lambda: GeneratorSource.builder().splits(0).records_per_split(1).build()),
        "at_start": refusal(start_unchecked),
        "early_class": refusal_class(
            lambda: GeneratorSource.builder().splits(0).records_per_split(1).build()
        ),
        "at_start_class": refusal_class(start_unchecked),
    }


def kafka(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    source = (
        KafkaSource.builder()
        .bootstrap_servers(args["bootstrap"])
        .topics(args["topic"])
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        # a password in the request's plan, as a SASL user's would be (the broker's PLAINTEXT
        # listener ignores both): test_connect.py looks for it where the server writes
        .property(
            "sasl.jaas.config",
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="reader" password="{args["password"]}";',
        )
        .property("ssl.truststore.password", args["password"])
        .build()
    )
    rows = run_to_end(spark, source, "connect_kafka")
    records = [
        [
            r.key.decode() if r.key is not None else None,
            r.value.decode(),
            r.topic,
            r.partition,
            r.offset,
            round(r.timestamp.timestamp() * 1000),  # naive, in this process's time zone
        ]
        for r in rows
    ]
    # the same topic as a batch DataFrame (sluice.read), with the event-time column a strategy adds
    batch = sluice.read(spark, source, WatermarkStrategy.for_monotonous_timestamps(), name="connect_batch")
    unbounded = KafkaSource.builder().bootstrap_servers(args["bootstrap"]).topics(args["topic"]).build()
    return {
        "records": sorted(records, key=lambda record: (record[3], record[4])),  # partition, offset
        "batch": sorted(
            [r.value.decode(), r.partition, r.offset, r.event_time == r.timestamp] for r in batch.collect()
        ),
        "batch_columns": batch.columns,
        # under Connect load() is lazy: the refusal comes with the first action, with its class
        "unbounded": refusal(lambda: sluice.read(spark, unbounded).collect()),
        "unbounded_class": refusal_class(lambda: sluice.read(spark, unbounded).collect()),
    }


def hybrid(args: dict[str, Any]) -> dict[str, Any]:
    spark = session(args["url"])
    files = (
        FileSource.builder()
        .path(args["history"])
        .format("json")
        .schema(SCHEMA)
        .timestamp_column("ts")
        .build()
    )
    live = (
        KafkaSource.builder()
        .bootstrap_servers(args["bootstrap"])
        .topics(args["topic"])
        .starting_offsets(OffsetsInitializer.earliest())
        .stopping_offsets(OffsetsInitializer.latest())
        .option("format", "json")
        .option("schema", SCHEMA)
        .build()
    )
    source = (
        HybridSource.builder(files).add_source(live, start_at_previous_end_minus=args["margin_ms"]).build()
    )
    rows = run_to_end(spark, source, "connect_hybrid")
    return {
        "ids": sorted(r.id for r in rows),
        "factory": refusal(
            lambda: HybridSource.builder(files).add_source_factory(lambda _: live, bounded=False)
        ),
        "negative_margin": refusal(
            lambda: HybridSource.builder(files).add_source(live, start_at_previous_end_minus=-1)
        ),
    }


def skewed(splits: int, records: int, skew_minutes: int) -> sluice.Source:
    """``splits`` splits of ``records`` records, one a minute; split 0 starts ``skew_minutes`` early."""
    return (
        GeneratorSource.builder()
        .splits(splits)
        .records_per_split(records)
        .event_time_start_ms(START_MS)
        .event_time_step(MINUTE)
        .split_skew(0, -skew_minutes * MINUTE)
        .build()
    )


def event_time(args: dict[str, Any]) -> dict[str, Any]:
    """Every watermark strategy through the server; ``max_drift="auto"``; ``status`` and ``plot``."""
    spark = session(args["url"])
    source = skewed(4, 120, 60)
    # what each strategy does to the schema (analysed by the server)
    columns = {
        "none": sluice.from_source(spark, source, WatermarkStrategy.no_watermarks()).columns,
        "renamed": sluice.from_source(
            spark, source, WatermarkStrategy.for_monotonous_timestamps().with_event_time_column("et")
        ).columns,
    }
    # ... and what each reads, to its end: every record, the renamed column holding its event time
    strategy_reads: dict[str, Any] = {}
    for name, strategy in (
        ("none", WatermarkStrategy.no_watermarks()),
        ("renamed", WatermarkStrategy.for_monotonous_timestamps().with_event_time_column("et")),
    ):
        q = (
            sluice.from_source(spark, skewed(2, 10, 0), strategy)
            .writeStream.format("memory")
            .queryName(f"strategy_{name}")
            .trigger(availableNow=True)
            .start()
        )
        if not q.awaitTermination(120) or q.exception() is not None:
            raise AssertionError(f"strategy_{name}: {q.exception()}")
        rows = spark.table(f"strategy_{name}").collect()
        strategy_reads[name] = {
            "rows": len(rows),
            "et_is_timestamp": name == "renamed" and all(r["et"] == r["timestamp"] for r in rows),
        }
    # every builder step at once; the drift resolved from the query's withWatermark delay
    auto = (
        WatermarkStrategy.for_bounded_out_of_orderness(timedelta(minutes=1))
        .with_timestamp_column("timestamp")
        .with_idleness(timedelta(minutes=1))
        .with_watermark_alignment("connect-auto", max_drift="auto")
        .with_allow_unaligned_source_splits()
    )
    df = sluice.from_source(spark, source, auto, name="skewed", options={"maxRecordsPerTrigger": 80})
    query = (
        df.withWatermark("event_time", "10 minutes")
        .groupBy(F.window("event_time", "1 minute"))
        .count()
        .writeStream.format("memory")
        .queryName("connect_auto")
        .outputMode("update")
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(180) or query.exception() is not None:
        raise AssertionError(f"connect_auto: {query.exception()}")
    read = [p for p in query.recentProgress if p.sources and p.numInputRows > 0]
    final: dict[int, int] = {}
    for row in spark.table("connect_auto").collect():  # update mode: a window's last count is its largest
        start = round(row.window.start.timestamp() * 1000)
        final[start] = max(final.get(start, 0), row["count"])
    spreads = [int(p.sources[0].metrics.get("watermark.spreadMs", "0")) for p in read]

    # a fixed drift, from a timedelta; status and plot of this query, from its recentProgress
    fixed = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "connect-fixed", max_drift=timedelta(minutes=5)
    )
    small = sluice.from_source(
        spark, skewed(2, 20, 30), fixed, name="fixed", options={"maxRecordsPerTrigger": 10}
    )
    fixed_query = (
        small.writeStream.format("memory").queryName("connect_fixed").trigger(availableNow=True).start()
    )
    if not fixed_query.awaitTermination(120) or fixed_query.exception() is not None:
        raise AssertionError(f"connect_fixed: {fixed_query.exception()}")
    fixed_metrics = [p.sources[0].metrics for p in fixed_query.recentProgress if p.sources]
    kept = [p.batchId for p in fixed_query.recentProgress if p.sources]
    tables = {b: sluice.status(fixed_query, batch=b) for b in kept}
    last = sluice.status(fixed_query)
    figure = sluice.plot(fixed_query, path="connect-fixed.png")
    axes = figure.axes[0]
    drawn = {line.get_label(): line for line in axes.lines}
    limit = drawn["alignment limit (group connect-fixed): slowest split's watermark + max drift"]
    minimum = drawn["set group connect-fixed's minimum: not held back by the limit"]
    limits = dict(zip(limit.get_xdata(), limit.get_ydata(), strict=True))
    minima = dict(zip(minimum.get_xdata(), minimum.get_ydata(), strict=True))
    # monotonous: no split but the group's minimum ends a batch above the limit
    above = [
        (int(x), line.get_label())
        for line in axes.lines
        if line.get_label().startswith("fixed ")
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)
        if x in limits and minima.get(x) != y and y > limits[x]
    ]

    def unwatched() -> None:  # "auto" needs the query's withWatermark: refused when it starts
        strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
            "g", max_drift="auto"
        )
        sluice.from_source(spark, source, strategy, name="unwatched").writeStream.format("noop").start()

    return {
        "columns": columns,
        "strategies_read": strategy_reads,
        "auto_drift": sorted({p.sources[0].metrics["alignment.maxDriftMs"] for p in read}),
        "auto_flag": sorted({p.sources[0].metrics["alignment.maxDriftAuto"] for p in read}),
        "auto_spreads": spreads,
        "dropped": sum(op.numRowsDroppedByWatermark for p in query.recentProgress for op in p.stateOperators),
        "windows": sorted(final.items()),
        "first_states": list(tables[kept[0]]["state"]),
        "paused_why": sorted(
            {
                r
                for t in tables.values()
                for s, r in zip(t["state"], t["reason"], strict=True)
                if s == "paused"
            }
        ),
        "last_states": list(last["state"]),
        "status_columns": list(last.columns) == sluice.STATUS_COLUMNS,
        "limits_drawn": len(limits),
        "above_limit": above,
        "png_bytes": Path("connect-fixed.png").stat().st_size,
        "fixed_drift": sorted({m["alignment.maxDriftMs"] for m in fixed_metrics}),
        "fixed_paused": max(int(m["watermark.pausedSplits"]) for m in fixed_metrics),
        "fixed_rows": fixed_query.recentProgress and spark.table("connect_fixed").count(),
        "unwatched": refusal(unwatched),
    }


SCENARIOS = {"generator": generator, "kafka": kafka, "hybrid": hybrid, "event_time": event_time}

if __name__ == "__main__":
    scenario, arguments = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(SCENARIOS[scenario](arguments)))

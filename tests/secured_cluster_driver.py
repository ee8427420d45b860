"""Run by test_secured_cluster.py in a process of its own (one SparkContext per process): a
real-time query with watermark alignment on two executor JVMs (local-cluster) whose RPC is
authenticated and encrypted (`spark.authenticate`, `spark.network.crypto.enabled`); prints, as
JSON, what the test checks. The test writes the records (its broker's client is in its process):
the first ones before it starts this, partition 0's catch-up when this prints `PAUSED`.

Partition 1 starts two hours of event time after partition 0, far past the 1-minute drift: its
reader must be paused by the group's limit, which reaches it over Spark's RPC, and resumed once
partition 0 catches up."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from datetime import timedelta
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import KafkaSource, OffsetsInitializer, WatermarkStrategy

TOPIC = "secured-rt-aligned"
BASE = 1_700_000_000_000
HOURS = 2 * 3600 * 1000
STEP = 5000


def records(partition: int, start: int, first: int, until: int) -> list[dict]:
    return [
        {"value": f"p{partition}-{i}", "partition": partition, "timestamp": start + i * STEP}
        for i in range(first, until)
    ]


def values(sink: Path) -> list[str]:
    return [line for f in sink.glob("*.txt") for line in f.read_text().splitlines()]


def wait_for(what: str, done, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def paused_ms(query) -> int:
    return max(
        (int(p["sources"][0]["metrics"].get("alignmentPausedMs", "0")) for p in query.recentProgress),
        default=0,
    )


def main(root: Path, bootstrap: str) -> None:
    builder = (
        SparkSession.builder.master("local-cluster[2,1,768]")
        .appName("sluice-secured-cluster")
        .config("spark.executor.memory", "512m")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        # what a secured cluster sets: every RPC (the live alignment channel's included)
        # authenticated with a shared secret and encrypted
        .config("spark.authenticate", "true")
        .config("spark.authenticate.secret", secrets.token_hex(16))
        .config("spark.network.crypto.enabled", "true")
        .config("spark.pyspark.python", sys.executable)
    )
    spark = sluice.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    conf = spark.sparkContext.getConf()
    jvm = spark._jvm  # noqa: SLF001
    wait_for("two executors", lambda: jvm.org.apache.spark.sluice.ExecutorLocations.sorted().size() >= 2)

    topic = TOPIC
    source = (
        KafkaSource.builder()
        .bootstrap_servers(bootstrap)
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("kafka.max.poll.records", "10")
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        topic, timedelta(minutes=1), timedelta(milliseconds=100)
    )
    sink = root / "sink"
    sink.mkdir()

    def write(row) -> None:  # runs in Python workers on the executors: one file per process
        with open(sink / f"{os.getpid()}.txt", "a") as out:
            out.write(row.value.decode() + "\n")

    query = (
        sluice.from_source(spark, source, strategy, topic)
        .writeStream.foreach(write)
        .outputMode("update")
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(realTime="5 seconds")
        .start()
    )
    try:
        wait_for("partition 0's records", lambda: len(values(sink)) >= 100)
        wait_for("a pause in query progress", lambda: paused_ms(query) > 0)
        ahead_while_paused = sum(1 for v in values(sink) if v.startswith("p1-"))
        # the test writes partition 0's catch-up (its broker client is in the test's process)
        print("PAUSED", flush=True)
        sys.stdin.readline()
        wait_for("every record once partition 0 caught up", lambda: len(values(sink)) >= 300)
    finally:
        query.stop()
    expected = records(0, BASE, 0, 100) + records(0, BASE, HOURS // STEP, HOURS // STEP + 100)
    expected += records(1, BASE + HOURS, 0, 100)
    print(
        json.dumps(
            {
                "authenticate": conf.get("spark.authenticate"),
                "crypto": conf.get("spark.network.crypto.enabled"),
                "executors": jvm.org.apache.spark.sluice.ExecutorLocations.sorted().size(),
                "paused_ms": paused_ms(query),
                "ahead_while_paused": ahead_while_paused,
                "rows_exact": sorted(values(sink)) == sorted(r["value"] for r in expected),
                "rows": len(values(sink)),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])

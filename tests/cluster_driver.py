"""Run by test_cluster.py in a process of its own (one SparkContext per process): two executor JVMs
(local-cluster) whose RPC is authenticated and encrypted (`spark.authenticate`,
`spark.network.crypto.enabled`), as a secured cluster runs them, and on them, one after the other,
the checks that need executors apart from the driver (starting such a cluster costs three JVMs, so
the checks share one). Each check prints one line, its name and a JSON object of what the test
asserts:

- `LOCALITY`: .json.gz files read over several batches, each decompressed from its start once (its
  ranges prefer the executor that keeps it open, batch after batch).
- `ALIGNMENT`: a real-time query with watermark alignment, whose group limit reaches the readers
  over Spark's RPC. The test writes the records (its broker's client is in its process): the first
  ones before it starts this, partition 0's catch-up when this prints `PAUSED`. Partition 1 starts
  two hours of event time after partition 0, far past the 1-minute drift: its reader must be paused,
  and resumed once partition 0 catches up. Its source's options hold a password (the test's
  argument) that the test looks for in the executors' logs.
- `APP`: the application's id, which names the folder of the executors' logs."""

from __future__ import annotations

import gzip
import json
import os
import secrets
import sys
import time
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import FileSource, KafkaSource, OffsetsInitializer, WatermarkStrategy

TOPIC = "secured-rt-aligned"
BASE = 1_700_000_000_000
HOURS = 2 * 3600 * 1000
STEP = 5000
PER_FILE = 20000


def records(partition: int, start: int, first: int, until: int) -> list[dict]:
    return [
        {"value": f"p{partition}-{i}", "partition": partition, "timestamp": start + i * STEP}
        for i in range(first, until)
    ]


def wait_for(what: str, done: Callable[[], bool], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def report(check: str, result: dict) -> None:
    print(f"{check} {json.dumps(result)}", flush=True)


def locality(spark: SparkSession, root: Path) -> dict:
    jvm = spark._jvm  # noqa: SLF001
    executors = jvm.org.apache.spark.sluice.ExecutorLocations.sorted()
    # two files per executor, so that no executor has more to read than its one core
    data = root / "data"
    data.mkdir()
    wanted: dict[str, list[Path]] = {}
    i = 0
    while sum(len(v) for v in wanted.values()) < 4:
        path = data / f"part-{i:05d}.json.gz"
        place = jvm.sluice.spark.TaskLocality.executorOf(
            path.as_uri().replace("file:///", "file:/"), executors
        )
        if len(wanted.setdefault(place, [])) < 2:
            wanted[place].append(path)
        i += 1
    files = sorted(p for v in wanted.values() for p in v)
    for n, path in enumerate(files):
        lines = "".join(
            json.dumps({"id": n * PER_FILE + k, "pad": "x" * (k % 17)}) + "\n" for k in range(PER_FILE)
        )
        path.write_bytes(gzip.compress(lines.encode("utf-8")))

    source = FileSource.builder().path(str(data)).format("json").schema("id INT, pad STRING").build()
    df = sluice.from_source(
        spark,
        source,
        name="locality",
        options={"maxRecordsPerTrigger": str(len(files) * PER_FILE // 8)},
    )
    query = (
        df.select("id")
        .writeStream.format("memory")
        .queryName("locality")
        .option("checkpointLocation", str(root / "locality-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    error = query.exception()
    ids = sorted(r[0] for r in spark.table("locality").collect())
    return {
        "error": None if error is None else str(error),
        "files": len(files),
        "ids_exact": ids == list(range(len(files) * PER_FILE)),
        "batches": sum(1 for p in query.recentProgress if p["numInputRows"] > 0),
        "opens": int(query.lastProgress["sources"][0]["metrics"].get("compressedFileOpens", "-1")),
    }


def values(sink: Path) -> list[str]:
    return [line for f in sink.glob("*.txt") for line in f.read_text().splitlines()]


def paused_ms(query) -> int:
    return max(
        (int(p["sources"][0]["metrics"].get("alignmentPausedMs", "0")) for p in query.recentProgress),
        default=0,
    )


def alignment(spark: SparkSession, root: Path, bootstrap: str, password: str) -> dict:
    source = (
        KafkaSource.builder()
        .bootstrap_servers(bootstrap)
        .topics(TOPIC)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("kafka.max.poll.records", "10")
        # a password where a SASL user's would be (the broker's PLAINTEXT listener ignores both):
        # every executor's consumer gets it, and the test looks for it in their logs
        .property(
            "sasl.jaas.config",
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="reader" password="{password}";',
        )
        .property("ssl.truststore.password", password)
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        TOPIC, timedelta(minutes=1), timedelta(milliseconds=100)
    )
    sink = root / "sink"
    sink.mkdir()

    def write(row) -> None:  # runs in Python workers on the executors: one file per process
        with open(sink / f"{os.getpid()}.txt", "a") as out:
            out.write(row.value.decode() + "\n")

    query = (
        sluice.from_source(spark, source, strategy, TOPIC)
        .writeStream.foreach(write)
        .outputMode("update")
        .option("checkpointLocation", str(root / "alignment-checkpoint"))
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
    conf = spark.sparkContext.getConf()
    return {
        "authenticate": conf.get("spark.authenticate"),
        "crypto": conf.get("spark.network.crypto.enabled"),
        "executors": spark._jvm.org.apache.spark.sluice.ExecutorLocations.sorted().size(),  # noqa: SLF001
        "paused_ms": paused_ms(query),
        "ahead_while_paused": ahead_while_paused,
        "rows_exact": sorted(values(sink)) == sorted(r["value"] for r in expected),
        "rows": len(values(sink)),
    }


def main(root: Path, bootstrap: str, password: str) -> None:
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
    jvm = spark._jvm  # noqa: SLF001
    wait_for("two executors", lambda: jvm.org.apache.spark.sluice.ExecutorLocations.sorted().size() >= 2)
    # where the executors' logs are: <the worker's directory>/<application id>/<executor id>/
    report("APP", {"id": spark.sparkContext.applicationId})
    # a check that fails reports its error and lets the next one run on the same cluster
    for check, run in (
        ("LOCALITY", lambda: locality(spark, root)),
        ("ALIGNMENT", lambda: alignment(spark, root, bootstrap, password)),
    ):
        try:
            report(check, run())
        except Exception:  # noqa: BLE001 - the test shows it
            report(check, {"error": traceback.format_exc()})
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])

"""kafka_profile: where a raw Kafka read spends its time, Sluice's and Spark's, from a profile of each.

`kafka_throughput` says how fast each side reads; this says why. The topic of `kafka_throughput`
(SLUICE_BENCH_KAFKA_RECORDS, default 5,000,000 records of 100 bytes in 8 partitions) is read with
Trigger.AvailableNow into the no-op sink by Sluice and by Spark's `kafka` source, in one session,
each side once untimed and then SLUICE_BENCH_PROFILE_RUNS (default 2) times under Java Flight
Recorder (the JDK's `profile` settings, started through the JFR API in the driver's JVM, which
runs the tasks in `local[2]`). Each sample of a task's thread is put in the first category whose
frames it holds (CATEGORIES, in order), and the result file holds each category's share of each
side's samples.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession

from bench.common import broker, machine, rows_read, run_available_now, session

RESULT = Path(__file__).resolve().parent / "results" / "kafka_profile.json"
TOPIC = "bench"

#: (category, frames any of which put a sample in it), first match wins: the Kafka client's work
#: first, so that what a reader does around it is counted only outside it.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("Kafka client: poll and record parsing", ("KafkaConsumer.poll",)),
    (
        "Kafka client: positions and offset ranges asked besides polls",
        ("InternalKafkaConsumer.getAvailableOffsetRange", "KafkaConsumer.position", "KafkaConsumer.seek"),
    ),
    (
        "the source's row building",
        ("KafkaRowConverter.convert", "KafkaRecordToRowConverter", "SpecificUnsafeProjection.apply"),
    ),
    ("the source's reader loop around it", ("SluicePartitionReader.next", "KafkaBatchPartitionReader.next")),
    ("Spark's custom-metric updates", ("TaskState.updateMetrics",)),
    ("Spark's Project above the scan (rows copied into unsafe rows)", ("BufferedRowIterator.hasNext",)),
]
OTHER = "other"


def _side(spark: SparkSession, fmt: str, options: dict[str, str], records: int, runs: int, jfr: Path) -> dict:
    def once() -> None:
        _, progress = run_available_now(spark.readStream.format(fmt).options(**options).load())
        if rows_read(progress) != records:
            raise AssertionError(f"{fmt} read {rows_read(progress)} rows, expected {records}")

    once()  # class loading and JIT outside the recording
    jvm = spark._jvm  # type: ignore[attr-defined]
    recording = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("profile"))
    recording.start()
    try:
        for _ in range(runs):
            once()
    finally:
        recording.stop()
        recording.dump(jvm.java.io.File(str(jfr)).toPath())
        recording.close()
    return _shares(jfr)


def _shares(jfr: Path) -> dict:
    """Each category's share of the executor threads' samples in the recording `jfr`."""
    text = subprocess.run(
        ["jfr", "print", "--stack-depth", "96", "--events", "jdk.ExecutionSample", str(jfr)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts: Counter[str] = Counter()
    for event in text.split("jdk.ExecutionSample")[1:]:
        # a task's thread (JFR may name it by what it was called when first seen: idle)
        if "Executor$TaskRunner.run" not in event:
            continue
        frames = {".".join(f.split(".")[-2:]) for f in re.findall(r"^\s+([\w$.<>]+)\(", event, re.M)}
        category = next(
            (name for name, marks in CATEGORIES if any(m in f for f in frames for m in marks)),
            OTHER,
        )
        counts[category] += 1
    samples = sum(counts.values())
    return {
        "samples": samples,
        "shares": {name: counts[name] / samples for name, _ in [*CATEGORIES, (OTHER, ())] if samples},
    }


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    runs = int(os.environ.get("SLUICE_BENCH_PROFILE_RUNS", "2"))
    with broker() as kafka, tempfile.TemporaryDirectory(prefix="kafka-profile-") as scratch:
        kafka.create_topic(TOPIC, partitions=8)
        kafka.produce_generated(TOPIC, records, 100)
        common = {
            "kafka.bootstrap.servers": kafka.bootstrap_servers,
            "subscribe": TOPIC,
            "startingOffsets": "earliest",
        }
        # JFR keeps 64 frames of a stack unless told: a read's deepest stacks (the client under
        # generated code) would lose the frames that say whose thread they are
        spark = session(
            "bench-kafka-profile",
            spark_kafka=True,
            conf={"spark.driver.extraJavaOptions": "-XX:FlightRecorderOptions:stackdepth=256"},
        )
        try:
            sides = {
                "sluice": _side(
                    spark,
                    "sluice",
                    {"source": "kafka", **common},
                    records,
                    runs,
                    Path(scratch) / "sluice.jfr",
                ),
                "spark": _side(spark, "kafka", common, records, runs, Path(scratch) / "spark.jfr"),
            }
        finally:
            spark.stop()
    result = {
        "benchmark": "kafka_profile",
        "records": records,
        "profiled_runs": runs,
        "categories": [name for name, _ in CATEGORIES] + [OTHER],
        **sides,
        "machine": machine("local[2]"),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    for side in ("sluice", "spark"):
        print(f"kafka_profile {side} ({result[side]['samples']} samples):")
        for name, share in result[side]["shares"].items():
            print(f"  {share:6.1%} {name}")
    return result

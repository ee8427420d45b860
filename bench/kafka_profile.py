"""kafka_profile: where a raw Kafka read spends its time, Sluice's and Spark's, from a profile of each.

`kafka_throughput` says how fast each side reads; this says why. The topic of `kafka_throughput`
(SLUICE_BENCH_KAFKA_RECORDS, default 5,000,000 records of 100 bytes in 8 partitions) is read with
Trigger.AvailableNow into the no-op sink by Sluice and by Spark's `kafka` source, in one session,
each side once untimed and then SLUICE_BENCH_PROFILE_RUNS (default 2) times under Java Flight
Recorder (the JDK's `profile` settings with a task's thread sampled every SAMPLE_PERIOD_MS,
started through the JFR API in the driver's JVM, which runs the tasks in `local[2]`). Each sample
of a task's thread is put in the first category whose frames it holds (CATEGORIES, in order), and
the result file holds each category's share of each side's samples. Beside the samples, each
side's runs record their wall seconds, the CPU seconds of the driver's JVM and of the broker's
(`profiled`) and the requests the broker answered, by type. Both sides run again at
`kafka_throughput`'s tuned poll size (`kafka.max.poll.records`, from its last result). The
recordings are kept in bench/scratch/kafka_profile/ (`jfr print --events jdk.ExecutionSample`,
`jfr view`; their garbage collections: `jfr print --events jdk.GarbageCollection`).

The driver's JVM runs with `-XX:+DebugNonSafepoints`. Without it the JIT keeps the frames of
compiled code only at calls and safepoint polls, and JFR puts a sample taken anywhere else in the
frames of the nearest such point: in the read's hot loop, where Spark's `PartitionIterator.next`,
`TaskState.updateMetrics` and the reader are compiled into one method, samples of the reader's work
landed on trivial lines of Spark's metric bookkeeping (a comparison every row, a one-element
`filterInPlace` every 100 rows), in shares that changed from one run of the same code to the
next with the JIT's code layout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from sluice.testing import EmbeddedKafka

from bench.common import broker, cpu_seconds, driver_pid, machine, rows_read, run_available_now, session

RESULT = Path(__file__).resolve().parent / "results" / "kafka_profile.json"
#: the last run's recordings, kept to be read again
SCRATCH = Path(__file__).resolve().parent / "scratch" / "kafka_profile"
#: how often JFR samples a running thread (the `profile` settings' 10 ms gave a few hundred samples a side)
SAMPLE_PERIOD_MS = 2
#: frames at any instruction, not only at calls and safepoint polls (see the module's comment)
JVM_OPTIONS = "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints"
TOPIC = "bench"

#: (category, frames any of which put a sample in it), first match wins: the Kafka client's work
#: first, so that what a reader does around it is counted only outside it; the reader's answer to
#: Spark's ask for its metrics before Spark's bookkeeping that asks. Spark's `TaskState` (its
#: `DataSourceRDD`) counts the task's input metrics at every row (records read; the Hadoop file
#: systems' bytes read every 1,000 rows, whatever the source) and every 100 rows asks each reader
#: for its custom metrics and merges the answers by name into the scan's SQL metrics.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("Kafka client: poll and record parsing", ("KafkaConsumer.poll",)),
    (
        "Kafka client: positions and offset ranges asked besides polls",
        ("InternalKafkaConsumer.getAvailableOffsetRange", "KafkaConsumer.position", "KafkaConsumer.seek"),
    ),
    (
        "the source's row (or column batch) building",
        (
            "KafkaRowConverter.convert",
            "KafkaRecordToRowConverter",
            "SpecificUnsafeProjection.apply",
            "KafkaColumnarReader.fetch",
        ),
    ),
    (
        "the source's reader loop around it",
        (
            "SluicePartitionReader.next",
            "SluiceColumnarPartitionReader.next",
            "KafkaBatchPartitionReader.next",
        ),
    ),
    (
        "the source's answers to Spark's asks for its metrics",
        ("SluicePartitionReader.currentMetricsValues", "KafkaBatchPartitionReader.currentMetricsValues"),
    ),
    ("Spark's merge of the sources' metrics every 100 rows", ("TaskState.mergeAndUpdateCustomMetrics",)),
    (
        "Spark's input metrics (records read per row, file systems' bytes read per 1,000)",
        ("TaskState.updateMetrics",),
    ),
    (
        "Spark's copy into unsafe rows (the Project above a row scan, ColumnarToRow above a batch scan)",
        ("BufferedRowIterator.hasNext",),
    ),
]
OTHER = "other"


def profiled(
    once: Callable[[], None],
    runs: int,
    kafka: EmbeddedKafka,
    jvm_pid: int,
    start: Callable[[], object],
    stop: Callable[[], object],
) -> dict:
    """`once` run untimed (class loading and JIT outside the recording), then `runs` times between
    `start` and `stop` of a recording: the runs' wall seconds, the CPU seconds the side's JVM
    (`jvm_pid`) and the broker's took over them, and the requests the broker answered, by type."""
    once()
    start()
    pids = {"jvm": jvm_pid, "broker": kafka.pid}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    requests = kafka.request_counts()
    began = time.perf_counter()
    try:
        for _ in range(runs):
            once()
    finally:
        wall = time.perf_counter() - began
        cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
        answered = {k: n - requests.get(k, 0) for k, n in kafka.request_counts().items()}
        stop()
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "broker_requests": {k: n for k, n in sorted(answered.items()) if n > 0},
    }


def driver_recording(spark: SparkSession, jfr: Path) -> tuple[Callable[[], None], Callable[[], None]]:
    """Start and stop of a recording of the driver's JVM (which runs the tasks in `local[2]`) into
    `jfr`: the JDK's `profile` settings, a running thread sampled every SAMPLE_PERIOD_MS."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    recording: list = []

    def start() -> None:
        r = jvm.jdk.jfr.Recording(jvm.jdk.jfr.Configuration.getConfiguration("profile"))
        r.enable("jdk.ExecutionSample").withPeriod(jvm.java.time.Duration.ofMillis(SAMPLE_PERIOD_MS))
        r.start()
        recording.append(r)

    def stop() -> None:
        r = recording.pop()
        r.stop()
        r.dump(jvm.java.io.File(str(jfr)).toPath())
        r.close()

    return start, stop


def _side(
    spark: SparkSession,
    fmt: str,
    options: dict[str, str],
    records: int,
    runs: int,
    jfr: Path,
    kafka: EmbeddedKafka,
) -> dict:
    def once() -> None:
        _, progress = run_available_now(spark.readStream.format(fmt).options(**options).load())
        if rows_read(progress) != records:
            raise AssertionError(f"{fmt} read {rows_read(progress)} rows, expected {records}")

    times = profiled(once, runs, kafka, driver_pid(spark), *driver_recording(spark, jfr))
    return {**shares(jfr), **times}


def shares(
    jfr: Path,
    threads: tuple[str, ...] = ("Executor$TaskRunner.run",),
    categories: list[tuple[str, tuple[str, ...]]] = CATEGORIES,
) -> dict:
    """Each category's share of the samples in the recording `jfr` of threads running one of
    `threads` (Spark's task threads unless told), and its count (both sides read the same records
    with the same sampling period: counts compare across sides)."""
    text = subprocess.run(
        ["jfr", "print", "--stack-depth", "96", "--events", "jdk.ExecutionSample", str(jfr)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    counts: Counter[str] = Counter()
    for event in text.split("jdk.ExecutionSample")[1:]:
        # a thread of the read, by its frames (JFR may name it by what it was called when first seen)
        if not any(t in event for t in threads):
            continue
        frames = {".".join(f.split(".")[-2:]) for f in re.findall(r"^\s+([\w$.<>]+)\(", event, re.M)}
        category = next(
            (name for name, marks in categories if any(m in f for f in frames for m in marks)),
            OTHER,
        )
        counts[category] += 1
    samples = sum(counts.values())
    names = [name for name, _ in [*categories, (OTHER, ())]]
    return {
        "samples": samples,
        "shares": {name: counts[name] / samples for name in names if samples},
        "counts": {name: counts[name] for name in names},
    }


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    runs = int(os.environ.get("SLUICE_BENCH_PROFILE_RUNS", "2"))
    throughput = RESULT.with_name("kafka_throughput.json")
    # Spark's best of kafka_throughput's sweep (a result without the fetch size fetched at Kafka's 1 MB)
    swept = json.loads(throughput.read_text()) if throughput.exists() else {}
    poll_records = swept.get("tuned_max_poll_records", 5_000)
    fetch_bytes = swept.get("tuned_max_partition_fetch_bytes", 1 << 20)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    with broker() as kafka:
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
            conf={"spark.driver.extraJavaOptions": f"-XX:FlightRecorderOptions:stackdepth=256 {JVM_OPTIONS}"},
        )
        try:
            sides = {
                "sluice": _side(
                    spark,
                    "sluice",
                    {"source": "kafka", **common},
                    records,
                    runs,
                    SCRATCH / "sluice.jfr",
                    kafka,
                ),
                "spark": _side(spark, "kafka", common, records, runs, SCRATCH / "spark.jfr", kafka),
            }
            # both again as kafka_throughput's tuned sides read (its sweep's best poll size for
            # Spark), where Spark asks for offset ranges once per larger poll
            tuned = {
                **common,
                "kafka.max.poll.records": str(poll_records),
                "kafka.max.partition.fetch.bytes": str(fetch_bytes),
            }
            sides["sluice_tuned"] = _side(
                spark,
                "sluice",
                {"source": "kafka", **tuned},
                records,
                runs,
                SCRATCH / "sluice-tuned.jfr",
                kafka,
            )
            sides["spark_tuned"] = _side(
                spark, "kafka", tuned, records, runs, SCRATCH / "spark-tuned.jfr", kafka
            )
        finally:
            spark.stop()
    result = {
        "benchmark": "kafka_profile",
        "records": records,
        "profiled_runs": runs,
        "sample_period_ms": SAMPLE_PERIOD_MS,
        "jvm_options": JVM_OPTIONS,
        "categories": [name for name, _ in CATEGORIES] + [OTHER],
        "tuned_max_poll_records": poll_records,
        "tuned_max_partition_fetch_bytes": fetch_bytes,
        **sides,
        # shares, not rates, are read from a profile; the load says how busy the machine was
        "machine": machine("local[2]", load_average_1m=[load_before, os.getloadavg()[0]]),
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    for side in sides:
        print(f"kafka_profile {side} ({result[side]['samples']} samples):")
        for name, share in result[side]["shares"].items():
            print(f"  {share:6.1%} {name}")
    return result

"""What every benchmark needs: a Spark session with the Sluice jar, and a timed AvailableNow run."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyspark
import sluice
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter
from sluice.testing import EmbeddedKafka

ROOT = Path(__file__).resolve().parent.parent
SPARK_KAFKA_JARS = ROOT / "jvm" / "spark" / "target" / "spark-kafka-jars.txt"
# Diagnostics the benchmarks call on the JVM (row sizes); never part of the Sluice jar.
BENCHKIT_JARS = ROOT / "jvm" / "benchkit" / "target" / "scala-2.13"


def machine(master: str, **extra: object) -> dict:
    """Where a result was measured, for its file (the report reads it from there): the cores, Spark's
    master, and the versions compared (Spark's own Kafka connector is the newest on Maven Central,
    see docs/benchmarks.md), with whatever a benchmark adds."""
    kafka_jars = SPARK_KAFKA_JARS.read_text() if SPARK_KAFKA_JARS.exists() else ""
    spark_kafka = re.search(r"spark-sql-kafka-0-10_[\d.]+-([^/\\,]+?)\.jar", kafka_jars)
    return {
        "cpus": len(os.sched_getaffinity(0)),  # the cores this process may use, not the host's
        "spark_master": master,
        "versions": {
            "spark": pyspark.__version__,
            "spark_sql_kafka": spark_kafka.group(1) if spark_kafka else None,
            "sluice": sluice.__version__,
        },
        **extra,
    }


def broker() -> EmbeddedKafka:
    """The embedded broker of every benchmark, with one configuration (heap and collector), so no
    benchmark's figures differ from another's by how its broker was run."""
    return EmbeddedKafka(heap="1g", jvm_options=["-XX:+UseParallelGC"])


def session(
    app: str,
    *,
    master: str = "local[2]",
    driver_memory: str = "4g",
    spark_kafka: bool = False,
    benchkit: bool = False,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A quiet session with the Sluice jar; `spark_kafka` adds Spark's own Kafka connector,
    `benchkit` the benchmarks' JVM diagnostics (jvm/benchkit), `conf` more Spark settings."""
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.sql.shuffle.partitions", "2")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    jars: list[str] = []
    if spark_kafka:
        if not SPARK_KAFKA_JARS.exists():
            raise FileNotFoundError(f"{SPARK_KAFKA_JARS} is missing: run `make build`")
        jars.append(SPARK_KAFKA_JARS.read_text().strip())
    if benchkit:
        found = sorted(BENCHKIT_JARS.glob("sluice-benchkit_2.13-*.jar"))
        if not found:
            raise FileNotFoundError(f"no benchkit jar in {BENCHKIT_JARS}: run `make build`")
        jars.append(str(found[-1]))
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    spark = sluice.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_available_now(
    df: DataFrame,
    checkpoint: Path | None = None,
    sink: Callable[[DataStreamWriter], DataStreamWriter] = lambda w: w.format("noop"),
) -> tuple[float, list[dict]]:
    """Runs `df` with Trigger.AvailableNow into `sink` (the no-op sink unless given):
    (wall seconds, every batch's progress)."""
    # Spark's state-store maintenance may still write into the checkpoint as the query ends (a
    # group_join run failed here on a folder not yet empty): a leftover folder is no failed run
    with tempfile.TemporaryDirectory(prefix="bench-ckpt-", ignore_cleanup_errors=True) as scratch:
        location = checkpoint or Path(scratch)
        shutil.rmtree(location, ignore_errors=True)
        started = time.perf_counter()
        query = (
            sink(df.writeStream)
            .option("checkpointLocation", str(location))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return seconds, query.recentProgress


def driver_pid(spark: SparkSession) -> int:
    """The driver JVM's process id (in `local[...]` its tasks run there too)."""
    return int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds process `pid` (a JVM: the Spark driver, a broker) took so far,
    all its threads, from /proc: a profile's samples count Java code only, this counts the JIT,
    the collector and waits' wake-ups too (not child processes': the JVMs measured start none)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def durations_ms(progress: list[dict]) -> dict[str, int]:
    """Spark's `durationMs` of each phase of a trigger (planning, reading and writing the batch,
    the offset and commit logs), summed over the query's batches: where a query's time goes."""
    total: Counter[str] = Counter()
    for p in progress:
        total.update(p.get("durationMs", {}))
    return dict(total)


def tasks_run(spark: SparkSession, progress: list[dict]) -> int:
    """The Spark tasks a streaming query ran: every stage of the jobs of its run (Spark groups a
    query's jobs by its run id), its batches' and any listing job's."""
    tracker = spark.sparkContext.statusTracker()
    stages: set[int] = set()
    for run_id in {p["runId"] for p in progress}:
        for job in tracker.getJobIdsForGroup(run_id):
            info = tracker.getJobInfo(job)
            stages.update(info.stageIds if info else [])
    infos = [tracker.getStageInfo(stage) for stage in stages]
    return sum(info.numTasks for info in infos if info)


def rows_read(progress: list[dict]) -> int:
    return sum(p["numInputRows"] for p in progress)

"""flink_profile: where flink_anchor's raw read spends its time, Sluice's and Flink's, from a profile of each.

`flink_anchor` says how fast each side reads the topic of `kafka_throughput`; this says why. The
same topic (SLUICE_BENCH_KAFKA_RECORDS, default 5,000,000 records of 100 bytes in 8 partitions)
is read by Sluice (Trigger.AvailableNow into the no-op sink, in the Spark driver's JVM, which runs
the tasks in `local[2]`) and by Flink's `KafkaSource` (flink_anchor's raw job, in the anchor's
JVM), each side once untimed and then SLUICE_BENCH_PROFILE_RUNS (default 2) times under Java
Flight Recorder, sampled every SAMPLE_PERIOD_MS as kafka_profile samples (both JVMs run with
`-XX:+DebugNonSafepoints`, kafka_profile says why). Flink's recording is started and dumped by the
anchor itself (its `record` and `dump` commands). Flink runs twice: with the Kafka client its
connector brings (what flink_anchor measures), and on the same class path with the client Sluice
reads with (Spark's connector's) in its place, so that what of a difference is the client's and
what is the engines' can be told apart.

Each sample of a thread of the read (Spark's task threads; Flink's split fetcher threads, which
poll, and its task threads, which turn records into objects and pass them on) is put in the first
of its side's categories whose frames it holds. Besides the samples, each side records the CPU
time its JVM and the broker's JVM took over the profiled runs (from /proc) and the runs' wall
seconds: on a machine whose cores the two JVMs keep busy, a side reads faster by needing less CPU
per record, and the CPU per million records says where. The recordings are kept in
bench/scratch/flink_profile/.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from sluice.testing import EmbeddedKafka

from bench.common import broker, driver_pid, machine, session
from bench.flink_anchor import (
    FLINK_CLASSPATH,
    FLINK_CLASSPATH_SLUICE_CLIENT,
    PARALLELISM,
    FlinkAnchor,
    sluice_raw_seconds,
)
from bench.kafka_profile import (
    CATEGORIES,
    JVM_OPTIONS,
    OTHER,
    SAMPLE_PERIOD_MS,
    driver_recording,
    profiled,
    shares,
)

RESULT = Path(__file__).resolve().parent / "results" / "flink_profile.json"
SCRATCH = Path(__file__).resolve().parent / "scratch" / "flink_profile"
TOPIC = "profile_raw"
STACK_DEPTH = "-XX:FlightRecorderOptions:stackdepth=256"

#: Flink's threads of the read, by a frame each runs under: the split fetchers' and the tasks'
FLINK_THREADS = ("SplitFetcher.run", "taskmanager.Task.run")
#: Flink's categories, first match wins, as CATEGORIES for Sluice: the Kafka client's work first;
#: the operators chained after the source before the record building that calls them
FLINK_CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("Kafka client: poll and record parsing", ("KafkaConsumer.poll",)),
    (
        "Kafka client: positions and offset ranges asked besides polls",
        ("KafkaConsumer.position", "KafkaConsumer.seek", "KafkaConsumer.endOffsets"),
    ),
    ("the job's operators after the source (count, discard)", ("Counted.map", "DiscardingSink")),
    (
        "the source's record building (its emitter and deserializer: a record object per record)",
        ("KafkaRecordEmitter.emitRecord", "RecordDeserializer.deserialize"),
    ),
    ("the split fetcher around polls (batches handed to the task)", ("SplitFetcher.run",)),
    # a frame is matched by its class and method: the task's run, once the fetcher's are counted
    ("the source reader and the task's loop around it", ("Task.run",)),
]


def _flink(kafka: EmbeddedKafka, records: int, runs: int, classpath: Path, jfr: Path) -> dict:
    """Flink's side in an anchor JVM of `classpath`: profiled as `profiled` says, with the versions
    of Flink and of the Kafka client it read with."""
    flink = FlinkAnchor(jvm_options=[STACK_DEPTH, *JVM_OPTIONS.split()], classpath=classpath)
    try:

        def once() -> None:
            answer = flink.run("raw", kafka.bootstrap_servers, TOPIC)
            if answer["read"] != records:
                raise AssertionError(f"Flink read {answer['read']} records, expected {records}")

        side = profiled(
            once,
            runs,
            kafka,
            flink.process.pid,
            lambda: flink.run("record", SAMPLE_PERIOD_MS),
            lambda: flink.run("dump", jfr),
        )
        return {
            **side,
            **shares(jfr, FLINK_THREADS, FLINK_CATEGORIES),
            "flink": flink.version,
            "kafka_client": flink.kafka_client,
        }
    finally:
        flink.close()


def run() -> dict:
    records = int(os.environ.get("SLUICE_BENCH_KAFKA_RECORDS", "5000000"))
    runs = int(os.environ.get("SLUICE_BENCH_PROFILE_RUNS", "2"))
    SCRATCH.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    spark = session(
        "bench-flink-profile",
        conf={"spark.driver.extraJavaOptions": f"{STACK_DEPTH} {JVM_OPTIONS}"},
    )
    try:
        with broker() as kafka:
            kafka.create_topic(TOPIC, partitions=8)
            kafka.produce_generated(TOPIC, records, 100)

            def sluice_once() -> None:
                sluice_raw_seconds(spark, kafka, TOPIC, records)

            sluice = profiled(
                sluice_once, runs, kafka, driver_pid(spark), *driver_recording(spark, SCRATCH / "sluice.jfr")
            )
            sluice.update(shares(SCRATCH / "sluice.jfr"))
            sluice["kafka_client"] = str(
                spark._jvm.org.apache.kafka.common.utils.AppInfoParser.getVersion()  # type: ignore[attr-defined]
            )
            flink = _flink(kafka, records, runs, FLINK_CLASSPATH, SCRATCH / "flink.jfr")
            # the same Flink on the client Sluice reads with: what of a difference is the client's
            flink_sluice_client = _flink(
                kafka, records, runs, FLINK_CLASSPATH_SLUICE_CLIENT, SCRATCH / "flink-sluice-client.jfr"
            )
    finally:
        spark.stop()
    sides = {"sluice": sluice, "flink": flink, "flink_sluice_client": flink_sluice_client}
    result = {
        "benchmark": "flink_profile",
        "records": records,
        "profiled_runs": runs,
        "sample_period_ms": SAMPLE_PERIOD_MS,
        "jvm_options": JVM_OPTIONS,
        "categories": {
            "sluice": [name for name, _ in CATEGORIES] + [OTHER],
            "flink": [name for name, _ in FLINK_CATEGORIES] + [OTHER],
        },
        **sides,
        "machine": machine(
            "local[2]",
            flink_parallelism=PARALLELISM,
            load_average_1m=[load_before, os.getloadavg()[0]],
        ),
    }
    result["machine"]["versions"]["flink"] = flink["flink"]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    million = records * runs / 1e6
    for name, r in sides.items():
        cpu = ", ".join(f"{jvm} {s / million:.2f}" for jvm, s in r["cpu_seconds"].items())
        print(
            f"flink_profile {name} (Kafka client {r['kafka_client']}): "
            f"{r['wall_seconds'] / million:.2f} s per M records; CPU s per M: {cpu}"
        )
        for category, share in r["shares"].items():
            print(f"  {share:6.1%} {category}")
    return result

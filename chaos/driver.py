"""One driver process of a chaos scenario: `python -m chaos.driver <config.json>`.

Builds the scenario's query, always the same way, and runs it from the checkpoint: until it is
killed, or — with `drain` — until everything written is read, then writes what the sink holds to
`<out>.ids.json` (micro-batch: the file sink's committed files) and exits. A micro-batch run given
`drain_signal` does the same when that file appears (the same query drains: no restart). Prints `STARTED` once
the query runs, so that kills land in the query's life rather than in the JVM's start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import timedelta
from pathlib import Path

import sluice
from pyspark.sql import DataFrame, SparkSession
from sluice import FileSource, HybridSource, KafkaSource, OffsetsInitializer, WatermarkStrategy

from bench.common import ROOT, session
from chaos.scenarios import SCHEMA
from chaos.sinks import committed_epochs, epoch_ids

BATCH_RECORDS = 400  # per source and micro-batch: many batches, so kills land between and inside them
REALTIME_BATCH = "2 seconds"
CONTINUOUS_INTERVAL = "1 second"
# the test JVMs' options, read by the JVM from build/test-jvm-options; under `make test` also the
# class-data archive of build/class_archive.py
# (quoted: Spark splits the options at spaces outside quotes, and a checkout's path may hold one)
TEST_JVM_OPTIONS = f'"@{ROOT / "build" / "test-jvm-options"}" ' + os.environ.get(
    "SLUICE_TEST_JVM_OPTIONS", ""
)


def _kafka(config: dict, topic: str) -> KafkaSource:
    builder = KafkaSource.builder()
    # a secured listener's consumer properties (the SASL_SSL scenario, and the reduced run's
    # micro-batch query, one topic over SASL_SSL and one over mutual TLS: chaos.broker_faults)
    secured = config.get("kafka_properties_by_topic", {}).get(topic, config.get("kafka_properties", {}))
    for key, value in secured.items():
        builder = builder.property(key, value)
    return (
        builder.bootstrap_servers(config.get("bootstrap_by_topic", {}).get(topic, config["bootstrap"]))
        .topics(topic)
        .starting_offsets(OffsetsInitializer.earliest())
        .option("format", "json")
        .option("schema", SCHEMA)
        # a broker restart must not fail the query: readers wait for it (the cluster scenarios
        # wait less, so that the whole cluster down outlasts the readers' patience)
        .option("kafkaConsumer.pollTimeoutMs", config.get("poll_timeout_ms", 120_000))
        .option("failOnDataLoss", str(config.get("failOnDataLoss", True)).lower())
        .build()
    )


def source_frame(spark: SparkSession, config: dict) -> DataFrame:
    """The scenario's records: a files -> Kafka hybrid, one topic, or an aligned group of topics."""
    limit = (
        {"maxRecordsPerTrigger": config.get("batch_records", BATCH_RECORDS)}
        if config["mode"] == "micro"
        else {}
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps()
    if config["files"]:
        files = (
            FileSource.builder()
            .path(config["files"])
            .format("json")
            .schema(SCHEMA)
            .timestamp_column("ts")
            .build()
        )
        hybrid = (
            HybridSource.builder(files)
            # the switch's start is derived from the files' end state: it must survive any kill
            .add_source(_kafka(config, config["topics"][0]), start_at_previous_end_minus=0)
            .build()
        )
        return sluice.from_source(spark, hybrid, strategy, name="history", options=limit)
    topics = config["topics"]
    if len(topics) > 1:
        strategy = strategy.with_watermark_alignment("chaos", max_drift=timedelta(minutes=1))
    frames = [sluice.from_source(spark, _kafka(config, t), strategy, name=t, options=limit) for t in topics]
    df = frames[0]
    for other in frames[1:]:
        df = df.union(other)
    return df


def _ids(spark: SparkSession, config: dict) -> DataFrame:
    """The `id` column the sink receives; with `slow`, every id passes a UDF that takes a few
    milliseconds and a shuffle, so that tasks run long enough to be killed and a lost executor
    takes finished shuffle output with it (Spark re-runs the source's tasks that produced it)."""
    df = source_frame(spark, config).select("id")
    if not config.get("slow"):
        return df
    spark.udf.registerJavaFunction("slow_identity", "sluice.bench.SlowIdentity", "string")
    # slow on both sides of the shuffle: a map task's output waits for the reduce side long
    # enough that a kill can take it (Spark then re-runs the source task that produced it)
    return df.selectExpr("slow_identity(id) AS id").repartition(2, "id").selectExpr("slow_identity(id) AS id")


def _report_progress(query, path: Path) -> None:
    """What the sources counted as read after the last batch, for a checker that compares it with
    what was written (called every half second while the query runs)."""
    progress = query.lastProgress
    if progress is not None:
        read = sum(int(s["metrics"].get("recordsRead", "0")) for s in progress["sources"])
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"batch": progress["batchId"], "recordsRead": read}))
        tmp.replace(path)


def _write_sink_ids(spark: SparkSession, config: dict, query) -> None:
    """What the file sink committed, and the records the source still had to read."""
    ids = [r.id for r in spark.read.parquet(config["out"]).select("id").collect()]
    backlog = (
        sum(int(s["metrics"].get("backlogRecords", "0")) for s in query.lastProgress["sources"])
        if query.lastProgress
        else 0
    )
    Path(config["out"] + ".ids.json").write_text(json.dumps({"ids": ids, "backlog": backlog}))


def _run_micro(spark: SparkSession, config: dict) -> None:
    df = _ids(spark, config)
    writer = (
        df.writeStream.format("parquet")
        .option("path", config["out"])
        .option("checkpointLocation", config["checkpoint"])
    )
    if config["drain"]:
        query = writer.trigger(availableNow=True).start()
        print("STARTED", flush=True)
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        _write_sink_ids(spark, config, query)
        return
    query = writer.trigger(processingTime="200 milliseconds").start()
    print("STARTED", flush=True)
    progress = Path(config["progress"]) if config.get("progress") else None
    drain_now = Path(config["drain_signal"]) if config.get("drain_signal") else None
    # until killed; or, once the harness has written everything and asks (`drain_signal`), the
    # same query reads what is left and the driver reports the sink, as a draining start would
    while query.isActive:
        if progress is not None:
            _report_progress(query, progress)
        if drain_now is not None and drain_now.exists():
            query.processAllAvailable()
            query.stop()
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()))
            _write_sink_ids(spark, config, query)
            return
        time.sleep(0.5)
    query.awaitTermination()  # raises what ended it


def _run_long(spark: SparkSession, config: dict) -> None:
    """Real-time mode or continuous processing into the epoch sink (jvm/benchkit): runs until the
    committed epochs hold as many ids as were written (drain), or until killed."""
    # what a killed run wrote for epochs that never committed is rewritten by their replay, but
    # a replay with fewer tasks would leave some of it: start those epochs afresh
    committed = committed_epochs(config["checkpoint"])
    out = Path(config["out"])
    if out.is_dir():
        for epoch in out.iterdir():
            if epoch.name.isdigit() and int(epoch.name) not in committed:
                shutil.rmtree(epoch)
    jvm = spark._jvm
    df = source_frame(spark, config).select("id")
    triggers = jvm.org.apache.spark.sql.streaming.Trigger
    writer = (
        df._jdf.writeStream()
        .foreach(jvm.sluice.bench.EpochFileSink(config["out"]))
        .option("checkpointLocation", config["checkpoint"])
    )
    if config["mode"] == "continuous":
        writer = writer.trigger(triggers.Continuous(CONTINUOUS_INTERVAL))
    else:
        writer = writer.outputMode("update").trigger(triggers.RealTime(REALTIME_BATCH))
    query = writer.start()
    print("STARTED", flush=True)
    drain_now = Path(config["drain_signal"]) if config.get("drain_signal") else None
    if not config["drain"]:
        if drain_now is None:
            query.awaitTermination()  # until killed
            return
        # until killed, or until the harness asks the same query to drain: the signal holds how
        # many records were written in all
        while not drain_now.exists() or not drain_now.read_text().strip():
            if not query.isActive():
                query.awaitTermination()  # raises what ended it
            time.sleep(0.5)
        config = {**config, "expected": int(drain_now.read_text())}
    deadline = time.monotonic() + 300
    while len(epoch_ids(config)) < config["expected"]:
        if query.exception().isDefined():
            raise RuntimeError(query.exception().get().toString())
        if time.monotonic() > deadline:
            raise TimeoutError("the query did not deliver what was written within 5 minutes")
        time.sleep(0.5)
    query.stop()


def _log_at_info(spark: SparkSession, *loggers: str) -> None:
    """Sets the log4j loggers named to INFO in this driver (they log what the checker reads)."""
    jvm = spark._jvm
    for logger in loggers:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
            logger, jvm.org.apache.logging.log4j.Level.INFO
        )


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[1]).read_text())
    master = config.get("master", "local[2]")
    spark = session(
        f"chaos-{config['scenario']}",
        master=master,
        benchkit=config["mode"] != "micro" or bool(config.get("slow")),
        driver_memory="1g",
        conf={
            # a chaos run checks correctness under faults, not speed: its JVMs take the test JVMs'
            # options
            "spark.driver.extraJavaOptions": TEST_JVM_OPTIONS,
            "spark.executor.extraJavaOptions": TEST_JVM_OPTIONS,
            **({"spark.executor.memory": "512m"} if master.startswith("local-cluster") else {}),
        },
    )
    if master.startswith("local-cluster"):
        # tasks lost with their executor, and stages re-run for the shuffle output lost with it,
        # are logged by these two: the checker counts them
        _log_at_info(
            spark, "org.apache.spark.scheduler.TaskSetManager", "org.apache.spark.scheduler.DAGScheduler"
        )
    if config.get("log_kafka_config"):
        # Kafka's clients log their configuration (passwords as [hidden]) at INFO: the harness
        # checks that a secured scenario's log holds it and none of the cluster's passwords
        _log_at_info(
            spark,
            "org.apache.kafka.clients.consumer.ConsumerConfig",
            "org.apache.kafka.clients.admin.AdminClientConfig",
        )
    if config["mode"] == "realtime":
        spark.conf.set("spark.sql.streaming.realTimeMode.minBatchDuration", "1s")
    try:
        if config["mode"] == "micro":
            _run_micro(spark, config)
        else:
            _run_long(spark, config)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

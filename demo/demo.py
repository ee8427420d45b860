"""`make demo`: backfill from files, then live from Kafka, in one streaming query, exactly once.

The story: an archiver has written the history of a topic as JSON-lines files; Kafka still holds
the recent part of it and keeps receiving new events. One Sluice hybrid query reads the files,
then switches to Kafka at the files' last event time minus a safety margin. Events inside the
margin are read from both; the query drops those duplicates by id within Spark's watermark.
Watermark alignment keeps the three files (each a different stretch of time) and then the Kafka
partitions within a minute of event time of each other, so that watermark can stay five minutes
behind. The query is stopped and restarted from its checkpoint just after the switch, and at the
end every event must be in the sink exactly once.

Everything is local: Spark at local[2], a Kafka broker on 127.0.0.1, generated data.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import (
    FileSource,
    HybridSource,
    KafkaSource,
    OffsetsInitializer,
    WatermarkStrategy,
)
from sluice.testing import EmbeddedKafka

T0 = 1_700_000_000_000  # the first event's time (ms)
STEP_MS = 100  # one event every 100 ms of event time
ARCHIVED = 60_000  # events 0 .. 59,999 are in the files
KAFKA_FROM = 50_000  # Kafka still holds events from 50,000 on (retention)
LIVE_FIRST, LIVE_LATER = (
    80_000,
    100_000,
)  # Kafka holds events up to these, before and after the restart
MARGIN_MS = 60_000  # start Kafka one minute of event time before the files' end
SCHEMA = "id BIGINT, user STRING, amount DOUBLE, ts TIMESTAMP"
PARTITIONS = 4


def event(i: int) -> dict:
    ts = datetime.fromtimestamp((T0 + i * STEP_MS) / 1000, tz=UTC)
    return {
        "id": i,
        "user": f"u{i % 97}",
        "amount": round(i * 0.01, 2),
        "ts": ts.isoformat(),
    }


def write_history(directory: Path) -> None:
    directory.mkdir(parents=True)
    per_file = ARCHIVED // 3
    for f in range(3):
        with open(directory / f"events-{f}.json", "w", encoding="utf-8") as out:
            for i in range(f * per_file, (f + 1) * per_file):
                out.write(json.dumps(event(i)) + "\n")


def produce(kafka: EmbeddedKafka, first: int, last: int) -> None:
    kafka.produce(
        "events",
        (
            {
                "key": str(i),
                "value": json.dumps(event(i)),
                "partition": i % PARTITIONS,
                "timestamp": T0 + i * STEP_MS,
            }
            for i in range(first, last)
        ),
    )


class Progress:
    """Prints each batch once: rows, the active source, records read per source."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def show(self, query) -> None:
        for p in query.recentProgress:
            if p["batchId"] in self.seen or p["numInputRows"] == 0:
                continue
            self.seen.add(p["batchId"])
            m = p["sources"][0]["metrics"]
            name = ["files", "kafka"][int(m["activeSource"])]
            per_source = m["recordsPerSource"].split(",")
            print(
                f"  batch {p['batchId']:>3}: {p['numInputRows']:>6} rows   reading {name:<5}"
                f"   read from files {per_source[0]:>6}, from kafka {per_source[1]:>6}"
                f"   splits paused by alignment {m.get('watermark.pausedSplits', '0')}"
            )


def start(spark: SparkSession, hybrid, out: str, checkpoint: str, **trigger):
    # Without alignment the three files would be read side by side, each a different stretch of
    # event time, and Spark's watermark (max event time over all of them) would drop the older
    # files' records as late unless its delay spanned the whole history. Aligned, the files are
    # read in event-time order and the Kafka partitions side by side within a minute.
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        "demo", max_drift=timedelta(minutes=1)
    )
    events = sluice.from_source(
        spark,
        hybrid,
        strategy,
        name="history+live",
        options={"maxRecordsPerTrigger": 15_000},
    )
    deduplicated = events.withWatermark("event_time", "5 minutes").dropDuplicatesWithinWatermark(["id"])
    return (
        deduplicated.select("id", "user", "amount", "ts", "_split", "_position")
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )


PLOT = Path(__file__).resolve().parent.parent / "target" / "demo" / "backfill-then-live.png"


def show_status(query, history: Path) -> None:
    """Where each split ended (sluice.status) and how it got there (sluice.plot, saved as a PNG)."""
    table = sluice.status(query)
    # file splits are named by their files' URIs: the temporary directory says nothing here
    table["split"] = table["split"].str.replace(history.as_uri().replace("file://", "file:") + "/", "")
    print("Status at the end (sluice.status):")
    print(table[["member", "member_type", "split", "state", "event_time", "records", "backlog"]])
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    sluice.plot(query, path=PLOT)
    shown = PLOT.relative_to(Path.cwd()) if PLOT.is_relative_to(Path.cwd()) else PLOT
    print(
        f"Plot (sluice.plot): event time per split, the alignment limit, the split that set its minimum, the switch: {shown}"
    )


def main() -> int:
    log_config = Path(__file__).with_name("log4j2.properties").resolve()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dlog4j.configurationFile={log_config.as_uri()}",
        )
    )
    spark = sluice.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    sluice.watch(spark)  # keeps both runs' progress (one query id) for the status table and the plot
    with (
        tempfile.TemporaryDirectory(prefix="sluice-demo-") as work,
        EmbeddedKafka() as kafka,
    ):
        history = Path(work) / "history"
        out, checkpoint = str(Path(work) / "out"), str(Path(work) / "checkpoint")
        write_history(history)
        kafka.create_topic("events", partitions=PARTITIONS)
        produce(kafka, KAFKA_FROM, LIVE_FIRST)
        print(
            f"History: events 0..{ARCHIVED - 1} in 3 JSON files; Kafka ({kafka.bootstrap_servers}): "
            f"events {KAFKA_FROM}..{LIVE_FIRST - 1} in {PARTITIONS} partitions"
        )

        files = (
            FileSource.builder()
            .path(str(history))
            .format("json")
            .schema(SCHEMA)
            .timestamp_column("ts")
            .build()
        )
        live = (
            KafkaSource.builder()
            .bootstrap_servers(kafka.bootstrap_servers)
            .topics("events")
            .starting_offsets(OffsetsInitializer.earliest())
            .option("format", "json")
            .option("schema", SCHEMA)
            .build()
        )
        hybrid = HybridSource.builder(files).add_source(live, start_at_previous_end_minus=MARGIN_MS).build()

        print(
            f"Run 1: files, then Kafka from the files' end minus {MARGIN_MS // 1000} s; stopped after the switch"
        )
        progress = Progress()
        query = start(spark, hybrid, out, checkpoint, processingTime="1 second")
        switched_at = None
        while True:
            progress.show(query)
            kafka_batches = [
                p
                for p in query.recentProgress
                if p["numInputRows"] and p["sources"][0]["metrics"]["activeSource"] == "1"
            ]
            if kafka_batches and switched_at is None:
                switched_at = kafka_batches[0]["batchId"]
            if len(kafka_batches) >= 1:
                break
            if query.exception():
                raise RuntimeError(str(query.exception()))
            time.sleep(0.2)
        query.stop()
        progress.show(query)

        produce(kafka, LIVE_FIRST, LIVE_LATER)
        print(f"Live: events {LIVE_FIRST}..{LIVE_LATER - 1} arrive in Kafka")
        print("Run 2: restarted from the checkpoint, reading everything available")
        query = start(spark, hybrid, out, checkpoint, availableNow=True)
        query.awaitTermination()
        progress.show(query)
        if query.exception():
            raise RuntimeError(str(query.exception()))

        rows = spark.read.parquet(out).select("id", "_split").collect()
        got = Counter(r.id for r in rows)
        expected = set(range(LIVE_LATER))
        missing = len(expected - set(got))
        duplicated = sum(n - 1 for n in got.values() if n > 1)
        from_kafka = sum(1 for r in rows if not r._split.startswith("file:"))
        # measured: Kafka records the source read, counted back from the newest event in Kafka
        kafka_read = int(query.recentProgress[-1]["sources"][0]["metrics"]["recordsPerSource"].split(",")[1])
        first_kafka_event = LIVE_LATER - kafka_read
        print(
            f"Check: {len(rows)} events in the sink ({len(rows) - from_kafka} from files, {from_kafka} from Kafka); "
            f"Kafka was read from event {first_kafka_event}; {missing} missing, {duplicated} duplicated"
        )
        ok = missing == 0 and duplicated == 0 and set(got) == expected
        print("Exactly once: YES" if ok else "Exactly once: NO")
        show_status(query, history)
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""`make demo`: a streaming query over Sluice's generator, stopped and restarted, checked exactly once.

Everything runs locally: Spark at local[2], the Sluice jar from the installed package.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession

import sluice
from sluice import GeneratorSource

SPLITS = 4
RECORDS_PER_SPLIT = 25_000


def print_progress(query, seen: set[int]) -> None:
    for p in query.recentProgress:
        if p["batchId"] in seen or p["numInputRows"] == 0:
            continue
        seen.add(p["batchId"])
        metrics = p["sources"][0]["metrics"]
        print(
            f"  batch {p['batchId']:>3}: {p['numInputRows']:>6} rows"
            f"  read so far {metrics['recordsRead']:>7}  backlog {metrics['backlogRecords']:>7}"
        )


def run(spark: SparkSession, source, out: str, checkpoint: str, **trigger) -> None:
    df = sluice.from_source(spark, source, name="demo", options={"maxRecordsPerTrigger": 20_000})
    query = (
        df.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start()
    )
    return query


def main() -> int:
    log_config = Path(__file__).with_name("log4j2.properties").resolve()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-demo")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile={log_config.as_uri()}")
    )
    spark = sluice.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    source = GeneratorSource.builder().splits(SPLITS).records_per_split(RECORDS_PER_SPLIT).build()
    print(f"Source: {source}")
    with tempfile.TemporaryDirectory(prefix="sluice-demo-") as work:
        out, checkpoint = str(Path(work) / "out"), str(Path(work) / "checkpoint")
        seen: set[int] = set()

        print("Run 1: reading, then stopping the query mid-way")
        query = run(spark, source, out, checkpoint, processingTime="0 seconds")
        while len(seen) < 2:
            print_progress(query, seen)
            time.sleep(0.2)
        query.stop()
        print_progress(query, seen)

        print("Run 2: restarting from the checkpoint until everything is read")
        query = run(spark, source, out, checkpoint, availableNow=True)
        query.awaitTermination()
        print_progress(query, seen)

        rows = spark.read.parquet(out).select("id").collect()
        got = Counter(r.id for r in rows)
        expected = Counter(range(SPLITS * RECORDS_PER_SPLIT))
        duplicates = sum(n - 1 for n in got.values() if n > 1)
        missing = len(expected - got)
        print(f"Check: {len(rows)} rows written, {missing} missing, {duplicates} duplicated")
        ok = got == expected
        print("Exactly once: YES" if ok else "Exactly once: NO")
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

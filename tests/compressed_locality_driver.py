"""Run by test_compressed_locality.py in a process of its own (one SparkContext per process):
reads .json.gz files over several batches on two executor JVMs (local-cluster) and prints, as
JSON, what the test checks."""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

import sluice
from pyspark.sql import SparkSession
from sluice import FileSource

PER_FILE = 20000


def main(root: Path) -> None:
    builder = (
        SparkSession.builder.master("local-cluster[2,1,768]")
        .appName("sluice-compressed-locality")
        .config("spark.executor.memory", "512m")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
    )
    spark = sluice.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm  # noqa: SLF001
    deadline = time.monotonic() + 120
    while jvm.org.apache.spark.sluice.ExecutorLocations.sorted().size() < 2:
        if time.monotonic() > deadline:
            raise TimeoutError("the two executors did not register within 120 s")
        time.sleep(0.5)
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
        .option("checkpointLocation", str(root / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    error = query.exception()
    ids = sorted(r[0] for r in spark.table("locality").collect())
    print(
        json.dumps(
            {
                "error": None if error is None else str(error),
                "files": len(files),
                "ids_exact": ids == list(range(len(files) * PER_FILE)),
                "batches": sum(1 for p in query.recentProgress if p["numInputRows"] > 0),
                "opens": int(query.lastProgress["sources"][0]["metrics"].get("compressedFileOpens", "-1")),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

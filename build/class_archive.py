"""Writes the class-data archive the Spark drivers of `make test`'s Python and chaos lanes start from.

A Spark driver spends about half of its start and first queries loading and verifying Spark's
classes from pyspark's jars: measured here, a session, a grouped count and a short stream cost
11.4-13.3 s of JVM CPU without an archive and 6.3-6.6 s with one (three runs each). The lanes
start some 25 such drivers (the test session, every chaos driver and its restarts, the Connect
server, ...), on 2 cores that are busy for the whole run. So build/test runs this once, while sbt
compiles (it needs pyspark only; the lanes wait for it, and it is bounded by `timeout`): one driver does that kind of work and the JVM writes the classes it loaded at
its exit (`-XX:ArchiveClassesAtExit`, JDK 13+); build/test then names the archive in
SLUICE_TEST_JVM_OPTIONS, which tests/conftest.py and chaos/driver.py add to their drivers'
options. Only classes of the JVM's class path (pyspark's jars) are archived, never Sluice's (it
comes through `spark.jars`): the archive changes no class a test runs, only how fast Spark's load.
A JVM whose class path differs from the one archived ignores it (`-Xshare:auto`, the default).

Usage: python build/class_archive.py <archive path>; exit status 0 also when no archive could be
written (the lanes then run without one, as before), with the reason on stderr.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path


def main(target: Path) -> int:
    from pyspark.sql import SparkSession

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-class-archive")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config(
            "spark.driver.extraJavaOptions",
            # the test drivers' options (build/test-jvm-options, as tests/conftest.py), then the
            # archive's
            f'"@{Path(__file__).with_name("test-jvm-options")}" "-XX:ArchiveClassesAtExit={partial}"'
            " -Xlog:cds=off -Xlog:cds+dynamic=off",
        )
        .getOrCreate()
    )
    with tempfile.TemporaryDirectory() as work:
        # what a test does first: a batch query with a shuffle, Parquet out and in, a stateful
        # stream with a watermark and a checkpoint
        spark.range(0, 1000).selectExpr("id % 7 AS k", "id").groupBy("k").count().collect()
        spark.range(0, 100).write.parquet(f"{work}/p")
        spark.read.parquet(f"{work}/p").selectExpr("sum(id)").collect()
        query = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 100)
            .load()
            .withWatermark("timestamp", "1 second")
            .groupBy("value")
            .count()
            .writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", f"{work}/ckpt")
            .start()
        )
        query.processAllAvailable()
        query.stop()
    jvm = spark.sparkContext._jvm
    process = spark.sparkContext._gateway.proc  # the JVM, a child of this process (pyspark's launcher)
    assert jvm is not None
    spark.stop()
    # the JVM writes the archive as it exits: ended here, and waited for, so that the archive is
    # whole before it is named (a JVM still writing it would give the lanes a partial file)
    try:
        jvm.java.lang.System.exit(0)
    except Exception:  # the gateway's connection ends with the JVM
        pass
    try:
        process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        print("class_archive: the JVM did not end within 120 s", file=sys.stderr)
        process.kill()
        return 0
    if not partial.is_file() or partial.stat().st_size == 0:
        print("class_archive: the JVM wrote no archive", file=sys.stderr)
        return 0
    partial.replace(target)
    return 0


if __name__ == "__main__":
    archive = Path(sys.argv[1]).resolve()
    try:
        sys.exit(main(archive))
    except Exception as e:  # the lanes run without an archive, only slower
        print(f"class_archive: no archive written ({e!r})", file=sys.stderr)
        sys.exit(0)

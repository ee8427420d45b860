"""Shared fixtures: one local[2] SparkSession with the Sluice jar and one Kafka broker for the whole
run (each test module uses topics of its own names)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sluice
from distribution import ROOT, built_testfs_jar
from pyspark.sql import SparkSession
from sluice.testing import EmbeddedKafka

#: Spark's Kafka connector's jars (written by `make build`), for the tests that read with it, and the
#: sqlite JDBC driver with which iceberg-core's JdbcCatalog reads pyiceberg's SQL catalog
SPARK_KAFKA_JARS = (
    Path(__file__).resolve().parent.parent / "jvm" / "spark" / "target" / "spark-kafka-jars.txt"
)


#: the options of the test session's JVM (never of a benchmark's), read by the JVM from
#: build/test-jvm-options (which says why); under `make test` also the class-data archive
#: build/class_archive.py wrote (it says why)
# (quoted: Spark splits the options at spaces outside quotes, and a checkout's path may hold one)
TEST_JVM_OPTIONS = f'"@{ROOT / "build" / "test-jvm-options"}" ' + os.environ.get(
    "SLUICE_TEST_JVM_OPTIONS", ""
)


@contextmanager
def _appended_class_path(jar: Path) -> Iterator[None]:
    """`jar` at the end of the class path of a Spark JVM launched inside the block."""
    before = os.environ.get("SPARK_DIST_CLASSPATH")
    os.environ["SPARK_DIST_CLASSPATH"] = os.pathsep.join(p for p in (before, str(jar)) if p)
    try:
        yield
    finally:
        if before is None:
            del os.environ["SPARK_DIST_CLASSPATH"]
        else:
            os.environ["SPARK_DIST_CLASSPATH"] = before


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: end-to-end suites left out by `make test-fast`")


#: Suites that mostly wait (real-time batches and epochs, a broker's port, timeouts), run first:
#: in `make test` they wait while the other lanes keep both cores busy, and the lane ends with work
#: that has the cores to itself (the alphabetical order ended it with a minute of real-time waits
#: on a machine a third busy). As build.sbt's WaitingSuites for the Scala suites.
WAITING_SUITES = (
    "test_table_open_batches.py",
    "test_realtime.py",
    "test_embedded_kafka.py",
    "test_resolve.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in WAITING_SUITES)  # stable: each suite stays whole


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    os.environ.setdefault("PYSPARK_PYTHON", "python3")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-tests")
        # a managed table (toTable, saveAsTable) goes here, not into the checkout (Spark's default)
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        # as the Scala test JVMs (build/test-jvm-options says why): a test run is short queries
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
    )
    jars = []
    if SPARK_KAFKA_JARS.exists():  # Spark's own Kafka source, which some tests compare with, and sqlite-jdbc
        jars.append(SPARK_KAFKA_JARS.read_text().strip())
    # Hadoop's local file system without a process forked per chmod and readlink (jvm/testfs's
    # ForklessRawLocalFileSystem says why), appended to the JVM's class path. Not in spark.jars:
    # spark-submit opens local files through the configured file system before it loads spark.jars.
    # Not spark.driver.extraClassPath either: that goes first, and a class path that does not start
    # with the one archived leaves the class-data archive unused (checked with -Xshare:on).
    # SPARK_DIST_CLASSPATH is what spark-submit's launcher adds last; set for this launch only.
    builder = builder.config("spark.hadoop.fs.file.impl", "sluice.hadoop.ForklessLocalFileSystem").config(
        "spark.hadoop.fs.AbstractFileSystem.file.impl", "sluice.hadoop.ForklessLocalFs"
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    with _appended_class_path(built_testfs_jar()):
        session = sluice.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture()
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")


@pytest.fixture(scope="session")
def kafka() -> Iterator[EmbeddedKafka]:
    """One broker for every module: starting one costs seconds; topic names are unique per module."""
    with EmbeddedKafka() as broker:
        yield broker

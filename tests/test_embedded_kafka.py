"""The embedded Kafka broker other tests rely on must store exactly what it is given."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sluice.testing import EmbeddedKafka, KafkaBrokerError, find_broker_classpath


@pytest.fixture(scope="module")
def kafka() -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka() as broker:
        yield broker


def test_starts_quickly_on_localhost(kafka: EmbeddedKafka) -> None:
    assert kafka.startup_seconds is not None
    # a bound on a loaded machine, not a benchmark (make test's other lanes share 2 cores)
    assert kafka.startup_seconds < 60
    host, port = kafka.bootstrap_servers.split(":")
    assert host == "127.0.0.1"
    assert int(port) > 0


def test_round_trip_keeps_keys_values_headers_timestamps_and_partitions(
    kafka: EmbeddedKafka,
) -> None:
    kafka.create_topic("round-trip", partitions=3)
    records = [
        {
            "key": "k0",
            "value": "v0",
            "partition": 0,
            "timestamp": 1_700_000_000_000,
            "headers": [("h1", "x"), ("h2", None), ("h1", "again")],
        },
        {"key": "k1", "value": None, "partition": 1, "timestamp": 1_700_000_000_001},
        {
            "key": None,
            "value": "no key",
            "partition": 2,
            "timestamp": 1_700_000_000_002,
        },
        {
            "key": "k0",
            "value": "second",
            "partition": 0,
            "timestamp": 1_700_000_000_003,
        },
        {
            "key": b"\xff\x00",
            "value": "ünïcødé ✓",
            "partition": 2,
            "timestamp": 5,
            "headers": [("bin", b"\x80\x81"), ("", "")],
        },
    ]
    assert kafka.produce("round-trip", records) == 5

    assert kafka.consume("round-trip") == [
        {
            "key": "k0",
            "value": "v0",
            "partition": 0,
            "offset": 0,
            "timestamp": 1_700_000_000_000,
            "headers": [("h1", "x"), ("h2", None), ("h1", "again")],
        },
        {
            "key": "k0",
            "value": "second",
            "partition": 0,
            "offset": 1,
            "timestamp": 1_700_000_000_003,
            "headers": [],
        },
        {
            "key": "k1",
            "value": None,
            "partition": 1,
            "offset": 0,
            "timestamp": 1_700_000_000_001,
            "headers": [],
        },
        {
            "key": None,
            "value": "no key",
            "partition": 2,
            "offset": 0,
            "timestamp": 1_700_000_000_002,
            "headers": [],
        },
        {
            "key": b"\xff\x00",
            "value": "ünïcødé ✓",
            "partition": 2,
            "offset": 1,
            "timestamp": 5,
            "headers": [("bin", b"\x80\x81"), ("", "")],
        },
    ]
    assert kafka.end_offsets("round-trip") == {0: 2, 1: 1, 2: 2}
    assert kafka.start_offsets("round-trip") == {0: 0, 1: 0, 2: 0}


def test_tuples_go_to_the_partition_of_their_key(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("tuples", partitions=2)
    assert kafka.produce("tuples", [("same", str(i)) for i in range(20)]) == 20
    consumed = kafka.consume("tuples")
    assert [r["value"] for r in consumed] == [str(i) for i in range(20)]
    assert len({r["partition"] for r in consumed}) == 1
    assert all(r["key"] == "same" and r["timestamp"] > 0 for r in consumed)
    assert sum(kafka.end_offsets("tuples").values()) == 20


def test_many_records(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("many", partitions=4)
    count = 100_000
    produced = kafka.produce("many", ((f"k{i}", f"value {i}") for i in range(count)))
    assert produced == count
    assert sum(kafka.end_offsets("many").values()) == count
    fetches = kafka.request_counts().get("FetchConsumer", 0)
    consumed = kafka.consume("many")
    assert sorted(int(r["value"].split()[1]) for r in consumed) == list(range(count))
    # the broker counts the consumer's fetches (what the benchmarks' profiles compare)
    assert kafka.request_counts()["FetchConsumer"] > fetches


def test_topic_admin(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("admin", partitions=1, config={"retention.ms": 3_600_000})
    kafka.produce("admin", [{"value": str(i)} for i in range(10)])
    assert kafka.delete_records("admin", 0, 4) == 4
    assert kafka.start_offsets("admin") == {0: 4}
    assert [r["value"] for r in kafka.consume("admin")] == [str(i) for i in range(4, 10)]

    kafka.add_partitions("admin", 3)
    assert kafka.end_offsets("admin") == {0: 10, 1: 0, 2: 0}
    kafka.produce("admin", [{"value": "new", "partition": 2}])
    assert kafka.end_offsets("admin") == {0: 10, 1: 0, 2: 1}

    kafka.delete_topic("admin")
    with pytest.raises(KafkaBrokerError, match="UnknownTopicOrPartition"):
        kafka.end_offsets("admin")
    kafka.create_topic("admin", partitions=2)
    assert kafka.end_offsets("admin") == {0: 0, 1: 0}


def test_errors_name_the_problem(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("errors", partitions=1)
    with pytest.raises(KafkaBrokerError, match="TopicExists"):
        kafka.create_topic("errors", partitions=1)
    with pytest.raises(KafkaBrokerError, match="unknown topic config|InvalidConfig"):
        kafka.create_topic("errors2", partitions=1, config={"retention.msss": 1})
    with pytest.raises(ValueError, match="unknown record fields"):
        kafka.produce("errors", [{"valeu": "typo"}])
    with pytest.raises(KafkaBrokerError, match="UnknownTopicOrPartition"):
        kafka.produce("missing-topic", [("k", "v")])
    # The broker still answers after errors.
    assert kafka.produce("errors", [("k", "v")]) == 1


def test_commands_from_several_threads(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("threads", partitions=1)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(5):
                kafka.produce("threads", [(f"t{n}", str(i))])
                kafka.end_offsets("threads")
        except Exception as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert kafka.end_offsets("threads") == {0: 20}


def test_time_retention_acts_within_seconds(kafka: EmbeddedKafka) -> None:
    kafka.create_topic("retention", partitions=1, config={"retention.ms": 1000})
    kafka.produce("retention", [{"value": str(i), "timestamp": 1000} for i in range(5)])
    deadline = time.monotonic() + 20
    while kafka.start_offsets("retention") != {0: 5}:
        assert time.monotonic() < deadline, kafka.start_offsets("retention")
        time.sleep(0.2)
    assert kafka.end_offsets("retention") == {0: 5}
    assert kafka.consume("retention") == []


# Last: it stops the module's broker (the fixture's own stop() is then a no-op).
def test_stop(kafka: EmbeddedKafka) -> None:
    process = kafka._process
    kafka.stop()
    assert process is not None and process.returncode == 0
    assert not kafka.running
    kafka.stop()  # idempotent
    with pytest.raises(KafkaBrokerError, match="not running"):
        kafka.end_offsets("round-trip")


def test_missing_classpath_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SLUICE_BROKER_CLASSPATH", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sluice.testing.__file__", str(tmp_path / "x" / "__init__.py"))
    with pytest.raises(KafkaBrokerError, match="make build"):
        EmbeddedKafka().start()


def test_a_given_port_held_for_a_while_is_waited_for(tmp_path: Path) -> None:
    """A restart on the same port (the chaos run's) must not fail because a connection still
    holds the port for a moment: start() tries the port again until it is free."""
    import socket

    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    released = threading.Event()

    def release_later() -> None:
        # released once the broker has been refused the port at least once
        deadline = time.monotonic() + 60
        while not broker_tried.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        holder.close()
        released.set()

    broker_tried = threading.Event()
    broker = EmbeddedKafka(port=port, data_dir=tmp_path / "kafka")
    launch = broker._launch  # noqa: SLF001

    launches: list[str] = []

    def counted_launch(command: list[str]) -> str:
        launches.append("launch")
        try:
            return launch(command)
        finally:
            broker_tried.set()

    broker._launch = counted_launch  # type: ignore[method-assign]  # noqa: SLF001
    threading.Thread(target=release_later, daemon=True).start()
    try:
        broker.start()
        assert released.is_set(), "the broker started while the port was still held"
        assert len(launches) >= 2, "the port was never refused: the test proves nothing"
        assert broker.bootstrap_servers == f"127.0.0.1:{port}"
    finally:
        broker.stop()
        holder.close()


def test_the_broker_jars_weigh_what_the_docs_say() -> None:
    """python/README.md and sluice/testing/_resolve.py tell a wheel's user what the first start
    downloads: Kafka's broker jars (a count and megabytes) and the launcher the wheel carries."""
    root = Path(__file__).resolve().parent.parent
    readme = (root / "python" / "README.md").read_text(encoding="utf-8")
    resolve = (root / "python" / "sluice" / "testing" / "_resolve.py").read_text(encoding="utf-8")
    said_mb = int(re.search(r"Kafka's broker jars \(about (\d+) MB", readme).group(1))
    resolve_mb = int(re.search(r"jars \(about (\d+) MB", resolve).group(1))
    launcher_kb = int(re.search(r"about (\d+) KB\)", resolve).group(1))
    jars = [Path(p) for p in find_broker_classpath().split(os.pathsep) if p.endswith(".jar")]
    kafka_jars = [j for j in jars if not j.name.startswith("sluice-testkit_")]
    megabytes = sum(j.stat().st_size for j in kafka_jars) / 1e6
    assert said_mb == resolve_mb and abs(megabytes - said_mb) <= 0.05 * said_mb, megabytes
    # the launcher the wheel carries (make build copies it into the package)
    (launcher,) = (root / "python" / "sluice" / "jars").glob("sluice-testkit_*.jar")
    assert abs(launcher.stat().st_size / 1e3 - launcher_kb) <= 0.1 * launcher_kb, launcher.stat().st_size

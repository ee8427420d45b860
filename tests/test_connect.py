"""Sluice under Spark Connect, for real: a Connect server started as README.md shows, from the
installed PySpark with the Sluice jar and extensions (connect_server.py), and clients in their own
processes (no JVM) reading generator, Kafka and files→Kafka hybrid sources end to end, a batch read,
every watermark strategy with a fixed and an "auto" drift, and status and plot from the client. The
rows are compared with what was written."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from connect_server import ConnectServer, connect_server
from sluice.testing import EmbeddedKafka

CLIENT = Path(__file__).with_name("connect_client.py")
MINUTE = 60_000
START_MS = 1_700_000_000_000  # the event time connect_client.skewed() starts at
pytestmark = pytest.mark.slow
#: the password the Kafka client plants in its source's options (test_secrets_...)
PLANTED = "planted-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    with connect_server(tmp_path_factory.mktemp("connect")) as found:
        yield found


@pytest.fixture(scope="module")
def server(running: ConnectServer) -> str:
    return running.url


def client(scenario: str, tmp_path: Path, **arguments: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(CLIENT), scenario, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_generator_query_reads_every_record_through_the_server(server: str, tmp_path: Path) -> None:
    seen = client("generator", tmp_path, url=server)
    assert seen["remote"] is True
    assert seen["jvm"] is False, "the Connect client started a JVM"
    assert seen["ids"] == list(range(100))
    assert seen["splits"] == [0, 1]
    # the builder checks declared ranges itself, without a JVM ...
    assert seen["early"] == (
        "SluiceConfigError: GeneratorSource: invalid value '0' for option 'splits'; "
        "allowed: an integer from 1 to 100000."
    )
    # ... and the server checks the rest when the query starts, naming the option
    assert (
        seen["at_start"] is not None
        and "an unbounded generator needs option 'rowsPerSecond'" in seen["at_start"]
    )
    # both carry their error class: the early check's own, and the server's through Connect
    assert seen["early_class"] == ["SLUICE_INVALID_OPTION", "SluiceConfigError"]
    assert seen["at_start_class"] == ["SLUICE_INVALID_CONFIGURATION", "SluiceConfigError"]


def test_kafka_query_reads_what_the_broker_holds(
    running: ConnectServer, kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    server = running.url
    kafka.create_topic("connect-raw", partitions=3)
    records = [
        {
            "key": None if i % 7 == 0 else f"k{i}",
            "value": f"v{i}",
            "partition": i % 3,
            "timestamp": 1_700_000_000_000 + i,
        }
        for i in range(150)
    ]
    kafka.produce("connect-raw", records)
    seen = client(
        "kafka",
        tmp_path,
        url=server,
        bootstrap=kafka.bootstrap_servers,
        topic="connect-raw",
        password=PLANTED,
    )
    expected = sorted(
        (
            [r["key"], r["value"], "connect-raw", r["partition"], i // 3, r["timestamp"]]
            for i, r in enumerate(records)
        ),
        key=lambda record: (record[3], record[4]),  # partition, offset
    )
    assert seen["records"] == expected
    # sluice.read: the same records as a batch DataFrame, event_time (monotonous) the record's timestamp
    assert seen["batch"] == sorted([r[1], r[3], r[4], True] for r in expected)
    assert seen["batch_columns"][-1] == "event_time"
    assert seen["unbounded"] is not None and "give the Kafka source stopping offsets" in seen["unbounded"]
    assert seen["unbounded_class"] == ["SLUICE_INVALID_CONFIGURATION", "SluiceConfigError"]
    # the source's options held a planted password (kafka.sasl.jaas.config and a store password):
    # the server recorded the requests' plans (the statement of each in its event log and Connect
    # UI tab, the jobs' descriptions and call sites) without it
    events = wait_for_statement(running, "connect-raw")
    assert PLANTED not in events
    assert REDACTED in events
    # the UI: the Connect tab's statements, each SQL execution's details
    # (the request's plan as the call site) and the jobs
    statements = ui_page(running, "/connect/")
    assert "connect-raw" in statements and REDACTED in statements, statements[-2000:]
    pages = {
        "/connect/": statements,
        "/jobs/": ui_page(running, "/jobs/"),
        "/SQL/": ui_page(running, "/SQL/"),
    }
    (app,) = json.loads(ui_page(running, "/api/v1/applications"))
    executions = json.loads(ui_page(running, f"/api/v1/applications/{app['id']}/sql"))
    assert executions, "the server ran no SQL execution"
    for execution in executions:
        pages[f"/SQL/execution/?id={execution['id']}"] = ui_page(
            running, f"/SQL/execution/?id={execution['id']}"
        )
    assert [p for p, text in pages.items() if PLANTED in text] == []
    assert PLANTED not in running.log_text()


def test_hybrid_switches_from_files_to_kafka_at_a_declarative_start(
    server: str, kafka: EmbeddedKafka, tmp_path: Path
) -> None:
    base = 1_700_000_000  # seconds
    history = tmp_path / "history"  # the server runs on this machine: it reads the same path
    history.mkdir()
    (history / "a.json").write_text(
        "".join(f'{{"id": {i}, "ts": "{iso(base + i)}"}}\n' for i in range(100)), encoding="utf-8"
    )
    kafka.create_topic("connect-hybrid", partitions=2)
    kafka.produce(
        "connect-hybrid",
        [
            {
                "value": f'{{"id": {i}, "ts": "{iso(base + i)}"}}',
                "partition": i % 2,
                "timestamp": (base + i) * 1000,
            }
            for i in range(80, 150)
        ],
    )
    seen = client(
        "hybrid",
        tmp_path,
        url=server,
        bootstrap=kafka.bootstrap_servers,
        topic="connect-hybrid",
        history=str(history),
        margin_ms=5_000,
    )
    # files: 0..99; Kafka from the files' last event time (id 99) minus 5 s: ids 94..149
    assert seen["ids"] == sorted(list(range(100)) + list(range(94, 150)))
    assert seen["factory"] == (
        "SluiceConfigError: HybridSource: a Python factory needs an active classic SparkSession (the JVM "
        "calls it back over py4j); under Spark Connect use add_source(..., start_at_previous_end_minus=...)."
    )
    assert seen["negative_margin"] == (
        "SluiceConfigError: HybridSource: invalid value '-1' for option 'hybrid.1.startAtPreviousEndMinusMs'; "
        "allowed: an integer >= 0."
    )


def test_watermark_strategies_auto_drift_status_and_plot(server: str, tmp_path: Path) -> None:
    seen = client("event_time", tmp_path, url=server)
    generator_columns = ["id", "split", "timestamp", "payload"]
    assert seen["columns"] == {"none": generator_columns, "renamed": [*generator_columns, "et"]}
    assert seen["strategies_read"] == {
        "none": {"rows": 20, "et_is_timestamp": False},
        "renamed": {"rows": 20, "et_is_timestamp": True},
    }
    # "auto": the withWatermark delay (10 min) minus the out-of-orderness (1 min) minus 1 ms
    assert seen["auto_drift"] == [str(9 * MINUTE - 1)] and seen["auto_flag"] == ["true"]
    assert seen["dropped"] == 0
    # every 1-minute window counted exactly: one record per split and minute, split 0 an hour early
    expected: dict[int, int] = {}
    for split in range(4):
        for i in range(120):
            at = START_MS + (i - (60 if split == 0 else 0)) * MINUTE
            expected[at - at % MINUTE] = expected.get(at - at % MINUTE, 0) + 1
    assert seen["windows"] == [list(w) for w in sorted(expected.items())]
    # the splits stay within the drift plus the out-of-orderness of each other at every batch end
    assert seen["auto_spreads"] and max(seen["auto_spreads"]) <= 9 * MINUTE - 1 + MINUTE
    # a fixed drift; status and plot of that query: split 0 (half an hour behind) is never held
    # back, split 1 waits for it at the limit; both end read to their end
    assert seen["fixed_drift"] == [str(5 * MINUTE)] and seen["fixed_paused"] >= 1
    assert seen["fixed_rows"] == 40
    assert seen["first_states"] == ["reading", "paused"] and seen["paused_why"] == ["alignment limit"]
    assert set(seen["last_states"]) == {"finished"} and seen["status_columns"] is True
    # the plot (from recentProgress) draws the limit; no split but the minimum ends above it
    assert seen["limits_drawn"] >= 2 and seen["above_limit"] == [] and seen["png_bytes"] > 10_000
    assert seen["unwatched"] is not None and "maxDrift 'auto' is the withWatermark delay" in seen["unwatched"]


def iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


#: what Spark puts where `spark.sql.redaction.string.regex` matched (Utils.REDACTION_REPLACEMENT_TEXT)
REDACTED = "*********(redacted)"


def wait_for_statement(running: ConnectServer, text: str, timeout: float = 60) -> str:
    """The server's log and event log once its event log holds a Connect statement with `text`
    (the listener bus writes it a little after the request ran)."""
    deadline = time.monotonic() + timeout
    while True:
        found = running.log_text()
        if any(
            "SparkListenerConnectOperationStarted" in line and text in line for line in found.splitlines()
        ):
            return found
        assert time.monotonic() < deadline, f"no Connect statement with {text!r} in the event log"
        time.sleep(0.2)


def ui_page(running: ConnectServer, page: str) -> str:
    try:
        with urllib.request.urlopen(running.ui + page, timeout=30) as response:
            return response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as e:
        raise AssertionError(f"the server's UI answered {e.code} to {page}") from e

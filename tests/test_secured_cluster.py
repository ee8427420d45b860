"""Live alignment on a secured Spark cluster: two executor JVMs (local-cluster) with
`spark.authenticate=true` and `spark.network.crypto.enabled=true`. In real-time mode the group's
limit reaches the readers over Spark's RPC; with authentication and encryption on, a partition
far ahead in event time must still be paused, and resumed once the other catches up."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyspark
import pytest
from sluice.testing import EmbeddedKafka

sys.path.insert(0, str(Path(__file__).parent))
from secured_cluster_driver import BASE, HOURS, STEP, TOPIC, records  # noqa: E402

pytestmark = pytest.mark.slow


def test_real_time_alignment_pauses_and_resumes_on_an_authenticated_encrypted_cluster(
    tmp_path: Path, kafka: EmbeddedKafka
) -> None:
    kafka.create_topic(TOPIC, partitions=2)
    kafka.produce(TOPIC, records(1, BASE + HOURS, 0, 100) + records(0, BASE, 0, 100))
    # local-cluster starts executor JVMs through SPARK_HOME's scripts: pyspark's own
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    # stderr (Spark's log) into a file: a pipe nobody reads would block the driver once full
    log = tmp_path / "driver.log"
    with log.open("w") as err_file:
        driver = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("secured_cluster_driver.py")),
                str(tmp_path),
                kafka.bootstrap_servers,
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            start_new_session=True,  # its Spark JVM and executors go with it (killpg below)
        )
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(x) for x in driver.stdout or []], daemon=True)
        reader.start()

        def next_line() -> str:
            try:
                return lines.get(timeout=300)
            except queue.Empty:
                raise AssertionError(
                    f"the driver said nothing for 300 s:\n{log.read_text()[-4000:]}"
                ) from None

        try:
            assert driver.stdin is not None
            line = next_line()
            if line.strip() == "PAUSED":
                kafka.produce(TOPIC, records(0, BASE, HOURS // STEP, HOURS // STEP + 100))
                driver.stdin.write("go\n")
                driver.stdin.flush()
                line = next_line()
            driver.wait(timeout=300)
            reader.join(timeout=30)  # the driver ended: its output is all read
            out = "".join(lines.get() for _ in range(lines.qsize()))
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
    err = log.read_text()
    assert driver.returncode == 0, err[-4000:]
    result = json.loads((line + out).strip().splitlines()[-1])
    assert (result["authenticate"], result["crypto"], result["executors"]) == ("true", "true", 2), result
    # the pause happened (query progress says how long) and held the partition ahead back:
    # what a few polls of 10 records let through before the first limit arrived may pass
    assert result["paused_ms"] > 0, result
    assert result["ahead_while_paused"] <= 50, result
    # resumed: every record of both partitions, once
    assert result["rows_exact"], result

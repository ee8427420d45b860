"""What needs executors apart from the driver, on one local-cluster of two executor JVMs with
`spark.authenticate=true` and `spark.network.crypto.enabled=true` (tests/cluster_driver.py runs
the checks on it, one after the other, and prints a result per check): a compressed file is
decompressed from its start once over many batches, and live alignment pauses and resumes a
partition over authenticated, encrypted RPC, its Kafka source's options holding a planted password
that neither the executors' logs nor the driver's may show."""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pyspark
import pytest
from sluice.testing import EmbeddedKafka

sys.path.insert(0, str(Path(__file__).parent))
from cluster_driver import BASE, HOURS, STEP, TOPIC, records  # noqa: E402

pytestmark = pytest.mark.slow

#: the password the driver plants in its Kafka source's options (test_no_planted_password_...)
PLANTED = "planted-" + secrets.token_hex(8)
# how long the driver may stay silent: its cluster start and each check take well under it
SILENCE_S = 400


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, kafka: EmbeddedKafka) -> dict[str, dict]:
    """Each check's result by name, from one run of the driver."""
    root = tmp_path_factory.mktemp("cluster")
    kafka.create_topic(TOPIC, partitions=2)
    kafka.produce(TOPIC, records(1, BASE + HOURS, 0, 100) + records(0, BASE, 0, 100))
    # local-cluster starts executor JVMs through SPARK_HOME's scripts: pyspark's own
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    # stderr (Spark's log) into a file: a pipe nobody reads would block the driver once full
    log = root / "driver.log"
    found: dict[str, dict] = {}
    with log.open("w") as err_file:
        driver = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("cluster_driver.py")),
                str(root),
                kafka.bootstrap_servers,
                PLANTED,
            ],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            start_new_session=True,  # its Spark JVM and executors go with it (killpg below)
        )
        lines: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            for x in driver.stdout or []:
                lines.put(x)
            lines.put(None)  # the driver closed its output: it ended

        threading.Thread(target=read, daemon=True).start()
        try:
            assert driver.stdin is not None
            while (line := lines.get(timeout=SILENCE_S)) is not None:
                check, _, text = line.strip().partition(" ")
                if check == "PAUSED":
                    kafka.produce(TOPIC, records(0, BASE, HOURS // STEP, HOURS // STEP + 100))
                    driver.stdin.write("go\n")
                    driver.stdin.flush()
                elif check in ("LOCALITY", "ALIGNMENT", "APP"):
                    found[check] = json.loads(text)
            driver.wait(timeout=SILENCE_S)
        except queue.Empty:
            raise AssertionError(
                f"the driver said nothing for {SILENCE_S} s:\n{log.read_text()[-4000:]}"
            ) from None
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
    assert driver.returncode == 0, log.read_text()[-4000:]
    # the executors' logs: local-cluster's worker keeps them under SPARK_HOME/work (it takes no other
    # directory outside Spark's own tests), read here and removed
    app = Path(env["SPARK_HOME"]) / "work" / found["APP"]["id"]
    try:
        logs = {str(f.relative_to(app)): f.read_text(errors="replace") for f in sorted(app.glob("*/std*"))}
    finally:
        shutil.rmtree(app, ignore_errors=True)
    found["LOGS"] = {"executors": logs, "driver": log.read_text(errors="replace")}
    return found


def test_each_compressed_file_is_decompressed_from_its_start_once_on_a_cluster(
    results: dict[str, dict],
) -> None:
    result = results["LOCALITY"]
    assert result["error"] is None, result["error"]
    assert result["ids_exact"]
    assert result["batches"] >= 4
    # without the executor preference, ranges of a file land on either executor and each miss
    # decompresses the file from its start again
    assert result["opens"] == result["files"], result


def test_real_time_alignment_pauses_and_resumes_on_an_authenticated_encrypted_cluster(
    results: dict[str, dict],
) -> None:
    result = results["ALIGNMENT"]
    assert "error" not in result, result["error"]
    assert (result["authenticate"], result["crypto"], result["executors"]) == ("true", "true", 2), result
    # the pause happened (query progress says how long) and held the partition ahead back:
    # what a few polls of 10 records let through before the first limit arrived may pass
    assert result["paused_ms"] > 0, result
    assert result["ahead_while_paused"] <= 50, result
    # resumed: every record of both partitions, once
    assert result["rows_exact"], result


def test_no_planted_password_in_the_executors_or_the_drivers_log(results: dict[str, dict]) -> None:
    logs = results["LOGS"]
    executors = logs["executors"]
    # both executors logged (at Spark's default level, INFO), the consumers' configuration
    # included: Kafka lists every property it was given, password values as [hidden]
    assert {name.split("/")[0] for name in executors} >= {"0", "1"}, sorted(executors)
    assert any("sasl.jaas.config = [hidden]" in text for text in executors.values()), sorted(executors)
    assert [name for name, text in executors.items() if PLANTED in text] == []
    assert PLANTED not in logs["driver"]

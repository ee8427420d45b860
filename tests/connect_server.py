"""A Spark Connect server from the installed PySpark (its Connect jar ships in pyspark/jars), with
the Sluice jar and extensions on it, on a free loopback port: as the README tells users to start one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import sluice

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def command(port: int) -> list[str]:
    spark_home = Path(pyspark.__file__).parent
    return [
        str(spark_home / "bin" / "spark-submit"),
        "--class",
        SERVER_CLASS,
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--jars",
        sluice.jar_path(),
        "--conf",
        f"spark.sql.extensions={sluice.EXTENSIONS}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        "spark.ui.enabled=false",
    ]


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def connect_server(workdir: Path) -> Iterator[str]:
    """Runs a Connect server until the block ends; yields its ``sc://127.0.0.1:<port>`` address."""
    port = free_port()
    log = workdir / "connect-server.log"
    env = {**os.environ, "SPARK_HOME": str(Path(pyspark.__file__).parent)}
    with log.open("w", encoding="utf-8") as out:
        # spark-submit execs the JVM: the process started here is the server (its own group)
        server = subprocess.Popen(
            command(port), stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts(port):
            if server.poll() is not None:
                raise RuntimeError(f"the Connect server exited with {server.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Connect server did not listen within {START_TIMEOUT_S} s:\n{_tail(log)}"
                )
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)

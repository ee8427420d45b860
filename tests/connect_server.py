"""A Spark Connect server started exactly as README.md's "Spark Connect" section tells users to: its
``start-connect-server.sh`` command is read from the page and run with ``$SPARK_HOME`` the installed
PySpark (whose Connect jar ships in pyspark/jars) and ``python`` this one; the test adds only its
own settings (a free loopback port, ``local[2]``, memory), and stops it with the page's
``stop-connect-server.sh``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark

README = Path(__file__).resolve().parents[1] / "README.md"
START = "$SPARK_HOME/sbin/start-connect-server.sh"
STOP = "$SPARK_HOME/sbin/stop-connect-server.sh"
START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def readme_command(script: str) -> str:
    """The README's shell command that runs ``script``, its continued lines joined."""
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"^{re.escape(script)}(?:[^\n]*\\\n)*[^\n]*$", text, re.M)
    assert found, f"README.md no longer shows {script}: tests/connect_server.py starts the server as it does"
    return " ".join(line.rstrip("\\").strip() for line in found.group(0).splitlines())


def local_settings(port: int, ui_port: int, events: Path) -> list[str]:
    """What the test adds to the README's command: where to listen, a size for a shared machine, and
    the event log and UI on a free port, where the test looks for secrets (test_connect.py)."""
    return [
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        f"spark.ui.port={ui_port}",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        "--conf",
        "spark.eventLog.enabled=true",
        "--conf",
        "spark.eventLog.compress=false",  # text, read as the test reads it
        "--conf",
        f"spark.eventLog.dir={events.as_uri()}",
    ]


def _environment(workdir: Path, port: int) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        # the README's `python -c 'import sluice; ...'` is this Python, which has the package
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # the daemon's pid file and log here, not in /tmp and the installed PySpark
        "SPARK_PID_DIR": str(workdir),
        "SPARK_LOG_DIR": str(workdir),
        "SPARK_IDENT_STRING": f"sluice-test-{port}",
    }


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _tail(workdir: Path, lines: int = 60) -> str:
    logs = sorted(workdir.glob("*.out"))
    text = "".join(log.read_text(encoding="utf-8", errors="replace") for log in logs)
    return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class ConnectServer:
    """A running server: its address, its UI's and where it writes its log and event log."""

    url: str
    ui: str
    workdir: Path
    events: Path

    def log_text(self) -> str:
        """The server's log (spark-daemon.sh's ``*.out``) and its event log, as they are now."""
        files = [*self.workdir.glob("*.out"), *self.events.rglob("*")]
        return "".join(f.read_text(encoding="utf-8", errors="replace") for f in files if f.is_file())


@contextlib.contextmanager
def connect_server(workdir: Path) -> Iterator[ConnectServer]:
    """Runs a Connect server until the block ends; yields where it listens and writes."""
    port, ui_port = free_port(), free_port()
    env = _environment(workdir, port)
    events = workdir / "events"
    events.mkdir()
    start = f"{readme_command(START)} {shlex.join(local_settings(port, ui_port, events))}"

    def stop() -> None:
        subprocess.run(
            ["bash", "-c", readme_command(STOP)], cwd=workdir, env=env, capture_output=True, timeout=60
        )

    # the script starts the server in the background (spark-daemon.sh) and returns
    try:
        started = subprocess.run(
            ["bash", "-c", start], cwd=workdir, env=env, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        stop()  # it may have started the daemon before it hung
        raise
    pid_files = list(workdir.glob("*.pid"))
    if started.returncode != 0 or not pid_files:
        if pid_files:
            stop()
        raise RuntimeError(
            f"{START} failed ({started.returncode}): {started.stdout}{started.stderr}\n{_tail(workdir)}"
        )
    pid = int(pid_files[0].read_text().strip())
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts(port):
            if not _alive(pid):
                raise RuntimeError(f"the Connect server exited:\n{_tail(workdir)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Connect server did not listen within {START_TIMEOUT_S} s:\n{_tail(workdir)}"
                )
            time.sleep(0.5)
        yield ConnectServer(f"sc://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", workdir, events)
    finally:
        stop()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)

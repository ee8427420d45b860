"""sluice.configure on a builder whose Spark JVM already runs: fine with the jar, a clear refusal
without it (Spark adds spark.jars to the driver only when it launches the JVM)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import sluice
from pyspark.sql import SparkSession

# A notebook's situation: a session created before sluice was configured, then stopped.
SCRIPT = textwrap.dedent(
    """
    import json
    from pyspark.sql import SparkSession
    import sluice

    def attempt():
        try:
            sluice.configure(SparkSession.builder.master("local[1]"))
            return None
        except sluice.SluiceConfigError as error:
            return str(error)

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    running = attempt()
    spark.stop()
    stopped = attempt()
    print(json.dumps({"running": running, "stopped": stopped}))
    """
)


def test_a_running_session_with_the_jar_is_kept(spark: SparkSession) -> None:
    builder = sluice.configure(SparkSession.builder)
    assert builder._options["spark.jars"] == sluice.jar_path()  # noqa: SLF001
    assert builder.getOrCreate() is spark


def test_a_connect_builder_is_returned_unchanged() -> None:
    builder = SparkSession.builder.remote("sc://127.0.0.1:15002")
    assert sluice.configure(builder) is builder
    assert "spark.jars" not in builder._options  # noqa: SLF001
    assert "spark.sql.extensions" not in builder._options  # noqa: SLF001


def test_a_jvm_started_without_the_jar_is_refused_with_what_to_do(tmp_path: Path) -> None:
    script = tmp_path / "late_configure.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["running"] is not None, "configure accepted a running session without the jar"
    assert result["running"].startswith("A SparkSession is already running in this Python process without")
    assert result["stopped"] is not None, "configure accepted a stopped session's JVM without the jar"
    assert result["stopped"].startswith("A Spark JVM (from a stopped session) is still up")
    for message in (result["running"], result["stopped"]):
        assert "spark.stop() ends the session but not the JVM" in message
        assert "Restart the Python process" in message
        assert "sluice.configure(SparkSession.builder...) before the first getOrCreate()" in message
        assert f"--jars {sluice.jar_path()}" in message

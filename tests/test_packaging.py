"""The published artifact resolves with --packages, as a user without the pip package would use it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent(
    """
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]")
             .config("spark.jars.packages", "dev.sluice:sluice-spark_2.13:0.1.0")
             .config("spark.jars.ivy", {ivy!r})
             .config("spark.ui.enabled", "false")
             .getOrCreate())
    df = (spark.readStream.format("sluice").option("source", "generator")
          .option("splits", "2").option("recordsPerSplit", "5").load())
    q = df.writeStream.format("memory").queryName("packaged").trigger(availableNow=True).start()
    q.awaitTermination(120)
    print("ROWS", spark.table("packaged").count())
    spark.stop()
    """
)


@pytest.mark.slow
def test_packages_coordinate_resolves_from_the_local_maven_repository(
    tmp_path: Path,
) -> None:
    """`make build` runs publishM2; Spark's --packages looks in ~/.m2 before Maven Central."""
    script = tmp_path / "packaged.py"
    script.write_text(SCRIPT.format(ivy=str(tmp_path / "ivy")))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ROWS 10" in done.stdout

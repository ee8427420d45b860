"""The wheel `make dist` builds, installed as a user installs it: into a fresh virtual environment,
no editable install, no checkout on the path, run from a directory outside the checkout. The query
runs on the jar that came inside the wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest
from distribution import ROOT, VERSION, WHEEL, released

# pyspark and py4j as wheels, built once from pip's cache (PyPI the first time) and kept here, so
# that each run installs offline (`--no-index`) and in well under a minute.
WHEELHOUSE = ROOT / "target" / "wheelhouse"

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import sluice

    spark = sluice.configure(
        SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")).getOrCreate()
    source = sluice.GeneratorSource.builder().splits(2).records_per_split(50).build()
    q = (sluice.from_source(spark, source, name="numbers").writeStream.format("memory")
         .queryName("numbers").option("checkpointLocation", sys.argv[1])
         .trigger(availableNow=True).start())
    ended = q.awaitTermination(120)
    ids = sorted(r.id for r in spark.table("numbers").select("id").collect())
    print(json.dumps({"ended": ended, "ids": ids, "version": sluice.__version__,
                      "package": sluice.__file__, "jars": spark.conf.get("spark.jars")}))
    spark.stop()
    """
)


def wheelhouse() -> Path:
    pyspark = version("pyspark")
    if not list(WHEELHOUSE.glob(f"pyspark-{pyspark}-*.whl")):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--wheel-dir",
                str(WHEELHOUSE),
                f"pyspark=={pyspark}",
            ],
            check=True,
            timeout=900,
        )
    return WHEELHOUSE


def clean_env() -> dict[str, str]:
    drop = (
        "PYTHONPATH",
        "SLUICE_JAR",
        "SPARK_HOME",
        "VIRTUAL_ENV",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
    )
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.mark.slow
def test_installed_wheel_runs_a_query_with_the_jar_inside_it(tmp_path: Path) -> None:
    wheel = released(WHEEL)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheelhouse()),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    assert install.returncode == 0, install.stderr[-3000:]
    work = tmp_path / "work"  # outside the checkout: nothing of it is importable from here
    work.mkdir()
    (work / "query.py").write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [str(python), "query.py", str(work / "checkpoint")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=work,
        env={**clean_env(), "PYSPARK_PYTHON": str(python)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ended"] is True
    assert result["ids"] == list(range(100))
    assert result["version"] == VERSION
    site = venv.resolve()
    assert Path(result["package"]).resolve().is_relative_to(site), result["package"]
    jar = Path(result["jars"]).resolve()
    assert jar.is_relative_to(site) and jar.name == f"sluice-spark-assembly-{VERSION}.jar", result["jars"]

"""The wheel `make dist` builds, installed as a user installs it: into a fresh virtual environment,
no editable install, no checkout on the path or under the working directory. There the example
notebook runs on a Jupyter kernel of that environment, as a user runs it after
`pip install "spark-sluice[plot]" ipykernel`: its query on the jar inside the wheel, its Kafka
broker started from the launcher inside the wheel with Kafka's jars resolved from Maven Central
(the cache `--packages` uses; downloaded on the machine's first run only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import nbformat
import pytest
from distribution import ROOT, VERSION, WHEEL, released
from test_notebook import NOTEBOOK, check

# Every wheel the environment needs, built once from pip's cache (PyPI the first time) at the
# versions of the project's .venv and kept here, so that each run installs offline (`--no-index`).
WHEELHOUSE = ROOT / "target" / "wheelhouse"
# what a notebook user installs beside the wheel (its [plot] extra brings matplotlib and pandas)
NOTEBOOK_PACKAGES = ("pyspark", "matplotlib", "pandas", "ipykernel", "nbclient", "nbformat")

# Runs in the fresh environment: executes the notebook there, as `jupyter nbconvert --execute`
# would, with one cell added before the last (which stops Spark) that reports where things came from.
RUNNER = textwrap.dedent(
    """
    import json, sys
    import nbformat
    from nbclient import NotebookClient

    source, executed = sys.argv[1:3]
    notebook = nbformat.read(source, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    probe = nbformat.v4.new_code_cell(
        "import json, sluice, sluice.testing\\n"
        "print(json.dumps({'version': sluice.__version__, 'package': sluice.__file__,\\n"
        "    'jars': spark.conf.get('spark.jars'),\\n"
        "    'broker': sluice.testing.find_broker_classpath().split(':')[0]}))")
    notebook.cells.insert(len(notebook.cells) - 1, probe)
    # the JVM's own log lines go to the kernel's stderr, not into cells (they differ per machine)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": "."}},
                   extra_arguments=["--IPKernelApp.capture_fd_output=False"]).execute()
    nbformat.write(notebook, executed)
    """
)


def wheelhouse() -> Path:
    pins = sorted(f"{name}=={version(name)}" for name in NOTEBOOK_PACKAGES)
    built = WHEELHOUSE / "requirements.txt"
    if not built.is_file() or built.read_text(encoding="utf-8").split() != pins:
        # the project's .venv pins the dependencies of these too, so the wheels come from pip's cache
        frozen = subprocess.run(
            [sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        constraints = WHEELHOUSE / "constraints.txt"
        constraints.write_text(frozen, encoding="utf-8")
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(WHEELHOUSE)]
            + ["-c", str(constraints), *pins],
            check=True,
            timeout=900,
        )
        built.write_text("\n".join(pins) + "\n", encoding="utf-8")
    return WHEELHOUSE


def clean_env() -> dict[str, str]:
    drop = (
        "PYTHONPATH",
        "SLUICE_JAR",
        "SLUICE_BROKER_CLASSPATH",
        "SPARK_HOME",
        "VIRTUAL_ENV",
        "PYSPARK_PYTHON",
        "PYSPARK_DRIVER_PYTHON",
        "JUPYTER_PATH",
    )
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the checkout, whatever pytest's base temporary folder is (make test's chaos
    lane keeps its own under target/): from inside it, the checkout's broker classpath would be
    found by walking up from the working directory or the installed package."""
    with tempfile.TemporaryDirectory(prefix="sluice-wheel-") as folder:
        path = Path(folder).resolve()
        assert not path.is_relative_to(ROOT.resolve()), path
        yield path


@pytest.mark.slow
def test_the_notebook_runs_from_the_installed_wheel_alone(outside: Path) -> None:
    wheel = released(WHEEL)
    venv = outside / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # --no-compile: modules compile when imported; compiling all of pyspark's ahead costs a minute
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-compile", "--no-index"]
        + ["--find-links", str(wheelhouse()), f"{wheel}[plot]"]
        + [f"{name}=={version(name)}" for name in ("ipykernel", "nbclient", "nbformat")],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    assert install.returncode == 0, install.stderr[-3000:]
    work = outside / "work"  # outside the checkout: nothing of it is importable or found from here
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    (work / "run_notebook.py").write_text(RUNNER, encoding="utf-8")
    done = subprocess.run(
        [str(python), "run_notebook.py", NOTEBOOK.name, "executed.ipynb"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=work,
        env={**clean_env(), "PYSPARK_PYTHON": str(python)},
    )
    assert done.returncode == 0, done.stderr[-5000:]
    notebook = nbformat.read(work / "executed.ipynb", as_version=4)
    probe = notebook.cells.pop(len(notebook.cells) - 2)
    check(notebook)
    facts = json.loads(probe.outputs[-1]["text"].strip().splitlines()[-1])
    assert facts["version"] == VERSION
    site = venv.resolve()
    assert Path(facts["package"]).resolve().is_relative_to(site), facts["package"]
    jar = Path(facts["jars"]).resolve()
    assert jar.is_relative_to(site) and jar.name == f"sluice-spark-assembly-{VERSION}.jar", facts["jars"]
    # the broker started from the launcher inside the wheel, not from a checkout's classpath file
    launcher = Path(facts["broker"]).resolve()
    assert launcher.is_relative_to(site) and launcher.name == f"sluice-testkit_2.13-{VERSION}.jar", facts

"""The build's own logic, on scratch trees: which edits make `make build` run sbt again."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from distribution import ROOT, VERSION

#: a file under each kind of input, with the JVM outputs a change to it must rebuild (True) or not
INPUTS = {
    "jvm/core/src/main/scala/sluice/A.scala": True,
    "jvm/testfs/src/main/java/sluice/hadoop/B.java": True,
    "jvm/spark/src/main/resources/META-INF/services/C": True,
    "jvm/flinkanchor/src/main/java/sluice/flinkanchor/D.java": False,  # `make bench` builds it alone
    "jvm/core/src/test/scala/sluice/ATest.scala": False,
}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """The Makefile in a tree of stand-ins, every JVM output newer than every input."""
    shutil.copy(ROOT / "Makefile", tmp_path)
    shutil.copy(ROOT / "build.sbt", tmp_path)  # the version
    for name in [*INPUTS, "project/plugins.sbt", "LICENSE", "NOTICE", "python/requirements-dev.txt"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    outputs = make(tmp_path, "--eval", "outputs: ; @echo $(JVM_OUTPUTS)", "outputs").split()
    assert f"jvm/testfs/target/sluice-testfs-{VERSION}.jar" in outputs, outputs
    later = (tmp_path / "build.sbt").stat().st_mtime + 10
    for name in [".venv/.ok", *outputs]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (later, later))
    return tmp_path


def make(tree: Path, *args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(tree), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("changed", sorted(INPUTS))
def test_the_jvm_build_runs_again_after_a_change_to_what_its_jars_are_built_from(
    tree: Path, changed: str
) -> None:
    testfs = f"jvm/testfs/target/sluice-testfs-{VERSION}.jar"
    assert "build/sbt" not in make(tree, "-n", testfs), "the stand-in outputs are not up to date"
    # -W: as if `changed` had just been edited (no file's time is changed)
    rebuilt = "build/sbt 'all spark/assembly" in make(tree, "-n", "-W", changed, testfs)
    assert rebuilt == INPUTS[changed]

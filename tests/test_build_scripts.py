"""The build's own logic, on scratch trees: which edits make `make build` run sbt again, which testfs
jar the test session takes, and build/scala_log_summary.py's reading of what test JVMs wrote."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from distribution import ROOT, VERSION, built_testfs_jar

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
    for name in [".venv/.spark", ".venv/.ok", *outputs]:
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


def test_the_scala_summary_leaves_out_a_cpu_record_a_killed_jvm_did_not_finish(tmp_path: Path) -> None:
    """TestCpu appends a line a test; a JVM killed while writing one leaves it cut short. The summary
    still sums the whole lines, and says which line it left out."""
    records = tmp_path / "jvm" / "spark" / "target" / "test-cpu"
    records.mkdir(parents=True)
    (records / "101.tsv").write_text("3.50\t9.00\tsluice.ASuite\treads\n1.25\t2.00\tsluice.BSuite\tstops\n")
    (records / "202.tsv").write_text("2.00\t4.00\tsluice.ASuite\twrites\n0.7")  # cut in its CPU field
    (records / "303.tsv").write_text("9.00\t9.50\tsluice.BSuite\tsto")  # cut in the test's name
    log = tmp_path / "test-scala.log"
    log.write_text("[info] - reads (9 seconds, 2 milliseconds)\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "build" / "scala_log_summary.py"), str(log), "10"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    note = "left out 2 unfinished CPU records (a test JVM killed while writing?): "
    assert (
        note + "jvm/spark/target/test-cpu/202.tsv:2, jvm/spark/target/test-cpu/303.tsv:1" in lines
    ), done.stdout
    suites = lines.index("costliest Scala suites (CPU of their JVM; 7 s over all that record it):")
    assert lines[suites + 1 : suites + 3] == ["   5.50s sluice.ASuite", "   1.25s sluice.BSuite"]
    assert lines[suites + 3 :] == [
        "costliest Scala tests (CPU):",
        "   3.50s sluice.ASuite: reads",
        "   2.00s sluice.ASuite: writes",
        "   1.25s sluice.BSuite: stops",
    ]


def test_the_test_session_takes_the_testfs_jar_of_this_version_never_one_left_beside_it(
    tmp_path: Path,
) -> None:
    """sbt leaves the jar of an earlier version in jvm/testfs/target: the session takes the one of the
    checkout's version (a text sort would rank 0.9.0 after 0.10.0), and fails naming what it found
    when there is none."""
    for version in ("0.9.0", "0.10.0"):
        (tmp_path / f"sluice-testfs-{version}.jar").write_bytes(b"PK")
    assert built_testfs_jar(tmp_path, "0.10.0") == tmp_path / "sluice-testfs-0.10.0.jar"
    with pytest.raises(pytest.fail.Exception) as missing:
        built_testfs_jar(tmp_path, "0.11.0")
    assert str(missing.value) == (
        f"{tmp_path}/sluice-testfs-0.11.0.jar does not exist (only sluice-testfs-0.10.0.jar, "
        "sluice-testfs-0.9.0.jar, of other versions): run `make build`"
    )

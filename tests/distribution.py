"""What `make dist` releases and where it leaves it, for the packaging tests: the version build.sbt
declares (the one place it is written), the wheel, and the Maven repository folder; and the jar of
the forkless file system `make build` writes for the test session (tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def build_version() -> str:
    found = re.search(
        r'^ThisBuild / version := "([^"]+)"', (ROOT / "build.sbt").read_text(encoding="utf-8"), re.M
    )
    assert found, "build.sbt declares no `ThisBuild / version`"
    return found.group(1)


VERSION = build_version()
WHEEL = ROOT / "dist" / f"spark_sluice-{VERSION}-py3-none-any.whl"
ASSEMBLY_IN_WHEEL = f"sluice/jars/sluice-spark-assembly-{VERSION}.jar"
MAVEN_REPO = ROOT / "target" / "maven-repo"
ARTIFACT = "sluice-spark_2.13"
COORDINATE = f"dev.sluice:{ARTIFACT}:{VERSION}"
ARTIFACT_DIR = MAVEN_REPO / "dev" / "sluice" / ARTIFACT / VERSION


def released(path: Path) -> Path:
    """``path``, or a test failure saying how to make it."""
    if not path.is_file():
        pytest.fail(f"{path.relative_to(ROOT)} does not exist: run `make dist` (`make test` does)")
    return path


def built_testfs_jar(target: Path = ROOT / "jvm" / "testfs" / "target", version: str = VERSION) -> Path:
    """The forkless file system's jar of this checkout's version (build.sbt `testfs`), or a test
    failure saying how to make it: never a jar an earlier version left beside it."""
    jar = target / f"sluice-testfs-{version}.jar"
    if not jar.is_file():
        others = sorted(p.name for p in target.glob("sluice-testfs-*.jar"))
        pytest.fail(
            f"{jar} does not exist"
            + (f" (only {', '.join(others)}, of other versions)" if others else "")
            + ": run `make build`"
        )
    return jar

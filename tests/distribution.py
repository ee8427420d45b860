"""What `make dist` releases and where it leaves it, for the packaging tests: the version build.sbt
declares (the one place it is written), the wheel, and the Maven repository folder."""

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

"""A Scala user's project (examples/scala) builds against the published artifact
`dev.sluice:sluice-spark_2.13` from the repository folder `make dist` writes, and its application —
a files-then-Kafka hybrid aligned in event time, through the Scala builders — reads the rows it must
from the test broker. sbt is the project's own launcher (build/sbt) with its caches; its Maven twin
(pom.xml) is validated by Maven where Maven is installed (Spark 4.3.0 is not on the Maven Central
this machine reaches, so Maven cannot compile it here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest
from distribution import ARTIFACT_DIR, MAVEN_REPO, ROOT, VERSION, released
from sluice.testing import EmbeddedKafka

EXAMPLE = ROOT / "examples" / "scala"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def sbt_setting(name: str) -> str:
    found = re.search(rf'^(?:ThisBuild / )?{name} := "([^"]+)"', (EXAMPLE / "build.sbt").read_text(), re.M)
    assert found, f"examples/scala/build.sbt sets no {name}"
    return found.group(1)


def sbt_value(name: str) -> str:
    found = re.search(rf'^val {name} = "([^"]+)"', (EXAMPLE / "build.sbt").read_text(), re.M)
    assert found, f"examples/scala/build.sbt defines no {name}"
    return found.group(1)


def test_the_sbt_and_maven_projects_name_this_release() -> None:
    """The two builds a user would copy depend on the version this checkout releases, on the
    Scala and Spark it is built for, and on the folder `make dist` publishes to."""
    pom = ET.parse(EXAMPLE / "pom.xml").getroot()
    properties = {e.tag.split("}")[1]: e.text for e in pom.find("m:properties", POM_NS)}
    root_scala = re.search(r'scalaVersion := "([^"]+)"', (ROOT / "build.sbt").read_text()).group(1)
    assert sbt_value("sluiceVersion") == properties["sluice.version"] == VERSION
    assert sbt_setting("scalaVersion") == properties["scala.version"] == root_scala
    assert sbt_value("sparkVersion") == properties["spark.version"] == pyspark.__version__
    url = pom.findtext("m:repositories/m:repository/m:url", namespaces=POM_NS)
    assert url == "file://${project.basedir}/../../target/maven-repo"
    artifacts = {
        d.findtext("m:artifactId", namespaces=POM_NS): d.findtext("m:groupId", namespaces=POM_NS)
        for d in pom.iterfind(".//m:dependency", POM_NS)
    }
    assert artifacts.get("sluice-spark_${scala.binary.version}") == "dev.sluice", artifacts
    assert properties["scala.binary.version"] == ".".join(root_scala.split(".")[:2]) == "2.13"


@pytest.mark.skipif(shutil.which("mvn") is None, reason="Maven is not installed")
def test_maven_accepts_the_pom() -> None:
    # validate: the model and its plugins (the Scala plugin's POM fetched into ~/.m2 once)
    done = subprocess.run(
        ["mvn", "-q", "-B", "validate"], cwd=EXAMPLE, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


@pytest.mark.slow
def test_the_sbt_project_builds_and_reads_files_then_kafka(kafka: EmbeddedKafka, tmp_path: Path) -> None:
    released(ARTIFACT_DIR / f"sluice-spark_2.13-{VERSION}.pom")
    # build/sbt resolves from build/repositories only; the user's resolver (the dist folder) added
    central = (ROOT / "build" / "repositories").read_text(encoding="utf-8")
    repositories = tmp_path / "repositories"
    repositories.write_text(
        central.replace("  local\n", f"  local\n  sluice-dist: {MAVEN_REPO.as_uri()}/\n"), encoding="utf-8"
    )
    spark_jars = Path(pyspark.__file__).parent / "jars"
    done = subprocess.run(
        [str(ROOT / "build" / "sbt"), f"run {kafka.bootstrap_servers} scala-example {tmp_path / 'work'}"],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SLUICE_SBT_REPOSITORIES": str(repositories), "SPARK_JARS_DIR": str(spark_jars)},
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # sbt prints what the forked application printed, prefixed with [info]
    printed = dict(
        line.removeprefix("[info] ").split(": ", 1)
        for line in done.stdout.splitlines()
        if line.startswith(("[info] rows: ", "[info] paused by alignment: "))
    )
    # files: ids 0..119; Kafka from the files' last event time (id 119) minus 5 minutes: 114..179
    assert [int(i) for i in printed["rows"].split(",")] == sorted([*range(120), *range(114, 180)])
    assert printed["paused by alignment"] == "true"  # the second file waited for the first

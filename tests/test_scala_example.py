"""A Scala user's project (examples/scala) builds against the published artifact
`dev.sluice:sluice-spark_2.13` from the repository folder `make dist` writes, and its application —
a files-then-Kafka hybrid aligned in event time, through the Scala builders — reads the rows it must
from the test broker. sbt builds it as the build of its own it is, loaded beside Sluice's so that
`make test` starts sbt once (build.sbt `writeScalaExampleRun`, which also writes how its `sbt run`
starts it, or why it did not build); the test runs that. Its Maven twin (pom.xml) is validated by
Maven where Maven is installed (Spark 4.3.0 is not on the Maven Central this machine reaches, so
Maven cannot compile it here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyspark
import pytest
from distribution import ARTIFACT, ARTIFACT_DIR, ROOT, VERSION, released
from sluice.testing import EmbeddedKafka

EXAMPLE = ROOT / "examples" / "scala"
#: the release the example is built against (make dist writes it)
RELEASED_JAR = ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.jar"
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


def example_run() -> dict:
    """How sbt starts the example (build.sbt `writeScalaExampleRun`), or a test failure: saying how
    to write it where it is missing or older than the example's sources or the release, and why
    the example did not build where sbt said so."""
    run = ROOT / "target" / "scala-example-run.json"
    how = "run `make test-python` (`make test` writes it too)"
    if not run.is_file():
        pytest.fail(f"{run.relative_to(ROOT)} does not exist: {how}")
    written = json.loads(run.read_text(encoding="utf-8"))
    if "error" in written:
        pytest.fail(written["error"])
    jar = released(RELEASED_JAR)
    inputs = [jar, EXAMPLE / "build.sbt", *(p for p in (EXAMPLE / "src").rglob("*") if p.is_file())]
    newer = [str(p.relative_to(ROOT)) for p in inputs if p.stat().st_mtime > run.stat().st_mtime]
    if newer:
        pytest.fail(f"{run.relative_to(ROOT)} is older than {', '.join(newer)}: {how}")
    return written


@pytest.mark.slow
def test_the_sbt_project_builds_and_reads_files_then_kafka(kafka: EmbeddedKafka, tmp_path: Path) -> None:
    released(RELEASED_JAR.with_suffix(".pom"))
    run = example_run()
    # built against the release, not against this checkout's classes
    assert str(RELEASED_JAR.resolve()) in [str(Path(p).resolve()) for p in run["classpath"]], run["classpath"]
    # as sbt forks it (run / fork), in the example's folder
    done = subprocess.run(
        [
            "java",
            *run["javaOptions"],
            "-cp",
            os.pathsep.join(run["classpath"]),
            run["main"],
            kafka.bootstrap_servers,
            "scala-example",
            str(tmp_path / "work"),
        ],
        cwd=run["workingDirectory"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    printed = dict(
        line.split(": ", 1)
        for line in done.stdout.splitlines()
        if line.startswith(("rows: ", "paused by alignment: "))
    )
    # files: ids 0..119; Kafka from the files' last event time (id 119) minus 5 minutes: 114..179
    assert [int(i) for i in printed["rows"].split(",")] == sorted([*range(120), *range(114, 180)])
    assert printed["paused by alignment"] == "true"  # the second file waited for the first

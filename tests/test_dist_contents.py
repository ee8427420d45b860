"""What `make dist` releases, read from the files themselves: the wheel and the Maven artifacts."""

from __future__ import annotations

import hashlib
import io
import re
import xml.etree.ElementTree as ET
import zipfile
from email.parser import Parser

import sluice
from distribution import (
    ARTIFACT,
    ARTIFACT_DIR,
    ASSEMBLY_IN_WHEEL,
    ROOT,
    VERSION,
    WHEEL,
    released,
)

DIST_INFO = f"spark_sluice-{VERSION}.dist-info"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# Class packages a bundled library brings into the self-contained jar, and its coordinate. A new
# dependency in the jar fails the NOTICE test until it is named here and in NOTICE.
BUNDLED = {
    "org/apache/kafka/": "org.apache.kafka:kafka-clients",
    "org/apache/iceberg/common/": "org.apache.iceberg:iceberg-common",
    "org/apache/iceberg/relocated/": "org.apache.iceberg:iceberg-bundled-guava",
    "org/apache/iceberg/expressions/": "org.apache.iceberg:iceberg-api",
    "org/apache/iceberg/": "org.apache.iceberg:iceberg-core",
}
# Bundled libraries whose jars carry no LICENSE/NOTICE file of their own (Delta's: NOTICE quotes its
# repository's), with the version NOTICE names them at. delta-kernel-api's classes include the
# Jackson Delta relocated into io/delta/kernel/shaded/ (NOTICE names it).
BUNDLED_WITHOUT_LEGAL_FILES = {
    "io/delta/kernel/defaults/": "io.delta:delta-kernel-defaults:4.4.0",
    "io/delta/kernel/": "io.delta:delta-kernel-api:4.4.0",
    "io/delta/storage/": "io.delta:delta-storage:4.4.0",
    # one class of delta-storage's, in delta-spark's package (Spark 4.3 has no delta-spark)
    "org/apache/spark/sql/delta/coordinatedcommits/": "io.delta:delta-storage:4.4.0",
}
# Libraries bundled relocated under sluice/shaded/ (build.sbt shade rules): no LICENSE_/NOTICE_ file
# of their own in the jar (theirs is the Apache text, kept under META-INF, which Sluice's replaces),
# so NOTICE must name them with their relocated package.
SHADED = {
    "sluice/shaded/com/github/benmanes/caffeine/": "com.github.ben-manes.caffeine:caffeine",
    "sluice/shaded/io/airlift/compress/": "io.airlift:aircompressor",
}
SLUICE_PACKAGES = ("sluice/", "org/apache/spark/sluice/", "org/apache/spark/sql/sluice/")


def wheel_metadata() -> dict[str, list[str]]:
    with zipfile.ZipFile(released(WHEEL)) as wheel:
        message = Parser().parsestr(wheel.read(f"{DIST_INFO}/METADATA").decode("utf-8"))
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return fields


def test_the_version_is_build_sbts_everywhere() -> None:
    assert sluice.__version__ == VERSION
    assert wheel_metadata()["Version"] == [VERSION]
    assert (ROOT / "python" / "VERSION").read_text(encoding="utf-8").strip() == VERSION
    assert released(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.pom")


def test_wheel_metadata_declares_pyspark_range_and_license() -> None:
    fields = wheel_metadata()
    assert fields["Name"] == ["spark-sluice"]
    assert fields["Requires-Dist"] == [
        "pyspark<4.4,>=4.3",
        'pyspark[connect]<4.4,>=4.3; extra == "connect"',
        'matplotlib>=3.8; extra == "plot"',
        'pandas>=2.0; extra == "plot"',
    ]
    assert fields["Provides-Extra"] == ["connect", "plot"]
    assert fields["License-Expression"] == ["Apache-2.0"]
    assert sorted(fields["License-File"]) == ["LICENSE", "NOTICE"]


def test_wheel_carries_the_jar_types_and_legal_files() -> None:
    with zipfile.ZipFile(released(WHEEL)) as wheel:
        names = set(wheel.namelist())
        assert ASSEMBLY_IN_WHEEL in names
        # the self-contained jar, and the embedded broker's launcher with the POM that names
        # Kafka's broker jars (resolved from Maven Central when sluice.testing first starts one)
        launcher = f"sluice/jars/sluice-testkit_2.13-{VERSION}"
        assert sorted(n for n in names if n.endswith((".jar", ".pom"))) == sorted(
            [ASSEMBLY_IN_WHEEL, f"{launcher}.jar", f"{launcher}.pom"]
        )
        pom = ET.fromstring(wheel.read(f"{launcher}.pom"))
        assert {
            d.findtext("m:artifactId", namespaces=POM_NS)
            for d in pom.findall("m:dependencies/m:dependency", POM_NS)
        } == {"kafka_2.13", "slf4j-reload4j", "scala-library", "scala-reflect"}
        assert (
            "sluice/testkit/KafkaBrokerMain.class"
            in zipfile.ZipFile(io.BytesIO(wheel.read(f"{launcher}.jar"))).namelist()
        )
        assert "sluice/py.typed" in names
        assert "sluice/_options.json" in names
        assert "sluice/_metrics.json" in names  # status and plot read metrics by its types
        assert "sluice/_errors.json" in names  # errors read their classes' SQLSTATE and templates
        for legal in ("LICENSE", "NOTICE"):
            shipped = wheel.read(f"{DIST_INFO}/licenses/{legal}")
            assert shipped == (ROOT / legal).read_bytes()
        jar = zipfile.ZipFile(io.BytesIO(wheel.read(ASSEMBLY_IN_WHEEL)))
    jar_names = set(jar.namelist())
    assert "sluice/spark/SluiceProvider.class" in jar_names
    assert "sluice/spark/SluiceExtensions.class" in jar_names
    assert jar.read("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister").strip() == (
        b"sluice.spark.SluiceProvider"
    )
    assert jar.read("META-INF/LICENSE") == (ROOT / "LICENSE").read_bytes()
    assert jar.read("META-INF/NOTICE") == (ROOT / "NOTICE").read_bytes()


def test_license_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_notice_names_every_library_the_jar_bundles() -> None:
    with zipfile.ZipFile(released(WHEEL)) as wheel:
        jar = zipfile.ZipFile(io.BytesIO(wheel.read(ASSEMBLY_IN_WHEEL)))
    notice = (ROOT / "NOTICE").read_text(encoding="utf-8")
    classes = [n for n in jar.namelist() if n.endswith(".class")]
    foreign = [n for n in classes if not n.startswith(SLUICE_PACKAGES)]
    listed = (*BUNDLED, *BUNDLED_WITHOUT_LEGAL_FILES)
    unnamed = sorted({n.rsplit("/", 1)[0] for n in foreign if not n.startswith(listed)})
    assert not unnamed, f"classes of an unlisted library in the jar: {unnamed[:5]}"
    assert all(any(n.startswith(p) for n in foreign) for p in listed), "a listed library is gone"
    for coordinate in BUNDLED_WITHOUT_LEGAL_FILES.values():
        assert coordinate in notice, f"NOTICE does not name {coordinate}"
    assert "io.delta.kernel.shaded.com.fasterxml.jackson" in notice
    shaded = sorted({n.split("/")[2] for n in classes if n.startswith("sluice/shaded/")})
    assert shaded == sorted({p.split("/")[2] for p in SHADED}), f"unlisted shaded packages: {shaded}"
    for package, coordinate in SHADED.items():
        assert any(n.startswith(package) for n in classes), f"{coordinate} is no longer bundled"
        assert coordinate in notice and package.rstrip("/").replace("/", ".") in notice
    # sbt-assembly keeps each bundled jar's LICENSE/NOTICE as LICENSE_<name>-<version>
    versions = {
        m.group(1): m.group(2)
        for n in jar.namelist()
        if (m := re.fullmatch(r"(?:LICENSE|NOTICE)_(.+)-([\d.]+)", n))
    }
    assert set(versions) == {c.split(":")[1] for c in BUNDLED.values()}
    for coordinate in BUNDLED.values():
        artifact = coordinate.split(":")[1]
        assert f"{coordinate}:{versions[artifact]}" in notice
        bundled_notice = jar.read(f"NOTICE_{artifact}-{versions[artifact]}").decode("utf-8")
        assert bundled_notice.strip() in notice, f"NOTICE does not reproduce {artifact}'s NOTICE"


def test_pom_has_what_a_public_repository_requires() -> None:
    pom = ET.parse(released(ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}.pom")).getroot()

    def text(path: str) -> str:
        found = pom.find(path, POM_NS)
        assert found is not None and (found.text or "").strip(), f"POM has no {path}"
        return found.text.strip()

    assert (text("m:groupId"), text("m:artifactId"), text("m:version")) == ("dev.sluice", ARTIFACT, VERSION)
    assert text("m:name") and text("m:description") and text("m:url").startswith("https://")
    assert text("m:licenses/m:license/m:name") == "Apache-2.0"
    assert text("m:licenses/m:license/m:url").startswith("https://www.apache.org/licenses/LICENSE-2.0")
    assert text("m:scm/m:url").startswith("https://")
    assert text("m:scm/m:connection").startswith("scm:git:")
    assert text("m:developers/m:developer/m:name")
    scopes = {
        d.findtext("m:artifactId", namespaces=POM_NS): d.findtext("m:scope", "compile", POM_NS)
        for d in pom.findall("m:dependencies/m:dependency", POM_NS)
    }
    # Spark brings Scala and itself; kafka-clients, iceberg-core and Delta Kernel are what a
    # --packages user downloads
    assert scopes["spark-sql_2.13"] == "provided"
    assert scopes["scala-library"] == "provided"
    assert sorted(a for a, s in scopes.items() if s == "compile") == [
        "delta-kernel-api",
        "delta-kernel-defaults",
        "iceberg-core",
        "kafka-clients",
    ]
    # iceberg-core without what Spark 4.3 carries (another Avro or Jackson would meet Spark's)
    iceberg = next(
        d
        for d in pom.findall("m:dependencies/m:dependency", POM_NS)
        if d.findtext("m:artifactId", namespaces=POM_NS) == "iceberg-core"
    )
    excluded = {
        e.findtext("m:artifactId", namespaces=POM_NS)
        for e in iceberg.findall("m:exclusions/m:exclusion", POM_NS)
    }
    assert {"avro", "jackson-core", "jackson-databind", "RoaringBitmap"} <= excluded
    # Delta Kernel without Spark's Hadoop and Parquet, the Jackson it carries relocated, nor the
    # Unity Catalog client
    kernel = next(
        d
        for d in pom.findall("m:dependencies/m:dependency", POM_NS)
        if d.findtext("m:artifactId", namespaces=POM_NS) == "delta-kernel-defaults"
    )
    kernel_excluded = {
        e.findtext("m:artifactId", namespaces=POM_NS)
        for e in kernel.findall("m:exclusions/m:exclusion", POM_NS)
    }
    assert {
        "hadoop-client-runtime",
        "parquet-hadoop",
        "jackson-databind",
        "unitycatalog-client",
    } <= kernel_excluded


def test_maven_artifacts_include_sources_javadoc_and_checksums() -> None:
    base = ARTIFACT_DIR / f"{ARTIFACT}-{VERSION}"
    with zipfile.ZipFile(released(base.with_name(base.name + ".jar"))) as jar:
        assert "sluice/spark/SluiceProvider.class" in jar.namelist()
        # the one artifact carries the internal subprojects' classes, but no third-party class
        assert any(n.startswith("sluice/connector/kafka/") for n in jar.namelist())
        assert not any(n.startswith("org/apache/kafka/") for n in jar.namelist())
    with zipfile.ZipFile(released(base.with_name(base.name + "-sources.jar"))) as sources:
        assert "sluice/Sluice.scala" in sources.namelist()
        assert any(n.startswith("sluice/connector/kafka/") for n in sources.namelist())
    with zipfile.ZipFile(released(base.with_name(base.name + "-javadoc.jar"))) as docs:
        assert "index.html" in docs.namelist()
        assert any(n.startswith("sluice/connector/kafka/") for n in docs.namelist())
    for suffix in (".pom", ".jar", "-sources.jar", "-javadoc.jar"):
        artifact = base.with_name(base.name + suffix)
        sha1 = released(artifact.with_name(artifact.name + ".sha1")).read_text(encoding="utf-8").split()[0]
        assert sha1 == hashlib.sha1(artifact.read_bytes()).hexdigest(), artifact.name


def test_readme_install_commands_name_the_built_version() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # concrete versions only (a `<version>` placeholder is fine)
    patterns = (
        r"spark_sluice-(\d[\w.]*)-py3",
        r"sluice-spark_2\.13:(\d[\w.]*)",
        r"sluice-spark-assembly-(\d[\w.]*)\.jar",
    )
    named = {m for p in patterns for m in re.findall(p, readme)}
    assert named == {VERSION}, f"README names versions {sorted(named)}, build.sbt {VERSION}"

"""How an installed wheel's `sluice.testing` resolves the broker's jars (`_resolve.py`): with the
settings `--packages` honours, and never for ever. Everything is on this machine: a Maven
repository built in a temporary folder (file://) and silent or closed ports on 127.0.0.1, with
Maven Central replaced by such a port (`DEFAULT_ARTIFACT_REPOSITORY`), so that nothing here can
be found on the internet by mistake. No SparkSession is needed."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sluice.testing import _java_executable, _resolve
from sluice.testing._resolve import resolve_classpath

GROUP, VERSION = "test.sluice", "1.0"


def _pom(artifact: str, dependencies: list[str] = ()) -> str:
    deps = "".join(
        f"<dependency><groupId>{GROUP}</groupId><artifactId>{d}</artifactId><version>{VERSION}</version></dependency>"
        for d in dependencies
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>{GROUP}</groupId><artifactId>{artifact}</artifactId><version>{VERSION}</version>"
        f"<dependencies>{deps}</dependencies></project>"
    )


@pytest.fixture()
def launcher(tmp_path: Path) -> tuple[Path, Path]:
    """A launcher jar and its POM, naming a dependency (with one of its own) that exists nowhere
    but in the repository `mirror` builds."""
    jar, pom = tmp_path / "launcher-1.0.jar", tmp_path / "launcher-1.0.pom"
    jar.write_bytes(b"launcher")
    pom.write_text(_pom("launcher", ["broker"]))
    return jar, pom


@pytest.fixture()
def mirror(tmp_path: Path) -> Path:
    """A Maven repository in a folder: broker 1.0, which depends on broker-deps 1.0."""
    repo = tmp_path / "mirror"
    for artifact, deps in (("broker", ["broker-deps"]), ("broker-deps", [])):
        folder = repo / GROUP.replace(".", "/") / artifact / VERSION
        folder.mkdir(parents=True)
        (folder / f"{artifact}-{VERSION}.pom").write_text(_pom(artifact, deps))
        (folder / f"{artifact}-{VERSION}.jar").write_bytes(artifact.encode())
    return repo


@pytest.fixture()
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once it is closed: connections are refused


@pytest.fixture()
def silent_port() -> Iterator[int]:
    """A port that takes connections (the kernel accepts them into the backlog) and never answers,
    as a proxy or a firewall that swallows traffic."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield s.getsockname()[1]


@pytest.fixture()
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int) -> Path:
    """A Spark conf folder of this test's own, Maven Central replaced by a closed local port, and
    Ivy's home (spark.jars.ivy) and the user's home (its ~/.m2) in the temporary folder: they
    start empty."""
    folder = tmp_path / "conf"
    folder.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # its ~/.m2 is empty
    monkeypatch.setenv("DEFAULT_ARTIFACT_REPOSITORY", f"http://127.0.0.1:{closed_port}/")
    return folder


#: what a resolution of the launcher's POM finds: the broker and what it depends on, in Ivy's cache
BOTH_JARS = [
    "test.sluice/broker-deps/jars/broker-deps-1.0.jar",
    "test.sluice/broker/jars/broker-1.0.jar",
]


def _one_resolver(name: str, root: str) -> str:
    """An Ivy settings file whose default (and only) resolver is a Maven repository at ``root``."""
    return (
        f'<ivysettings><settings defaultResolver="{name}"/><resolvers>'
        f'<ibiblio name="{name}" m2compatible="true" root="{root}"/>'
        "</resolvers></ivysettings>"
    )


def _moved_broker(mirror: Path, company: Path) -> Path:
    """``company``, a repository holding the broker, taken out of ``mirror`` (which keeps what it
    depends on)."""
    (company / "test/sluice").mkdir(parents=True)
    (mirror / "test/sluice/broker").rename(company / "test/sluice/broker")
    return company


def _defaults(conf: Path, tmp_path: Path, **properties: str) -> None:
    lines = [f"spark.jars.ivy {tmp_path / 'ivy'}", *(f"{k} {v}" for k, v in properties.items())]
    (conf / "spark-defaults.conf").write_text("# as spark-submit reads it\n" + "\n".join(lines) + "\n")


def _resolved(classpath: str, tmp_path: Path) -> list[str]:
    cache = tmp_path / "ivy" / "cache"
    return sorted(str(Path(e).relative_to(cache)) for e in classpath.split(":")[1:])


def test_an_ivy_settings_file_is_honoured(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(_one_resolver("company", f"{mirror.as_uri()}/"))
    _defaults(conf, tmp_path, **{"spark.jars.ivySettings": str(settings)})
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert classpath.split(":")[0] == str(launcher[0])
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_spark_jars_repositories_are_honoured(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    _defaults(conf, tmp_path, **{"spark.jars.repositories": f"{mirror.as_uri()}/"})
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_a_repository_that_never_answers_fails_within_the_connection_timeout(
    launcher: tuple[Path, Path],
    conf: Path,
    tmp_path: Path,
    silent_port: int,
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_resolve, "CONNECTION_TIMEOUT_S", 0.5)
    monkeypatch.setenv("DEFAULT_ARTIFACT_REPOSITORY", f"http://127.0.0.1:{silent_port}/")
    # a listed repository that refuses, with a user and password no message may show
    _defaults(conf, tmp_path, **{"spark.jars.repositories": f"http://ci:s3cret@127.0.0.1:{closed_port}/"})
    began = time.monotonic()
    with pytest.raises(RuntimeError) as failed:
        resolve_classpath(*launcher, java=_java_executable())
    assert time.monotonic() - began < 60
    message = str(failed.value)
    silent = f"http://127.0.0.1:{silent_port}/"
    assert (
        f"from ~/.m2/repository, {silent}, {silent}, http://***@127.0.0.1:{closed_port}/ (settings "
        f"read from {conf / 'spark-defaults.conf'})" in message
    ), message
    assert "s3cret" not in message and "ci:" not in message
    assert "(a repository gave no answer within 0.5 s)" in message, message
    assert "Set spark.jars.repositories (a Maven mirror's URL) or spark.jars.ivySettings" in message


def test_a_resolution_without_timeouts_of_its_own_ends_at_the_deadline(
    launcher: tuple[Path, Path],
    conf: Path,
    tmp_path: Path,
    silent_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a user's settings file sets no timeout: its resolver would wait for ever
    monkeypatch.setattr(_resolve, "RESOLVE_TIMEOUT_S", 2)
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(_one_resolver("proxy", f"http://127.0.0.1:{silent_port}/"))
    _defaults(conf, tmp_path, **{"spark.jars.ivySettings": str(settings)})
    began = time.monotonic()
    with pytest.raises(RuntimeError) as failed:
        resolve_classpath(*launcher, java=_java_executable())
    assert time.monotonic() - began < 30
    message = str(failed.value)
    assert message.startswith(
        f"Ivy did not resolve the jars launcher-1.0.pom names within 2 s from the resolvers of {settings}"
    ), message
    assert "or set SLUICE_BROKER_CLASSPATH to the broker's classpath" in message


def test_repositories_are_chained_after_the_settings_files_resolver(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    # the settings file's resolver holds the broker, the listed repository what it depends on
    company = _moved_broker(mirror, tmp_path / "company")
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(_one_resolver("company", f"{company.as_uri()}/"))
    _defaults(
        conf,
        tmp_path,
        **{"spark.jars.ivySettings": str(settings), "spark.jars.repositories": f"{mirror.as_uri()}/"},
    )
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_relative_paths_are_taken_from_the_current_folder(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as spark-submit takes them; Ivy itself runs in a temporary folder, deleted after it
    (tmp_path / "ivysettings.xml").write_text(_one_resolver("company", f"{mirror.as_uri()}/"))
    _defaults(conf, tmp_path, **{"spark.jars.ivy": "ivy", "spark.jars.ivySettings": "file:ivysettings.xml"})
    monkeypatch.chdir(tmp_path)
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert all(Path(entry).is_file() for entry in classpath.split(":"))
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_a_default_resolver_set_in_an_included_file_is_chained_before_the_repositories(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    # the included file's resolver holds the broker, the listed repository what it depends on
    company = _moved_broker(mirror, tmp_path / "company")
    (tmp_path / "company.xml").write_text(_one_resolver("company", f"{company.as_uri()}/"))
    settings = tmp_path / "ivysettings.xml"
    settings.write_text('<ivysettings><include file="${ivy.settings.dir}/company.xml"/></ivysettings>')
    _defaults(
        conf,
        tmp_path,
        **{"spark.jars.ivySettings": str(settings), "spark.jars.repositories": f"{mirror.as_uri()}/"},
    )
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_a_default_resolver_that_cannot_be_told_fails_saying_what_to_do(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "ivysettings.xml"
    settings.write_text('<ivysettings><include url="https://ivy.example/settings.xml"/></ivysettings>')
    _defaults(
        conf,
        tmp_path,
        **{"spark.jars.ivySettings": str(settings), "spark.jars.repositories": f"{mirror.as_uri()}/"},
    )
    with pytest.raises(RuntimeError) as failed:
        resolve_classpath(*launcher, java=_java_executable())
    assert str(failed.value).startswith(
        f"Cannot tell the default resolver of spark.jars.ivySettings ({settings}) to chain "
        f"spark.jars.repositories after it, as --packages does: {settings} includes "
        "https://ivy.example/settings.xml, which is not a local file. Name it in the top file's"
    ), str(failed.value)


def test_the_local_maven_repository_comes_first_as_for_packages(
    launcher: tuple[Path, Path], mirror: Path, conf: Path, tmp_path: Path
) -> None:
    # offline (Central refuses): what ~/.m2 holds is enough, as it is for --packages
    m2 = tmp_path / "home" / ".m2"
    m2.mkdir(parents=True)
    mirror.rename(m2 / "repository")
    _defaults(conf, tmp_path)
    classpath = resolve_classpath(*launcher, java=_java_executable())
    assert _resolved(classpath, tmp_path) == BOTH_JARS


def test_spark_defaults_are_read_from_the_pyspark_package_without_spark_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # where a pip-installed spark-submit reads them (its SPARK_HOME is the package's folder)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setattr(_resolve, "_pyspark_home", lambda: tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text(
        "spark.jars.repositories https://mirror.example/\n"
    )
    found = _resolve.ivy_settings()
    assert found.repositories == ("https://mirror.example/",)
    assert found.source == str(tmp_path / "conf" / "spark-defaults.conf")


def test_a_classpath_whose_jars_are_missing_is_never_returned(
    launcher: tuple[Path, Path], conf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what the old code returned for a relative spark.jars.ivy: Ivy's jars in a deleted folder
    gone = tmp_path / "deleted" / "broker-1.0.jar"

    def ivy(command: list[str], **_: object) -> subprocess.CompletedProcess:
        Path(command[command.index("-cachepath") + 1]).write_text(str(gone))
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(_resolve.subprocess, "run", ivy)
    _defaults(conf, tmp_path)
    with pytest.raises(
        RuntimeError, match=r"but 1 of them are not in .*\(e\.g\. .*deleted/broker-1\.0\.jar\)"
    ):
        resolve_classpath(*launcher, java=_java_executable())

"""The embedded broker's classpath for an installed wheel, without a checkout.

The wheel carries Sluice's own broker launcher (``sluice/jars/sluice-testkit_2.13-<version>.jar``,
about 140 KB) and the POM sbt wrote for it, which names Kafka's broker and what it needs. Those
jars (56, about 48 MB: Kafka's server, Scala, Jackson, ZooKeeper, Netty, each under its own
license) are not bundled: they are resolved the way ``--packages`` resolves Spark's, by the Ivy
that ships inside PySpark, with the settings ``--packages`` honours (:func:`ivy_settings`), into
the cache ``--packages`` uses. The first start downloads them (under a minute); the classpath found
is kept beside that cache and reused while its jars are there.

Every connection to a repository gives up after :data:`CONNECTION_TIMEOUT_S` without an answer,
and the whole resolution after :data:`RESOLVE_TIMEOUT_S`: a blocked network fails with a message
that says what to set, instead of hanging.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

#: where Spark 4's ``--packages`` keeps what it resolved (``spark.jars.ivy``'s default)
IVY_HOME = Path.home() / ".ivy2.5.2"
#: Maven Central, unless ``DEFAULT_ARTIFACT_REPOSITORY`` names a replacement (as for Spark)
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
#: how long one connection to a repository may go without an answer (connect, then each read)
CONNECTION_TIMEOUT_S: float = 30
#: how long the whole resolution may take (48 MB; under a minute on a working network)
RESOLVE_TIMEOUT_S: float = 600
_OUTPUT_TAIL_CHARS = 3000
_PROPERTY = re.compile(r"([^=:\s]+)\s*[=:\s]\s*(.*)")
#: the Spark properties ``--packages`` reads, and where Python finds them
SETTINGS_KEY, REPOSITORIES_KEY, IVY_KEY = (
    "spark.jars.ivySettings",
    "spark.jars.repositories",
    "spark.jars.ivy",
)
_WHAT_TO_SET = (
    f"Set {REPOSITORIES_KEY} (a Maven mirror's URL) or {SETTINGS_KEY} (an Ivy settings file) in "
    "spark-defaults.conf or on the active SparkSession, as for --packages; or set "
    "SLUICE_BROKER_CLASSPATH to the broker's classpath."
)


@dataclass(frozen=True)
class IvySettings:
    """Where the broker's jars come from, as ``--packages`` would take them."""

    #: ``spark.jars.ivySettings``: an Ivy settings file, used instead of the default resolvers
    settings_file: Path | None
    #: ``spark.jars.repositories``: more Maven repositories (comma-separated in Spark's property)
    repositories: tuple[str, ...]
    #: ``spark.jars.ivy``: Ivy's home; the cache is its ``cache`` folder
    ivy_home: Path
    #: ``$DEFAULT_ARTIFACT_REPOSITORY``, else Maven Central
    central: str
    #: where the properties were read, for messages
    source: str


def _defaults_file() -> Path | None:
    """``spark-defaults.conf`` where spark-submit reads it: ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``."""
    folder = os.environ.get("SPARK_CONF_DIR") or (
        str(Path(os.environ["SPARK_HOME"]) / "conf") if os.environ.get("SPARK_HOME") else None
    )
    if folder is None:
        return None
    path = Path(folder) / "spark-defaults.conf"
    return path if path.is_file() else None


def _read_defaults(path: Path) -> dict[str, str]:
    """A ``spark-defaults.conf`` as Spark reads it (a Java properties file): per line a key, then
    ``=``, ``:`` or spaces, then its value; ``#`` and ``!`` start comments."""
    found: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if (entry := _PROPERTY.match(line.strip())) and not line.strip().startswith(("#", "!")):
            found[entry.group(1)] = entry.group(2).strip()
    return found


def _active_conf() -> dict[str, str]:
    """The properties of a SparkContext this process already runs (none is created)."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return {}
    context = SparkContext._active_spark_context
    if context is None:
        return {}
    conf = context.getConf()
    return {
        key: conf.get(key, "") or ""
        for key in (SETTINGS_KEY, REPOSITORIES_KEY, IVY_KEY)
        if conf.contains(key)
    }


def ivy_settings() -> IvySettings:
    """The settings ``--packages`` honours, read where a PySpark program has them: the properties
    ``spark.jars.ivySettings``, ``spark.jars.repositories`` and ``spark.jars.ivy`` from
    ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``), overridden by the
    active SparkContext's if one runs; and the environment variable
    ``DEFAULT_ARTIFACT_REPOSITORY``, which replaces Maven Central."""
    properties: dict[str, str] = {}
    sources = []
    if (defaults := _defaults_file()) is not None:
        properties.update(_read_defaults(defaults))
        sources.append(str(defaults))
    if active := _active_conf():
        properties.update(active)
        sources.append("the active SparkContext")
    settings = properties.get(SETTINGS_KEY, "").strip()
    return IvySettings(
        settings_file=Path(settings).expanduser() if settings else None,
        repositories=tuple(r.strip() for r in properties.get(REPOSITORIES_KEY, "").split(",") if r.strip()),
        ivy_home=Path(properties[IVY_KEY]).expanduser() if properties.get(IVY_KEY, "").strip() else IVY_HOME,
        central=os.environ.get("DEFAULT_ARTIFACT_REPOSITORY", "").strip() or MAVEN_CENTRAL,
        source=" and ".join(sources) or "no spark-defaults.conf and no active SparkContext",
    )


def ivy_settings_xml(settings: IvySettings) -> str | None:
    """The Ivy settings the resolution runs with, unless the user's file is all there is (then
    that file is used as it is, as ``--packages`` does: ``None``). Without a file of the user's: a
    chain of the listed repositories, then Maven Central (or its replacement); with one and listed
    repositories: that file, its default resolver and the repositories after it, chained as Spark
    chains them. Every repository of Sluice's making answers within CONNECTION_TIMEOUT_S (a user's
    file sets its own)."""
    ms = round(CONNECTION_TIMEOUT_S * 1000)
    bounded = 'timeoutConstraint="bounded"'
    repos = [
        f"<ibiblio name={quoteattr(f'repo-{i + 1}')} m2compatible=\"true\" usepoms=\"true\" "
        f"root={quoteattr(root)} {bounded}/>"
        for i, root in enumerate(settings.repositories)
    ]
    if settings.settings_file is None:
        # the listed repositories first: a mirror is listed to be used, and a Central that a
        # firewall drops would otherwise cost a connection timeout per module
        central = f"root={quoteattr(settings.central)} {bounded}"
        chain = [*repos, f'<ibiblio name="central" m2compatible="true" usepoms="true" {central}/>']
        head = ""
    elif not repos:
        return None
    else:
        found = ET.parse(settings.settings_file).getroot().find("settings")
        previous = found.get("defaultResolver") if found is not None else None
        chain = [*([f"<resolver ref={quoteattr(previous)}/>"] if previous else []), *repos]
        head = f"<include file={quoteattr(str(settings.settings_file.resolve()))}/>"
    return "\n".join(
        [
            "<ivysettings>",
            head,
            "<timeout-constraints>",
            f'<timeout-constraint name="bounded" connectionTimeout="{ms}" readTimeout="{ms}"/>',
            "</timeout-constraints>",
            '<settings defaultResolver="sluice"/>',
            '<resolvers><chain name="sluice" returnFirst="true">',
            *chain,
            "</chain></resolvers>",
            "</ivysettings>",
        ]
    )


def packaged_launcher(package_dir: Path) -> tuple[Path, Path] | None:
    """The launcher jar and its POM the installed package carries, if it carries them."""
    poms = sorted((package_dir / "jars").glob("sluice-testkit_*.pom"))
    if not poms:
        return None
    jar = poms[-1].with_suffix(".jar")
    return (jar, poms[-1]) if jar.is_file() else None


def _ivy_jar() -> Path:
    spec = importlib.util.find_spec("pyspark")
    homes = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    if os.environ.get("SPARK_HOME"):
        homes.append(Path(os.environ["SPARK_HOME"]))
    for home in homes:
        found = sorted((home / "jars").glob("ivy-*.jar"))
        if found:
            return found[-1]
    raise FileNotFoundError(
        "Ivy (which resolves the broker's jars, as for --packages) was not found in PySpark's jars: "
        "install pyspark 4.3, or set SLUICE_BROKER_CLASSPATH to the broker's classpath."
    )


def _where(settings: IvySettings) -> str:
    if settings.settings_file is not None:
        places = f"the resolvers of {settings.settings_file}"
    else:
        places = settings.central
    if settings.repositories:
        places = f"{', '.join(settings.repositories)} and {places}"
    return f"{places} (settings read from {settings.source})"


def resolve_classpath(jar: Path, pom: Path, java: str) -> str:
    """The launcher jar and the jars its POM depends on, resolved (or found cached) in the Ivy
    home of :func:`ivy_settings`.

    Raises ``RuntimeError`` saying where it looked, what to set and Ivy's last output when they
    cannot be resolved, at the latest after RESOLVE_TIMEOUT_S.
    """
    settings = ivy_settings()
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    kept = settings.ivy_home / "sluice" / f"{pom.stem}-{digest}.classpath"
    if kept.is_file():
        entries = kept.read_text(encoding="utf-8").strip().split(os.pathsep)
        if entries and all(Path(entry).is_file() for entry in entries):
            return os.pathsep.join([str(jar), *entries])
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sluice-ivy-") as scratch:
        written = Path(scratch) / "classpath"
        settings_xml = ivy_settings_xml(settings)
        settings_file = settings.settings_file or Path(scratch) / "ivysettings.xml"
        if settings_xml is not None:
            settings_file = Path(scratch) / "ivysettings.xml"
            settings_file.write_text(settings_xml, encoding="utf-8")
        command = [java, "-jar", str(_ivy_jar()), "-settings", str(settings_file), "-ivy", str(pom.resolve())]
        command += [
            "-confs",
            "default",
            "-cache",
            str(settings.ivy_home / "cache"),
            "-cachepath",
            str(written),
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, cwd=scratch
            )
        except subprocess.TimeoutExpired as e:
            output = _text(e.stdout) + _text(e.stderr)
            raise RuntimeError(
                f"Ivy did not resolve the jars {pom.name} names within {RESOLVE_TIMEOUT_S} s from "
                f"{_where(settings)}. {_WHAT_TO_SET}\n"
                f"--- Ivy's output (last lines) ---\n{output[-_OUTPUT_TAIL_CHARS:]}"
            ) from None
        if done.returncode != 0 or not written.is_file():
            output = done.stdout + done.stderr
            silent = "timed out" in output.lower()
            why = f" (a repository gave no answer within {CONNECTION_TIMEOUT_S} s)" if silent else ""
            raise RuntimeError(
                f"Ivy could not resolve the jars {pom.name} names from {_where(settings)} into "
                f"{settings.ivy_home / 'cache'} (exit {done.returncode}){why}. Check that those "
                f"repositories are reachable from here. {_WHAT_TO_SET}\n"
                f"--- Ivy's output (last lines) ---\n{output[-_OUTPUT_TAIL_CHARS:]}"
            )
        classpath = written.read_text(encoding="utf-8").strip()
    # replaced whole: another process may be reading it
    part = kept.with_name(f"{kept.name}.{os.getpid()}.part")
    part.write_text(classpath, encoding="utf-8")
    part.replace(kept)
    return os.pathsep.join([str(jar), classpath])


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output

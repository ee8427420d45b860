"""The embedded broker's classpath for an installed wheel, without a checkout.

The wheel carries Sluice's own broker launcher (``sluice/jars/sluice-testkit_2.13-<version>.jar``,
about 150 KB) and the POM sbt wrote for it, which names Kafka's broker and what it needs. Those
jars (about 48 MB: Kafka's server, Scala, Jackson, ZooKeeper, Netty, each under its own
license) are not bundled: they are resolved the way ``--packages`` resolves Spark's, by the Ivy
that ships inside PySpark, with the settings ``--packages`` reads (:func:`ivy_settings`), chained
in its order (:func:`ivy_settings_xml`), into the cache ``--packages`` uses. The first start
downloads them; the classpath found is kept beside that cache and reused while its
jars are there.

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
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

#: where Spark 4's ``--packages`` keeps what it resolved (``spark.jars.ivy``'s default)
IVY_HOME = Path.home() / ".ivy2.5.2"
#: Maven Central, unless ``DEFAULT_ARTIFACT_REPOSITORY`` names a replacement (as for Spark)
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
#: what Spark chains after Maven Central (also replaced by ``DEFAULT_ARTIFACT_REPOSITORY``)
SPARK_PACKAGES = "https://repos.spark-packages.org/"
#: how long one connection to a repository may go without an answer (connect, then each read)
CONNECTION_TIMEOUT_S: float = 30
#: how long the whole resolution may take (48 MB; under a minute on a working network)
RESOLVE_TIMEOUT_S: float = 600
_OUTPUT_TAIL_CHARS = 3000
#: the user and password of a URL (``https://user:pw@host/``), never shown in a message
_USERINFO = re.compile(r"//[^/@\s]+@")
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
    #: ``$DEFAULT_ARTIFACT_REPOSITORY``, else Spark Packages' repository
    spark_packages: str
    #: where the properties were read, for messages
    source: str


def _pyspark_home() -> Path | None:
    """The installed PySpark package's folder: a pip-installed spark-submit's ``SPARK_HOME``."""
    spec = importlib.util.find_spec("pyspark")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def _defaults_file() -> Path | None:
    """``spark-defaults.conf`` where spark-submit reads it: ``$SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``, else (neither set, as for a pip-installed PySpark, whose spark-submit
    takes the package's folder as ``SPARK_HOME``) the ``conf`` folder of the PySpark package."""
    if os.environ.get("SPARK_CONF_DIR"):
        folder: Path | None = Path(os.environ["SPARK_CONF_DIR"])
    elif os.environ.get("SPARK_HOME"):
        folder = Path(os.environ["SPARK_HOME"]) / "conf"
    else:
        folder = home / "conf" if (home := _pyspark_home()) is not None else None
    if folder is None:
        return None
    path = folder / "spark-defaults.conf"
    return path if path.is_file() else None


def _local_path(value: str) -> Path:
    """A path property as spark-submit takes it: a path or a ``file:`` URI, ``~`` expanded, a
    relative one against the current folder (Ivy runs elsewhere, so it gets an absolute path)."""
    if value.startswith("file:"):
        value = urllib.request.url2pathname(urllib.parse.urlparse(value).path)
    return Path(value).expanduser().resolve()


def redacted(text: str) -> str:
    """``text`` without the user and password of any URL in it (``https://***@host/``)."""
    return _USERINFO.sub("//***@", text)


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
    """The settings ``--packages`` reads, read where a PySpark program has them: the properties
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
    ivy_home = properties.get(IVY_KEY, "").strip()
    return IvySettings(
        settings_file=_local_path(settings) if settings else None,
        repositories=tuple(r.strip() for r in properties.get(REPOSITORIES_KEY, "").split(",") if r.strip()),
        ivy_home=_local_path(ivy_home) if ivy_home else IVY_HOME,
        central=os.environ.get("DEFAULT_ARTIFACT_REPOSITORY", "").strip() or MAVEN_CENTRAL,
        spark_packages=os.environ.get("DEFAULT_ARTIFACT_REPOSITORY", "").strip() or SPARK_PACKAGES,
        source=" and ".join(sources) or "no spark-defaults.conf and no active SparkContext",
    )


def ivy_settings_xml(settings: IvySettings) -> str | None:
    """The Ivy settings the resolution runs with, chained as ``--packages`` chains them, unless the
    user's file is all there is (then that file is used as it is, as ``--packages`` does:
    ``None``). Without a file of the user's: the local Maven repository (``~/.m2/repository``),
    Ivy's local repository (``<spark.jars.ivy>/local``), Maven Central and Spark Packages (or
    their replacement), then the listed repositories. With one and listed repositories: that
    file, its default resolver (:func:`default_resolver`) and the repositories after it. Every repository of Sluice's making
    answers within CONNECTION_TIMEOUT_S (a user's file sets its own)."""
    ms = round(CONNECTION_TIMEOUT_S * 1000)
    bounded = 'timeoutConstraint="bounded"'
    repos = [
        f"<ibiblio name={quoteattr(f'repo-{i + 1}')} m2compatible=\"true\" usepoms=\"true\" "
        f"root={quoteattr(root)} {bounded}/>"
        for i, root in enumerate(settings.repositories)
    ]
    if settings.settings_file is None:
        # Spark's order, so that what --packages finds here (offline, from ~/.m2) is found too
        local = settings.ivy_home / "local" / "[organisation]" / "[module]" / "[revision]"
        central = f"root={quoteattr(settings.central)} {bounded}"
        packages = f"root={quoteattr(settings.spark_packages)} {bounded}"
        chain = [
            '<ibiblio name="local-m2-cache" m2compatible="true" usepoms="true" '
            f"root={quoteattr((Path.home() / '.m2' / 'repository').as_uri() + '/')}/>",
            '<filesystem name="local-ivy-cache">'
            f"<ivy pattern={quoteattr(str(local / 'ivys' / 'ivy.xml'))}/>"
            f"<artifact pattern={quoteattr(str(local / '[type]s' / '[artifact](-[classifier]).[ext]'))}/>"
            "</filesystem>",
            f'<ibiblio name="central" m2compatible="true" usepoms="true" {central}/>',
            f'<ibiblio name="spark-packages" m2compatible="true" usepoms="true" {packages}/>',
            *repos,
        ]
        head = ""
    elif not repos:
        return None
    else:
        previous = default_resolver(settings.settings_file)
        chain = [*([f"<resolver ref={quoteattr(previous)}/>"] if previous else []), *repos]
        head = f"<include file={quoteattr(str(settings.settings_file))}/>"
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


def default_resolver(settings_file: Path) -> str | None:
    """The default resolver an Ivy settings file leaves, as Ivy reads it: the last
    ``<settings defaultResolver>`` in document order, following ``<include>``s of local files.

    Raises ``ValueError`` (saying what to do) where this cannot be told without running Ivy: an
    include of a URL, a name or path made of variables other than ``${ivy.settings.dir}`` and
    ``${user.home}``. A guess would chain only the listed repositories and drop the file's."""
    found: str | None = None

    def walk(file: Path) -> None:
        nonlocal found
        variables = {"ivy.settings.dir": str(file.parent), "user.home": str(Path.home())}

        def value(text: str, what: str) -> str:
            for name, replacement in variables.items():
                text = text.replace("${" + name + "}", replacement)
            if "${" in text:
                raise ValueError(f"{what} in {file} is made of variables ({text})")
            return text

        for element in ET.parse(file).getroot():
            if element.tag == "settings" and element.get("defaultResolver"):
                found = value(element.get("defaultResolver", ""), "the default resolver")
            elif element.tag == "include":
                where = element.get("file") or element.get("url") or ""
                if not element.get("file") and not where.startswith("file:"):
                    raise ValueError(f"{file} includes {where}, which is not a local file")
                where = value(where, "an include")
                if where.startswith("file:"):
                    where = urllib.request.url2pathname(urllib.parse.urlparse(where).path)
                path = file.parent / Path(where).expanduser()  # an absolute path stays as it is
                if path.is_file():
                    walk(path)
                elif element.get("optional") != "true":
                    raise ValueError(f"{file} includes {path}, which is not there")

    try:
        walk(settings_file)
    except (ValueError, ET.ParseError, OSError) as e:
        raise _failure(
            f"Cannot tell the default resolver of {SETTINGS_KEY} ({settings_file}) to chain "
            f"{REPOSITORIES_KEY} after it, as --packages does: {e}. Name it in the top file's "
            f'<settings defaultResolver="..."/>, or declare the repositories in the settings file '
            f"and unset {REPOSITORIES_KEY}; or set SLUICE_BROKER_CLASSPATH to the broker's classpath."
        ) from None
    return found


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
        if settings.repositories:
            places = f"{places}, then {', '.join(settings.repositories)}"
    else:
        places = ", ".join(
            ["~/.m2/repository", settings.central, settings.spark_packages, *settings.repositories]
        )
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
            raise _failure(
                f"Ivy did not resolve the jars {pom.name} names within {RESOLVE_TIMEOUT_S} s from "
                f"{_where(settings)}. {_WHAT_TO_SET}\n"
                f"--- Ivy's output (last lines) ---\n{output[-_OUTPUT_TAIL_CHARS:]}"
            ) from None
        if done.returncode != 0 or not written.is_file():
            output = done.stdout + done.stderr
            silent = "timed out" in output.lower()
            why = f" (a repository gave no answer within {CONNECTION_TIMEOUT_S} s)" if silent else ""
            raise _failure(
                f"Ivy could not resolve the jars {pom.name} names from {_where(settings)} into "
                f"{settings.ivy_home / 'cache'} (exit {done.returncode}){why}. Check that those "
                f"repositories are reachable from here. {_WHAT_TO_SET}\n"
                f"--- Ivy's output (last lines) ---\n{output[-_OUTPUT_TAIL_CHARS:]}"
            )
        classpath = written.read_text(encoding="utf-8").strip()
    # what Ivy wrote must be there: a classpath of missing jars would fail later, far from here
    missing = [entry for entry in classpath.split(os.pathsep) if not Path(entry).is_file()]
    if missing:
        raise _failure(
            f"Ivy resolved the jars {pom.name} names from {_where(settings)}, but {len(missing)} "
            f"of them are not in {settings.ivy_home / 'cache'} (e.g. {missing[0] or 'none named'}): "
            f"check that {IVY_KEY} names a folder this process can write and keep."
        )
    # replaced whole: another process may be reading it
    part = kept.with_name(f"{kept.name}.{os.getpid()}.part")
    part.write_text(classpath, encoding="utf-8")
    part.replace(kept)
    return os.pathsep.join([str(jar), classpath])


def _failure(message: str) -> RuntimeError:
    """An error whose message (Ivy's output included) names no repository's user or password."""
    return RuntimeError(redacted(message))


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output

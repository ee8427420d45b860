"""The embedded broker's classpath for an installed wheel, without a checkout.

The wheel carries Sluice's own broker launcher (``sluice/jars/sluice-testkit_2.13-<version>.jar``,
about 140 KB) and the POM sbt wrote for it, which names Kafka's broker and what it needs. Those
jars (56, about 48 MB: Kafka's server, Scala, Jackson, ZooKeeper, Netty, each under its own
license) are not bundled: they are resolved from Maven Central the way ``--packages`` resolves
Spark's, by the Ivy that ships inside PySpark, into the cache ``--packages`` uses
(``~/.ivy2.5.2``). The first start downloads them (under a minute); the classpath found is kept
beside that cache and reused while its jars are there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import tempfile
from pathlib import Path

#: where Spark 4's ``--packages`` keeps what it resolved (``spark.jars.ivy``'s default)
IVY_HOME = Path.home() / ".ivy2.5.2"
_RESOLVE_TIMEOUT_S = 900
_OUTPUT_TAIL_CHARS = 3000


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


def resolve_classpath(jar: Path, pom: Path, java: str) -> str:
    """The launcher jar and the jars its POM depends on, resolved (or found cached) in IVY_HOME.

    Raises ``RuntimeError`` with Ivy's last output when they cannot be resolved.
    """
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    kept = IVY_HOME / "sluice" / f"{pom.stem}-{digest}.classpath"
    if kept.is_file():
        entries = kept.read_text(encoding="utf-8").strip().split(os.pathsep)
        if entries and all(Path(entry).is_file() for entry in entries):
            return os.pathsep.join([str(jar), *entries])
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sluice-ivy-") as scratch:
        written = Path(scratch) / "classpath"
        command = [java, "-jar", str(_ivy_jar()), "-ivy", str(pom), "-confs", "default"]
        command += ["-cache", str(IVY_HOME / "cache"), "-cachepath", str(written)]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_RESOLVE_TIMEOUT_S, cwd=scratch
        )
        if done.returncode != 0 or not written.is_file():
            output = (done.stdout + done.stderr)[-_OUTPUT_TAIL_CHARS:]
            raise RuntimeError(
                f"Ivy could not resolve the jars {pom.name} names from Maven Central into "
                f"{IVY_HOME / 'cache'} (exit {done.returncode}). Check that Maven Central is "
                f"reachable from here, or set SLUICE_BROKER_CLASSPATH to the broker's classpath.\n"
                f"--- Ivy's output (last lines) ---\n{output}"
            )
        classpath = written.read_text(encoding="utf-8").strip()
    # replaced whole: another process may be reading it
    part = kept.with_name(f"{kept.name}.{os.getpid()}.part")
    part.write_text(classpath, encoding="utf-8")
    part.replace(kept)
    return os.pathsep.join([str(jar), classpath])

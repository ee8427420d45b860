"""Where the Python builders meet the JVM: jar discovery, Spark Connect detection, py4j calls."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


class SluiceConfigError(ValueError):
    """A source, strategy or option was given a value Sluice cannot use. The message names it."""


def jar_path() -> str:
    """The Sluice jar: ``$SLUICE_JAR`` if set, else the one shipped inside this package."""
    explicit = os.environ.get("SLUICE_JAR")
    if explicit:
        return explicit
    jars = sorted((Path(__file__).parent / "jars").glob("sluice-spark-assembly-*.jar"))
    if not jars:
        raise FileNotFoundError(
            "The Sluice jar is not inside the sluice package. Install the package built by "
            "`make build`, or set SLUICE_JAR to the jar's path."
        )
    return str(jars[-1])


def is_remote(spark: SparkSession | None) -> bool:
    """True under Spark Connect, where py4j (``spark._jvm``) does not exist."""
    if spark is None:
        return False
    try:
        from pyspark.sql.utils import is_remote as _is_remote

        if _is_remote():
            return True
    except ImportError:  # pragma: no cover - older pyspark
        pass
    return type(spark).__module__.startswith("pyspark.sql.connect")


def active_classic_session() -> SparkSession | None:
    """The active classic SparkSession, or None (no session, or Spark Connect)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    return None if spark is None or is_remote(spark) else spark


def java_map(spark: SparkSession, options: dict[str, str]) -> Any:
    jmap = spark._jvm.java.util.HashMap()  # noqa: SLF001 - py4j is the documented route here
    for key, value in options.items():
        jmap.put(key, value)
    return jmap


def call_jvm(fn: Callable[[], T]) -> T:
    """Runs a py4j call and turns a JVM configuration error into a Python ``SluiceConfigError``."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import IllegalArgumentException

    try:
        return fn()
    except IllegalArgumentException as error:
        # PySpark converts JVM IllegalArgumentExceptions itself once a session exists.
        raise SluiceConfigError(getattr(error, "_desc", None) or str(error)) from None
    except Py4JJavaError as error:
        java_error = error.java_exception
        class_name = java_error.getClass().getName()
        if class_name in ("java.lang.IllegalArgumentException", "java.lang.IllegalStateException"):
            raise SluiceConfigError(str(java_error.getMessage())) from None
        raise

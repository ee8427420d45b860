"""Where the Python builders meet the JVM: jar discovery, Spark Connect detection, py4j calls."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sluice._errors import SluiceConfigError, sluice_error, sluice_error_of_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")


def jar_path() -> str:
    """The Sluice jar: ``$SLUICE_JAR`` if set, else the one shipped inside this package.

    Returns
    -------
    str
        The jar's path, for ``--jars`` or a Connect server.

    Raises
    ------
    FileNotFoundError
        The package carries no jar (a source tree that was never built) and ``SLUICE_JAR`` is unset.

    Examples
    --------
    >>> sluice.jar_path()  # doctest: +ELLIPSIS
    '.../sluice/jars/sluice-spark-assembly-....jar'
    """
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
    """True under Spark Connect, where py4j (``spark._jvm``) does not exist.

    Parameters
    ----------
    spark : SparkSession or None
        A classic or a Connect session.

    Returns
    -------
    bool

    Examples
    --------
    >>> sluice.is_remote(spark)
    False
    """
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


def driver_jvm(spark: SparkSession) -> Any:
    """py4j's view of a classic session's driver JVM."""
    jvm = spark._jvm  # noqa: SLF001 - py4j is the documented route here
    if jvm is None:
        raise RuntimeError("this SparkSession has no driver JVM (its SparkContext was stopped)")
    return jvm


def java_map(spark: SparkSession, options: dict[str, str]) -> Any:
    jmap = driver_jvm(spark).java.util.HashMap()
    for key, value in options.items():
        jmap.put(key, value)
    return jmap


def call_jvm(fn: Callable[[], T]) -> T:
    """Runs a py4j call and turns a JVM error of Sluice into a Python ``SluiceException`` of its
    class (a configuration error is a ``SluiceConfigError``)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.captured import CapturedException, IllegalArgumentException

    try:
        return fn()
    except CapturedException as error:
        # PySpark converts the JVM's exception itself once a session exists; ours carry a class
        converted = sluice_error(error)
        if converted is not None:
            raise converted from None
        if isinstance(error, IllegalArgumentException):
            raise SluiceConfigError(getattr(error, "_desc", None) or str(error)) from None
        raise
    except Py4JJavaError as error:
        java_error = error.java_exception
        converted = sluice_error_of_java(java_error)
        if converted is not None:
            raise converted from None
        class_name = java_error.getClass().getName()
        if class_name in ("java.lang.IllegalArgumentException", "java.lang.IllegalStateException"):
            raise SluiceConfigError(str(java_error.getMessage())) from None
        raise

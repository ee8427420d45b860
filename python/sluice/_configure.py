"""``sluice.configure``: the Sluice jar and extensions on a SparkSession builder, and a clear refusal
when this Python process already runs a Spark JVM the jar can no longer be added to."""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any

from sluice._errors import SluiceConfigError
from sluice._jvm import jar_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

EXTENSIONS = "sluice.spark.SluiceExtensions"
"""Sluice's ``spark.sql.extensions`` class (``sluice.configure`` sets it; a Connect server needs it)."""
#: A class of the Sluice jar: loadable on the driver exactly when the jar is on the driver.
PROVIDER_CLASS = "sluice.spark.SluiceProvider"


def configure(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Returns ``builder`` set up to load the Sluice jar shipped with this package, with Sluice's
    analysis rules (``spark.sql.extensions``: clear errors for columns a compact source leaves out,
    and streams that read only the columns and files a query uses: Kafka builds only those
    columns, files read or parse only those, Parquet skips the files and row groups its filters
    exclude; plans, as ``explain()`` prints them, show the values of secret options as ``***``).

    Keeps jars and extensions already configured on the builder.

    Spark puts ``spark.jars`` on the driver only when it launches the driver JVM, which PySpark does
    once per Python process. If this process already runs a Spark JVM without the Sluice jar (a
    session was created before ``configure``), ``getOrCreate()`` could not add the jar, so this raises
    :class:`SluiceConfigError` saying what to do. A running session that has the jar is fine.

    Under Spark Connect (a builder with ``.remote(...)``) the builder is returned unchanged: the jar
    and the extensions belong on the Connect server.

    Parameters
    ----------
    builder : SparkSession.Builder
        The builder the session will be made with.

    Returns
    -------
    SparkSession.Builder
        The same builder, with ``spark.jars`` and ``spark.sql.extensions`` added.

    Raises
    ------
    SluiceConfigError
        This process already runs a Spark JVM without the jar.

    Examples
    --------
    >>> spark = sluice.configure(SparkSession.builder.master("local[2]")).getOrCreate()
    """
    if _is_remote(builder):
        return builder
    _check_running_jvm()
    return _append(_append(builder, "spark.jars", jar_path()), "spark.sql.extensions", EXTENSIONS)


def _append(builder: SparkSession.Builder, key: str, value: str) -> SparkSession.Builder:
    existing = builder._options.get(key)  # noqa: SLF001 - the builder keeps no public getter
    values = [v for v in (existing or "").split(",") if v]
    if value not in values:
        values.append(value)
    return builder.config(key, ",".join(values))


def _is_remote(builder: SparkSession.Builder) -> bool:
    options = getattr(builder, "_options", {})
    return (
        "spark.remote" in options
        or "SPARK_REMOTE" in os.environ
        or "SPARK_CONNECT_MODE_ENABLED" in os.environ
        or type(builder).__module__.startswith("pyspark.sql.connect")
    )


def _check_running_jvm() -> None:
    from pyspark import SparkContext

    jvm = SparkContext._jvm  # noqa: SLF001 - set once PySpark has launched this process's JVM
    if jvm is None:
        return  # no JVM yet: getOrCreate() launches one with spark.jars
    if not _loadable(jvm, PROVIDER_CLASS):
        running = SparkContext._active_spark_context is not None  # noqa: SLF001
        what = (
            "A SparkSession is already running"
            if running
            else "A Spark JVM (from a stopped session) is still up"
        )
        raise SluiceConfigError(
            f"{what} in this Python process without the Sluice jar, and getOrCreate() cannot add it: "
            "Spark puts spark.jars on the driver only when it launches the driver JVM, once per process "
            "(spark.stop() ends the session but not the JVM). Restart the Python process (in a notebook, "
            "restart the kernel) and call sluice.configure(SparkSession.builder...) before the first "
            "getOrCreate(), e.g. spark = sluice.configure(SparkSession.builder).getOrCreate(); or start "
            f"Python with the jar: pyspark --jars {jar_path()} --conf spark.sql.extensions={EXTENSIONS}."
        )
    context = SparkContext._active_spark_context  # noqa: SLF001
    if context is not None and EXTENSIONS not in context.getConf().get("spark.sql.extensions", ""):
        warnings.warn(
            "The running SparkSession has the Sluice jar but not spark.sql.extensions="
            f"{EXTENSIONS} (a static setting): Sluice reads, but a compact source's missing columns fail "
            "with Spark's generic 'cannot resolve' error, and streams read every column (Kafka builds all of them) "
            "and every Parquet file. Start the "
            "session with sluice.configure(...) to have both.",
            stacklevel=3,
        )


def _loadable(jvm: Any, class_name: str) -> bool:
    from py4j.protocol import Py4JError

    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
    except Py4JError:
        return False
    return True

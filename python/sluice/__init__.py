"""Sluice: Flink's source model for Spark Structured Streaming.

from pyspark.sql import SparkSession
import sluice

spark = sluice.configure(SparkSession.builder.master("local[2]")).getOrCreate()
source = sluice.GeneratorSource.builder().splits(4).records_per_split(1000).build()
df = sluice.from_source(spark, source, name="numbers")
query = df.writeStream.format("noop").start()
sluice.status(query)  # where each split stands; sluice.plot(query) draws it (the [plot] extra)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from sluice._configure import EXTENSIONS as EXTENSIONS
from sluice._configure import configure
from sluice._errors import SluiceConfigError, SluiceException, SluiceRuntimeError, sluice_error
from sluice._jvm import call_jvm, is_remote, jar_path
from sluice._options import FORMAT, read_options
from sluice._plot import plot
from sluice._status import COLUMNS as STATUS_COLUMNS
from sluice._status import status
from sluice.batch import read
from sluice.hybrid import HybridSource, HybridSourceBuilder, SourceSwitchContext
from sluice.kafka import KafkaSource, KafkaSourceBuilder, OffsetsInitializer
from sluice.progress import unwatch, watch
from sluice.sources import FileSource, FileSourceBuilder, GeneratorSource, GeneratorSourceBuilder, Source
from sluice.tables import DeltaSource, DeltaSourceBuilder, IcebergSource, IcebergSourceBuilder
from sluice.watermarks import WatermarkStrategy

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "DeltaSource",
    "DeltaSourceBuilder",
    "EXTENSIONS",
    "FileSource",
    "FileSourceBuilder",
    "GeneratorSource",
    "GeneratorSourceBuilder",
    "HybridSource",
    "HybridSourceBuilder",
    "IcebergSource",
    "IcebergSourceBuilder",
    "KafkaSource",
    "KafkaSourceBuilder",
    "OffsetsInitializer",
    "STATUS_COLUMNS",
    "SluiceConfigError",
    "SluiceException",
    "SluiceRuntimeError",
    "Source",
    "SourceSwitchContext",
    "WatermarkStrategy",
    "configure",
    "from_source",
    "is_remote",
    "jar_path",
    "plot",
    "read",
    "sluice_error",
    "status",
    "unwatch",
    "watch",
]

try:
    # written once, in build.sbt; the package's metadata carries it (python/VERSION at build time)
    __version__ = version("spark-sluice")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


def from_source(
    spark: SparkSession,
    source: Source,
    watermark_strategy: WatermarkStrategy | None = None,
    name: str | None = None,
    options: dict[str, object] | None = None,
) -> DataFrame:
    """A streaming DataFrame reading ``source``.

    ``watermark_strategy`` (see :class:`WatermarkStrategy`) adds an ``event_time`` column (or
    the name ``with_event_time_column`` gives) for Spark's ``withWatermark`` and, with
    ``with_watermark_alignment``, aligns the source's splits and the query's sources of the same
    group (docs/event-time.md).

    ``options`` are read options of the Spark binding, e.g. ``{"maxRecordsPerTrigger": 10000}``,
    ``{"forceTimestampSupport": False}`` for compact records (docs/compact.md), or
    ``{"latencyTrackingInterval": "1s"}`` (see docs/options.md).

    Reads through ``spark.readStream.format("sluice")`` with the source's, the strategy's and these
    options, as the Scala ``Sluice.fromSource`` does, in classic PySpark and under Spark Connect
    alike (there the jar must be on the Connect server).

    Parameters
    ----------
    spark : SparkSession
        A classic session from :func:`configure`, or a Connect session.
    source : Source
        What to read.
    watermark_strategy : WatermarkStrategy, optional
        Event time, idleness and alignment.
    name : str, optional
        The source's name in query progress, errors and :func:`status`.
    options : dict of str to object, optional
        Read options of the Spark binding.

    Returns
    -------
    pyspark.sql.DataFrame
        A streaming DataFrame.

    Raises
    ------
    SluiceConfigError
        An option is not allowed (classic sessions: now; under Connect: when the query starts).

    Examples
    --------
    >>> source = sluice.GeneratorSource.builder().splits(4).records_per_split(1000).build()
    >>> df = sluice.from_source(spark, source, name="numbers", options={"maxRecordsPerTrigger": 500})
    """
    reader = spark.readStream.format(FORMAT).options(
        **read_options(source, watermark_strategy, name, options)
    )
    if is_remote(spark):
        return reader.load()
    # classic: load() builds and checks the source now; a bad option becomes a SluiceConfigError
    return call_jvm(reader.load)

"""Batch reads: a bounded source read whole as a DataFrame (``spark.read``), FLIP-27's unification
of streaming and batch. The rows are the ones a streaming read of the same source gives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluice._jvm import call_jvm, is_remote
from sluice._options import FORMAT, read_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sluice.sources import Source
    from sluice.watermarks import WatermarkStrategy


def read(
    spark: SparkSession,
    source: Source,
    watermark_strategy: WatermarkStrategy | None = None,
    name: str | None = None,
    options: dict[str, object] | None = None,
) -> DataFrame:
    """A (batch) DataFrame holding every record of the bounded ``source``.

    Same rows and schema as :func:`sluice.from_source` gives for the source: ``event_time`` (or the
    name ``with_event_time_column`` gives) under ``watermark_strategy`` (alignment and idleness
    have no effect: nothing is read in rounds), compact records with ``{"forceTimestampSupport": False}``.

    Refused when ``load()`` is called, with a message naming the fix: an unbounded source (Kafka
    without stopping offsets, files with ``monitorIntervalMs``, a generator without
    ``recordsPerSplit``), a hybrid whose later sources are derived from where the previous one
    ended, and ``maxRecordsPerTrigger`` or ``latencyTrackingInterval`` (streaming only). See
    docs/batch.md.

    Reads through ``spark.read.format("sluice")`` with the source's, the strategy's and these
    options, as the Scala ``Sluice.read`` does, in classic PySpark and under Spark Connect alike
    (there the jar must be on the Connect server, and refusals come with the first action).

    Parameters
    ----------
    spark : SparkSession
        A classic or a Connect session.
    source : Source
        A bounded source.
    watermark_strategy : WatermarkStrategy, optional
        Adds the event-time column.
    name : str, optional
        The source's name in errors and metrics.
    options : dict of str to object, optional
        Read options of the Spark binding (docs/options.md).

    Returns
    -------
    pyspark.sql.DataFrame
        A batch DataFrame.

    Raises
    ------
    SluiceConfigError
        What cannot be read as a batch (classic sessions; under Connect with the first action).

    Examples
    --------
    >>> df = sluice.read(spark, KafkaSource.builder().bootstrap_servers("broker:9092").topics("events")
    ...                  .stopping_offsets(OffsetsInitializer.latest()).build())
    """
    reader = spark.read.format(FORMAT).options(**read_options(source, watermark_strategy, name, options))
    if is_remote(spark):
        return reader.load()
    # classic: load() builds the source and refuses what cannot be read as a batch, now
    return call_jvm(reader.load)

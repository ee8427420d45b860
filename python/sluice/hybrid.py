"""The hybrid source builder (FLIP-150), mirroring ``sluice.hybrid.HybridSource.builder`` in Scala."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sluice._durations import Duration, legacy_millis, millis, renamed
from sluice._errors import SluiceConfigError
from sluice._jvm import active_classic_session
from sluice._options import declared
from sluice.sources import Source, _Builder

# Source i's options are its own under hybrid.<i>., next to the keys saying how it comes to be.
_HYBRID = declared("hybrid")
_ENTRY = _HYBRID["hybrid.<i>.<option>"]
_FACTORY = _HYBRID["factory"]
_FACTORY_BOUNDEDNESS = _HYBRID["boundedness"]
_MARGIN = _HYBRID["startAtPreviousEndMinusMs"]
_RETENTION_CHECK = _HYBRID["hybrid.retentionCheckIntervalMs"]
_RETENTION_WARNING = _HYBRID["hybrid.retentionWarningMs"]


@dataclass(frozen=True)
class SourceSwitchContext:
    """What a factory gets at switch time: the previous source's end state (FLIP-150).

    Parameters
    ----------
    previous_source_index : int
        The index of the source that just ended.
    previous_max_event_time_ms : int or None
        The largest event time it read (epoch milliseconds), if it knew event times.
    details : dict of str to str
        The previous source's own end details (e.g. a file source's last file).
    splits : list of dict
        Its splits' end states.

    Examples
    --------
    >>> def live(ctx: SourceSwitchContext) -> Source:
    ...     start = OffsetsInitializer.timestamp(ctx.previous_max_event_time_ms or 0)
    ...     return KafkaSource.builder().bootstrap_servers("broker:9092").topics("events") \\
    ...         .starting_offsets(start).build()
    """

    previous_source_index: int
    previous_max_event_time_ms: int | None
    details: dict[str, str] = field(default_factory=dict)
    splits: list[dict[str, Any]] = field(default_factory=list)


def _classic_session() -> Any:
    spark = active_classic_session()
    if spark is None:
        raise SluiceConfigError(
            "HybridSource: a Python factory needs an active classic SparkSession (the JVM calls it "
            "back over py4j); under Spark Connect use add_source(..., start_at_previous_end_minus=...)."
        )
    return spark


class _FactoryCallback:
    """The JVM calls this back over py4j when the switch happens."""

    def __init__(self, factory: Callable[[SourceSwitchContext], Source], gateway: Any) -> None:
        self._factory = factory
        self._gateway = gateway

    def create(self, context_json: str) -> Any:
        raw = json.loads(context_json)
        context = SourceSwitchContext(
            raw["previous_source_index"], raw.get("previous_max_event_time_ms"), raw["details"], raw["splits"]
        )
        options = self._factory(context).options
        jmap = self._gateway.jvm.java.util.HashMap()
        for key, value in options.items():
            jmap.put(key, value)
        return jmap

    class Java:
        implements = ["sluice.hybrid.PythonSourceFactoryCallback"]


class HybridSource(Source):
    """Reads its sources one after the other in one query; every source but the last is bounded.

    A hybrid with Python factories owns them in the driver's JVM (only their ids are in its
    options): give them up with ``release()``, or use the hybrid as a context manager, once it will
    start no more queries. Queries running then keep theirs until they stop; a query started from a
    released hybrid fails, saying to define it again. Left unreleased, they go when the
    SparkContext stops.

    Examples
    --------
    >>> source = (HybridSource.builder(history)
    ...           .add_source(live, start_at_previous_end_minus=timedelta(minutes=1)).build())
    >>> df = sluice.from_source(spark, source, name="events")
    """

    def __init__(self, options: dict[str, str], factory_ids: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self._factory_ids = tuple(factory_ids)

    @staticmethod
    def builder(first: Source) -> HybridSourceBuilder:
        """A builder of a hybrid that reads ``first`` first.

        Parameters
        ----------
        first : Source
            The first source; bounded, unless it is the only one.

        Returns
        -------
        HybridSourceBuilder

        Examples
        --------
        >>> HybridSource.builder(history).add_source(live).build()
        """
        return HybridSourceBuilder(first)

    def release(self) -> None:
        """Gives up this hybrid's factories (and with them the JVM's hold on the Python callables).

        Releasing twice is harmless. Without a SparkContext there is nothing to give up: the
        factories went with the one that held them. Release once no query will start from this
        hybrid again and those started have read their first batch (or stopped): Spark builds a
        query's source after ``start()`` returns, and a hybrid released before that is gone for it.

        Examples
        --------
        >>> with HybridSource.builder(history).add_source_factory(live, bounded=False).build() as hybrid:
        ...     query = sluice.from_source(spark, hybrid).writeStream.format("noop").start()
        ...     query.awaitTermination()
        """
        from pyspark import SparkContext

        # the factories live in the JVM, not in a session: any thread may release them
        context = SparkContext._active_spark_context  # noqa: SLF001
        jvm = None if context is None else context._jvm  # noqa: SLF001
        if jvm is not None:
            for factory_id in self._factory_ids:
                jvm.sluice.hybrid.PythonSourceFactory.release(factory_id)
        self._factory_ids = ()

    def __enter__(self) -> HybridSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class HybridSourceBuilder(_Builder["HybridSourceBuilder"]):
    """Builds a :class:`HybridSource` from its sources, in reading order.

    Parameters
    ----------
    first : Source
        The first source.

    Examples
    --------
    >>> HybridSource.builder(history).add_source(live, start_at_previous_end_minus=60_000)
    """

    _source_type = "hybrid"
    _source_class = HybridSource

    def __init__(self, first: Source) -> None:
        super().__init__()
        self._count = 0
        # (index, callable): registered by build(), once per hybrid built, so each owns its own
        self._factories: list[tuple[int, Callable[[SourceSwitchContext], Source]]] = []
        self._add(first.options)

    def _add(self, options: dict[str, str]) -> HybridSourceBuilder:
        for key, value in options.items():
            self._options[_ENTRY.fill(i=self._count, option=key)] = value
        self._count += 1
        self._options[self._key("hybrid.sources")] = str(self._count)
        return self

    def add_source_factory(
        self, factory: Callable[[SourceSwitchContext], Source], *, bounded: bool
    ) -> HybridSourceBuilder:
        """Adds a source built at switch time by a Python callable from the previous end state.

        Classic PySpark only (the JVM calls back into this Python process); under Spark Connect use
        ``add_source(..., start_at_previous_end_minus=...)``.

        Parameters
        ----------
        factory : callable
            Takes a :class:`SourceSwitchContext`, returns the next :class:`Source`.
        bounded : bool
            Whether the source it builds is bounded (every source but the last must be).

        Returns
        -------
        HybridSourceBuilder

        Raises
        ------
        SluiceConfigError
            Without an active classic SparkSession (e.g. under Spark Connect).

        Examples
        --------
        >>> HybridSource.builder(history).add_source_factory(
        ...     lambda ctx: live_from(ctx.previous_max_event_time_ms), bounded=False)
        """
        _classic_session()  # fails now, not at build(), under Spark Connect
        self._factories.append((self._count, factory))
        return self._add({_FACTORY_BOUNDEDNESS.name: "bounded" if bounded else "unbounded"})

    def build(self) -> HybridSource:
        """The hybrid, its Python factories registered in the driver's JVM (see
        :meth:`HybridSource.release`).

        Returns
        -------
        HybridSource

        Raises
        ------
        SluiceConfigError
            An option of the hybrid or of one of its sources is not allowed.

        Examples
        --------
        >>> hybrid = HybridSource.builder(history).add_source(live).build()
        """
        if not self._factories:
            return HybridSource(super().build().options)
        spark = _classic_session()
        from pyspark.java_gateway import ensure_callback_server_started

        gateway = spark.sparkContext._gateway  # noqa: SLF001 - py4j callbacks need the gateway
        ensure_callback_server_started(gateway)
        options, ids = dict(self._options), []
        try:
            for index, factory in self._factories:
                factory_id = spark._jvm.sluice.hybrid.PythonSourceFactory.register(
                    _FactoryCallback(factory, gateway)
                )  # noqa: SLF001
                ids.append(factory_id)
                options[_ENTRY.fill(i=index, option=_FACTORY.name)] = factory_id
            self._validate(options)
        except BaseException:
            HybridSource(options, tuple(ids)).release()  # a hybrid that failed to build owns nothing
            raise
        return HybridSource(options, tuple(ids))

    def retention_check(self, interval: Duration, warn_below: Duration) -> HybridSourceBuilder:
        """While the bounded sources are read, checks that the next source, if it is Kafka, still
        holds the records its start will need; the query fails before the switch once they are gone
        (metric ``retentionHeadroomMs``; see docs/hybrid.md).

        Parameters
        ----------
        interval : datetime.timedelta or int
            How often at most to check (0: never); a ``timedelta`` or milliseconds.
        warn_below : datetime.timedelta or int
            Logs a warning while the records can be deleted within this.

        Returns
        -------
        HybridSourceBuilder

        Examples
        --------
        >>> HybridSource.builder(history).add_source(live).retention_check(
        ...     interval=timedelta(minutes=1), warn_below=timedelta(hours=6))
        """
        for declared_option, value, what in (
            (_RETENTION_CHECK, interval, "interval"),
            (_RETENTION_WARNING, warn_below, "warn_below"),
        ):
            ms = millis(value, what, negative=True)  # the declared range words the refusal
            declared_option.check_early(ms, "HybridSource", declared_option.name)
            self._options[self._key(declared_option.name)] = str(ms)
        return self

    def add_source(
        self,
        source: Source,
        *,
        start_at_previous_end_minus: Duration | None = None,
        start_at_previous_end_minus_ms: int | None = None,
    ) -> HybridSourceBuilder:
        """Adds the next source.

        Parameters
        ----------
        source : Source
            The next source; bounded, unless it is the last.
        start_at_previous_end_minus : datetime.timedelta or int, optional
            The source (a Kafka source) starts at the largest event time the previous source read,
            minus this margin (a ``timedelta`` or milliseconds), decided when the switch happens —
            declaratively, so no Python runs at switch time and it works under Spark Connect too.
            If the previous source had no event time, the source's own start positions apply.
        start_at_previous_end_minus_ms : int, optional
            Deprecated alias of ``start_at_previous_end_minus`` (removed in the next release).

        Returns
        -------
        HybridSourceBuilder

        Examples
        --------
        >>> HybridSource.builder(history).add_source(live, start_at_previous_end_minus=timedelta(minutes=1))
        """
        if start_at_previous_end_minus_ms is not None:
            if start_at_previous_end_minus is not None:
                raise TypeError(
                    "give start_at_previous_end_minus only (start_at_previous_end_minus_ms is its old name)"
                )
            renamed("start_at_previous_end_minus_ms", "start_at_previous_end_minus")
            start_at_previous_end_minus = legacy_millis(start_at_previous_end_minus_ms)
        options = dict(source.options)
        if start_at_previous_end_minus is not None:
            margin = millis(start_at_previous_end_minus, "start_at_previous_end_minus", negative=True)
            # checked now, not at build(): under Spark Connect nothing checks before the query starts
            _MARGIN.check_early(margin, "HybridSource", _ENTRY.fill(i=self._count, option=_MARGIN.name))
            options[_MARGIN.name] = str(margin)
        return self._add(options)

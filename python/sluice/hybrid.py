"""The hybrid source builder (FLIP-150), mirroring ``sluice.hybrid.HybridSource.builder`` in Scala."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

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


def _ms(value: timedelta | int, what: str) -> int:
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{what} must be a datetime.timedelta or milliseconds as an int, not {value!r}")


@dataclass(frozen=True)
class SourceSwitchContext:
    """What a factory gets at switch time: the previous source's end state."""

    previous_source_index: int
    previous_max_event_time_ms: int | None
    details: dict[str, str] = field(default_factory=dict)
    splits: list[dict[str, Any]] = field(default_factory=list)


def _classic_session() -> Any:
    spark = active_classic_session()
    if spark is None:
        raise SluiceConfigError(
            "HybridSource: a Python factory needs an active classic SparkSession (the JVM calls it "
            "back over py4j); under Spark Connect use add_source(..., start_at_previous_end_minus_ms=...)."
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
    """

    def __init__(self, options: dict[str, str], factory_ids: tuple[str, ...] = ()) -> None:
        super().__init__(options)
        self._factory_ids = tuple(factory_ids)

    @staticmethod
    def builder(first: Source) -> HybridSourceBuilder:
        return HybridSourceBuilder(first)

    def release(self) -> None:
        """Gives up this hybrid's factories (and with them the JVM's hold on the Python callables).

        Releasing twice is harmless. Without a SparkContext there is nothing to give up: the
        factories went with the one that held them. Release once no query will start from this
        hybrid again and those started have read their first batch (or stopped): Spark builds a
        query's source after ``start()`` returns, and a hybrid released before that is gone for it.
        """
        from pyspark import SparkContext

        # the factories live in the JVM, not in a session: any thread may release them
        context = SparkContext._active_spark_context  # noqa: SLF001
        if context is not None:
            for factory_id in self._factory_ids:
                context._jvm.sluice.hybrid.PythonSourceFactory.release(factory_id)  # noqa: SLF001
        self._factory_ids = ()

    def __enter__(self) -> HybridSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class HybridSourceBuilder(_Builder["HybridSourceBuilder"]):
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
        ``add_source(..., start_at_previous_end_minus_ms=...)``. ``bounded`` says whether the
        source it builds is bounded (every source but the last must be).
        """
        _classic_session()  # fails now, not at build(), under Spark Connect
        self._factories.append((self._count, factory))
        return self._add({_FACTORY_BOUNDEDNESS.name: "bounded" if bounded else "unbounded"})

    def build(self) -> HybridSource:
        """The hybrid, its Python factories registered in the driver's JVM (see ``HybridSource.release``)."""
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

    def retention_check(self, interval: timedelta | int, warn_below: timedelta | int) -> HybridSourceBuilder:
        """While the bounded sources are read, checks at most every ``interval`` (0: never) that the
        next source, if it is Kafka, still holds the records its start will need, and logs a warning
        while they can be deleted within ``warn_below``; the query fails before the switch once they
        are gone (metric ``retentionHeadroomMs``; see docs/hybrid.md)."""
        for declared_option, value, what in (
            (_RETENTION_CHECK, interval, "interval"),
            (_RETENTION_WARNING, warn_below, "warn_below"),
        ):
            ms = _ms(value, what)
            declared_option.check_early(ms, "HybridSource", declared_option.name)
            self._options[self._key(declared_option.name)] = str(ms)
        return self

    def add_source(
        self, source: Source, *, start_at_previous_end_minus_ms: int | None = None
    ) -> HybridSourceBuilder:
        """Adds the next source.

        With ``start_at_previous_end_minus_ms``, the source (a Kafka source) starts at the largest
        event time the previous source read, minus that margin, decided when the switch happens —
        declaratively, so no Python runs at switch time and it works under Spark Connect too. If the
        previous source had no event time, the source's own start positions apply.
        """
        options = dict(source.options)
        if start_at_previous_end_minus_ms is not None:
            margin = int(start_at_previous_end_minus_ms)
            # checked now, not at build(): under Spark Connect nothing checks before the query starts
            _MARGIN.check_early(margin, "HybridSource", _ENTRY.fill(i=self._count, option=_MARGIN.name))
            options[_MARGIN.name] = str(margin)
        return self._add(options)

"""Watermark strategies (Flink's WatermarkStrategy), mirroring ``sluice.eventtime.WatermarkStrategy``.

A strategy is a set of options the source understands; each ``with_*`` returns a new strategy::

    WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=30)) \\
        .with_idleness(timedelta(minutes=1)) \\
        .with_watermark_alignment("orders", max_drift=timedelta(minutes=5))

``max_drift="auto"`` takes the drift from the query's ``withWatermark`` delay instead.

Under any strategy but ``no_watermarks()`` the rows gain an ``event_time`` column to hand to
Spark's ``withWatermark``; ``with_event_time_column("et")`` names it otherwise (for a source that
already has a column ``event_time``).
"""

from __future__ import annotations

from typing import Literal

from sluice._durations import Duration, millis
from sluice._options import declared

# The strategy's options are read options of the binding, declared with the JVM's EventTimeSettings.
_READ = declared("read")
_KIND = _READ["watermark.kind"].name
_MAX_OUT_OF_ORDERNESS = _READ["watermark.maxOutOfOrdernessMs"].name
_TIMESTAMP_COLUMN = _READ["watermark.timestampColumn"].name
_EVENT_TIME_COLUMN = _READ["watermark.eventTimeColumn"]
_IDLE_TIMEOUT = _READ["watermark.idleTimeoutMs"].name
_GROUP = _READ["watermark.alignment.group"].name
_MAX_DRIFT = _READ["watermark.alignment.maxDriftMs"].name
_UPDATE_INTERVAL = _READ["watermark.alignment.updateIntervalMs"].name
# the value of watermark.alignment.maxDriftMs that asks for the drift from the query's watermark:
# the one word it allows besides integers
(_AUTO,) = (_READ["watermark.alignment.maxDriftMs"].values or {}).get("words", [])
_ALLOW_UNALIGNED = _READ["watermark.alignment.allowUnalignedSourceSplits"].name


class WatermarkStrategy:
    """How a source derives event time and watermarks; immutable: each ``with_*`` returns a new one.

    Made by :meth:`no_watermarks`, :meth:`for_bounded_out_of_orderness` or
    :meth:`for_monotonous_timestamps`; given to :func:`sluice.from_source`. Durations are
    ``datetime.timedelta``s or milliseconds as ``int``s. See docs/event-time.md.

    Parameters
    ----------
    options : dict of str to str
        The read options the strategy stands for.

    Examples
    --------
    >>> strategy = (WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=30))
    ...             .with_idleness(timedelta(minutes=1))
    ...             .with_watermark_alignment("orders", max_drift=timedelta(minutes=5)))
    >>> df = sluice.from_source(spark, source, strategy, name="orders")
    """

    def __init__(self, options: dict[str, str]) -> None:
        self._options = dict(options)

    @property
    def options(self) -> dict[str, str]:
        """The read options of ``format("sluice")`` this strategy stands for."""
        return dict(self._options)

    def _with(self, updates: dict[str, str]) -> WatermarkStrategy:
        return WatermarkStrategy({**self._options, **updates})

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No event time: the source emits no watermarks and rows carry no event-time column.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.no_watermarks()
        WatermarkStrategy({'watermark.kind': 'none'})
        """
        return WatermarkStrategy({_KIND: "none"})

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        """Watermark = largest event time seen in a split minus ``max_out_of_orderness``.

        Parameters
        ----------
        max_out_of_orderness : datetime.timedelta or int
            How late a record may be behind the largest event time seen; ``timedelta`` or ms.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_bounded_out_of_orderness(timedelta(seconds=30))
        """
        ms = millis(max_out_of_orderness, "max_out_of_orderness")
        return WatermarkStrategy({_KIND: "boundedOutOfOrderness", _MAX_OUT_OF_ORDERNESS: str(ms)})

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Event time never decreases within a split: watermark = largest event time seen.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps()
        WatermarkStrategy({'watermark.kind': 'monotonous'})
        """
        return WatermarkStrategy({_KIND: "monotonous"})

    def with_timestamp_column(self, column: str) -> WatermarkStrategy:
        """Event time from a column of the source's rows instead of the connector's record time
        (the Kafka record timestamp).

        Parameters
        ----------
        column : str
            A TIMESTAMP, or a BIGINT of epoch milliseconds.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps().with_timestamp_column("ts")
        """
        return self._with({_TIMESTAMP_COLUMN: column})

    def with_event_time_column(self, name: str) -> WatermarkStrategy:
        """Names the column the strategy adds to every row (default ``event_time``); it must not
        be a column the source already has. For a source whose own ``event_time`` holds the event
        time: ``.with_timestamp_column("event_time").with_event_time_column("et")``.

        Parameters
        ----------
        name : str
            The added column's name.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps().with_event_time_column("et")
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {name!r}")
        _EVENT_TIME_COLUMN.check_early(name, "WatermarkStrategy", _EVENT_TIME_COLUMN.name)
        return self._with({_EVENT_TIME_COLUMN.name: name})

    def with_idleness(self, timeout: Duration) -> WatermarkStrategy:
        """A split that reads nothing for ``timeout`` (while not paused) turns idle: it no longer
        holds the watermark or the alignment group back.

        Parameters
        ----------
        timeout : datetime.timedelta or int
            A ``timedelta``, or milliseconds.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps().with_idleness(timedelta(minutes=1))
        """
        return self._with({_IDLE_TIMEOUT: str(millis(timeout, "timeout"))})

    def with_watermark_alignment(
        self,
        group: str,
        max_drift: Duration | Literal["auto"],
        update_interval: Duration | None = None,
    ) -> WatermarkStrategy:
        """Keeps this source's splits, and the sources of the query naming ``group``, within
        ``max_drift`` of the slowest of them by pausing what runs ahead.

        ``max_drift="auto"`` takes the largest drift that cannot make Spark drop a lagging split's
        records: the ``withWatermark`` delay the query puts on the event-time column, minus this
        strategy's out-of-orderness, minus 1 ms (Spark drops a row at its watermark). It is resolved when the query starts (by the Sluice
        extensions, which ``sluice.configure`` installs); a query without such a
        ``withWatermark``, or with a delay smaller than the out-of-orderness, fails to start.

        Parameters
        ----------
        group : str
            The alignment group; sources of one query naming it align with each other.
        max_drift : datetime.timedelta or int or "auto"
            How far ahead of the slowest split a split may read (``timedelta`` or ms), or ``"auto"``.
        update_interval : datetime.timedelta or int, optional
            How often the group's limit is recomputed in real-time and continuous mode.

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps().with_watermark_alignment(
        ...     "orders", max_drift=timedelta(minutes=5))
        """
        if isinstance(max_drift, str):
            if max_drift.strip().lower() != _AUTO:
                raise ValueError(
                    f"max_drift must be a datetime.timedelta, milliseconds as an int, or 'auto', not {max_drift!r}"
                )
            drift = _AUTO
        else:
            drift = str(millis(max_drift, "max_drift"))
        updates = {_GROUP: group, _MAX_DRIFT: drift}
        if update_interval is not None:
            updates[_UPDATE_INTERVAL] = str(millis(update_interval, "update_interval"))
        return self._with(updates)

    def with_allow_unaligned_source_splits(self, allow: bool = True) -> WatermarkStrategy:
        """Lets a reader that cannot pause splits align as a whole only (FLIP-182).

        Parameters
        ----------
        allow : bool, default True

        Returns
        -------
        WatermarkStrategy

        Examples
        --------
        >>> WatermarkStrategy.for_monotonous_timestamps().with_allow_unaligned_source_splits()
        """
        return self._with({_ALLOW_UNALIGNED: str(bool(allow)).lower()})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WatermarkStrategy) and other._options == self._options

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._options.items())))

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self._options})"

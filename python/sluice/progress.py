"""The progress of streaming queries, kept per query for status views and plots.

A :class:`~pyspark.sql.streaming.StreamingQueryListener` registered by :func:`watch` keeps, per
query id, the last ``history`` batches' progress: when each batch ran and what each source
reported (``sources[i].metrics``). Nothing else is read: no private JVM state, no polling; each
progress event costs the driver one call into the JVM (:mod:`sluice._listener`). A query that ran
before ``watch`` was called, or batches the listener has not been told about yet (Spark delivers
progress events asynchronously), are filled in from ``query.recentProgress``, which Spark keeps
for every query.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StreamingQueryListener

from sluice._jvm import is_remote
from sluice._listener import add_listener, remove_listener

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

DEFAULT_HISTORY = 500
"""Batches kept per query."""

MAX_QUERIES = 100
"""Queries kept; the one whose progress came least recently is forgotten first."""


@dataclass(frozen=True)
class SourceReport:
    """What one source reported for one batch.

    Examples
    --------
    >>> report = batches(query)[-1].sources[0]
    >>> int(report.metrics["recordsRead"]), report.num_input_rows
    (1200, 300)
    """

    description: str
    metrics: dict[str, str]
    num_input_rows: int


@dataclass(frozen=True)
class BatchReport:
    """One batch of a query: when it started, how long it took, what its sources reported.

    Examples
    --------
    >>> last = batches(query)[-1]
    >>> last.batch_id, last.duration_ms, len(last.sources)
    (7, 412, 1)
    """

    batch_id: int
    run_id: str
    started: datetime
    duration_ms: int
    sources: tuple[SourceReport, ...]

    @property
    def ended_s(self) -> float:
        """When the batch ended, in seconds since the epoch."""
        return self.started.timestamp() + self.duration_ms / 1000.0


def _parse_time(text: str) -> datetime:
    # Spark writes progress timestamps as ISO-8601 in UTC with a 'Z'
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _report(progress: Any) -> BatchReport:
    """A BatchReport from PySpark's StreamingQueryProgress (from the listener or recentProgress)."""
    return BatchReport(
        batch_id=int(progress.batchId),
        run_id=str(progress.runId),
        started=_parse_time(progress.timestamp),
        duration_ms=int((progress.durationMs or {}).get("triggerExecution", 0)),
        sources=tuple(
            SourceReport(s.description, dict(s.metrics or {}), int(s.numInputRows or 0))
            for s in progress.sources
        ),
    )


class _History:
    """Per query id, the last batches, in batch order; safe across py4j's callback threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, deque[BatchReport]] = OrderedDict()
        self.limit = DEFAULT_HISTORY

    def add(self, query_id: str, batch: BatchReport) -> None:
        with self._lock:
            batches = self._queries.get(query_id)
            if batches is None or batches.maxlen != self.limit:
                batches = deque(batches or (), maxlen=self.limit)
            # a batch re-run after a restart (same id, new run) replaces the one kept
            kept = [b for b in batches if b.batch_id != batch.batch_id]
            kept.append(batch)
            kept.sort(key=lambda b: (b.batch_id, b.started))
            self._queries[query_id] = deque(kept, maxlen=self.limit)
            self._queries.move_to_end(query_id)
            while len(self._queries) > MAX_QUERIES:
                self._queries.popitem(last=False)

    def get(self, query_id: str) -> list[BatchReport]:
        with self._lock:
            return list(self._queries.get(query_id, ()))


_history = _History()

_watch_lock = threading.Lock()


class _ProgressListener(StreamingQueryListener):
    """Keeps every query's progress in the module's history."""

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - PySpark's interface
        pass

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        progress = event.progress
        # a batch without data (noDataMicroBatch, or a trigger that found nothing) has no sources
        if progress.sources:
            _history.add(str(progress.id), _report(progress))

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        pass  # kept: a finished query's status is what users look at afterwards


_watched: dict[int, Any] = {}
"""The JVM listener of each session watched (:func:`sluice._listener.add_listener`), by the session's
identity."""


def watch(spark: SparkSession, history: int = DEFAULT_HISTORY) -> None:
    """Keeps the progress of ``spark``'s streaming queries for :func:`sluice.status` and :func:`sluice.plot`.

    Registers one listener per Spark session (calling it again only changes ``history``, the
    batches kept per query). ``status`` and ``plot`` call it themselves; call it before starting
    queries to keep more than the batches Spark itself remembers
    (``spark.sql.streaming.numRecentProgressUpdates``, 100 by default). Under Spark Connect no
    listener is registered: the listener would run in the server, so the history is then what
    ``query.recentProgress`` holds.

    Parameters
    ----------
    spark : SparkSession
        The session whose queries to watch.
    history : int, default DEFAULT_HISTORY
        Batches kept per query, at least 2.

    Examples
    --------
    >>> sluice.watch(spark, history=1000)
    """
    if history < 2:
        raise ValueError(f"history must keep at least 2 batches, got {history}")
    _history.limit = history
    if is_remote(spark):
        return
    with _watch_lock:
        key = _session_key(spark)
        if key not in _watched:
            _watched[key] = add_listener(spark, _ProgressListener())


def unwatch(spark: SparkSession) -> None:
    """Removes the listener :func:`watch` registered on ``spark``; the batches kept so far stay.

    Parameters
    ----------
    spark : SparkSession
        The session :func:`watch` was called with.

    Examples
    --------
    >>> sluice.unwatch(spark)
    """
    if is_remote(spark):
        return
    with _watch_lock:
        jlistener = _watched.pop(_session_key(spark), None)
        if jlistener is not None:
            remove_listener(spark, jlistener)


def _session_key(spark: SparkSession) -> int:
    # the JVM session's identity: Python wrappers of one session may differ
    return spark._jsparkSession.hashCode()  # noqa: SLF001 - the JVM session the listener is on


def _session_of(query: StreamingQuery) -> SparkSession | None:
    """The session a query runs in: a Connect query knows it; a classic one's is the active one.
    None when no session is active (e.g. a thread that never set one): a query's status must not
    create a session as a side effect."""
    session: SparkSession | None = getattr(query, "_session", None)  # Spark Connect's StreamingQuery
    if session is not None:
        return session
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def batches(query: StreamingQuery) -> list[BatchReport]:
    """The query's batches kept so far (oldest first), with what Spark's own recent progress adds.

    Without an active session no listener is registered: what Spark keeps is what there is.

    Parameters
    ----------
    query : StreamingQuery
        A query of this session.

    Returns
    -------
    list of BatchReport
        Its batches, oldest first.

    Examples
    --------
    >>> [b.batch_id for b in batches(query)]
    [0, 1, 2]
    """
    session = _session_of(query)
    if session is not None:
        watch(session, _history.limit)
    query_id = str(query.id)
    known = {(b.batch_id, b.run_id) for b in _history.get(query_id)}
    for progress in query.recentProgress:
        if progress.sources and (int(progress.batchId), str(progress.runId)) not in known:
            _history.add(query_id, _report(progress))
    return _history.get(query_id)

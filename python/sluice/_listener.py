"""Streaming query listeners on a classic session's JVM whose progress events cost one py4j call.

PySpark's ``spark.streams.addListener`` copies every progress event field by field over py4j:
dozens of calls into the driver JVM per batch, and each Java map or list it copies (the
durations, the sources, each source's metrics) ends its iteration with a JVM exception
(``NoSuchElementException``), which PySpark converts by asking the JVM whether it is one of a
dozen classes, each question a search of Spark's jars for a class that is not there. Over the
Python test suite, 322 of the 567 exceptions PySpark converted were such ends of an iteration in
a listener: with the listeners here, 245 were left.

A listener added here receives the same events; a progress event is built from the event's JSON
(one call into the JVM), as PySpark's own ``StreamingQuery.lastProgress`` builds a progress. An
event whose JSON lacks a field PySpark requires (Spark leaves a non-finite rate out) and the
started, idle and terminated events, few and cheap, take PySpark's own conversion.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from sluice._jvm import driver_jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class _Events:
    """The JVM's side of a listener (PySpark's ``PythonStreamingQueryListener`` interface, called
    back through py4j): hands each event to ``listener`` as PySpark's event types."""

    def __init__(self, listener: StreamingQueryListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:  # noqa: N802 - the JVM interface's names
        self._listener.onQueryStarted(QueryStartedEvent.fromJObject(jevent))

    def onQueryProgress(self, jevent: Any) -> None:  # noqa: N802
        try:
            event = QueryProgressEvent.fromJson(json.loads(jevent.json()))
        except KeyError:
            # Spark leaves a non-finite rate (two triggers in one millisecond) out of the JSON,
            # which PySpark's fromJson requires: this event takes PySpark's own conversion
            event = QueryProgressEvent.fromJObject(jevent)
        self._listener.onQueryProgress(event)

    def onQueryIdle(self, jevent: Any) -> None:  # noqa: N802
        self._listener.onQueryIdle(QueryIdleEvent.fromJObject(jevent))

    def onQueryTerminated(self, jevent: Any) -> None:  # noqa: N802
        self._listener.onQueryTerminated(QueryTerminatedEvent.fromJObject(jevent))

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]  # noqa: RUF012 - py4j's


def add_listener(spark: SparkSession, listener: StreamingQueryListener) -> Any:
    """Adds ``listener`` to the queries of ``spark`` (a classic session); returns the JVM's
    listener, which :func:`remove_listener` takes."""
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)  # noqa: SLF001 - py4j's callbacks
    jvm = driver_jvm(spark)
    jlistener = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(_Events(listener))
    spark._jsparkSession.streams().addListener(jlistener)  # noqa: SLF001 - the JVM session's manager
    return jlistener


def remove_listener(spark: SparkSession, jlistener: Any) -> None:
    """Removes a listener :func:`add_listener` added."""
    spark._jsparkSession.streams().removeListener(jlistener)  # noqa: SLF001

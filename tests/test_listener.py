"""sluice._listener builds progress events from the event's JSON, and falls back to PySpark's own
conversion when Spark's JSON lacks a field PySpark requires (a non-finite rate is left out)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql.streaming.listener import QueryProgressEvent, StreamingQueryListener
from sluice._listener import _Events


def progress_json(source_rates: bool = True) -> dict[str, Any]:
    """A progress as Spark 4.3 writes it (`StreamingQueryListener.QueryProgressEvent.json`)."""
    source: dict[str, Any] = {
        "description": "sluice[kafka]",
        "startOffset": {"p": 0},
        "endOffset": {"p": 3},
        "latestOffset": {"p": 3},
        "numInputRows": 3,
        "metrics": {"recordsRead": "3", "alignment.group": "g"},
    }
    if source_rates:  # Spark writes a rate only when it is finite
        source |= {"inputRowsPerSecond": 1.5, "processedRowsPerSecond": 2.0}
    return {
        "progress": {
            "id": "2b4f0e4c-8f1b-4c55-9b1e-0c8f5a3d2e10",
            "runId": "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d",
            "name": "q",
            "timestamp": "2026-11-29T12:00:00.000Z",
            "batchId": 7,
            "batchDuration": 412,
            "numInputRows": 3,
            "durationMs": {"triggerExecution": 412},
            "stateOperators": [],
            "sources": [source],
            "sink": {"description": "MemorySink", "numOutputRows": 3},
        }
    }


class FakeEvent:
    """What py4j hands the callback: a JVM event whose `json()` is Spark's JSON."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def json(self) -> str:
        return json.dumps(self.document)


class Kept(StreamingQueryListener):
    def __init__(self) -> None:
        self.progress: list[QueryProgressEvent] = []

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - PySpark's interface
        pass

    def onQueryProgress(self, event: QueryProgressEvent) -> None:  # noqa: N802
        self.progress.append(event)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        pass


def test_a_progress_event_is_built_from_its_json() -> None:
    kept = Kept()
    _Events(kept).onQueryProgress(FakeEvent(progress_json()))
    [event] = kept.progress
    progress = event.progress
    assert (progress.batchId, str(progress.runId), progress.durationMs) == (
        7,
        "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d",
        {"triggerExecution": 412},
    )
    [source] = progress.sources
    assert (source.description, source.numInputRows, source.metrics) == (
        "sluice[kafka]",
        3,
        {"recordsRead": "3", "alignment.group": "g"},
    )


def test_an_event_without_a_rate_in_its_json_takes_pysparks_conversion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    converted = object()
    handed: list[object] = []

    def from_jobject(jevent: object) -> object:
        handed.append(jevent)
        return converted

    monkeypatch.setattr(QueryProgressEvent, "fromJObject", staticmethod(from_jobject))
    kept = Kept()
    event = FakeEvent(progress_json(source_rates=False))
    _Events(kept).onQueryProgress(event)
    assert handed == [event]
    assert kept.progress == [converted]

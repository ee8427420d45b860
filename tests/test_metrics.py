"""sluice.status and sluice.plot read query-progress metrics by the types the JVM declares
(python/sluice/_metrics.json)."""

from __future__ import annotations

from importlib import resources

import pytest
from pyspark.sql import SparkSession
from sluice import _metrics


def test_shipped_metric_declarations_are_the_jvms(spark: SparkSession) -> None:
    shipped = resources.files("sluice").joinpath("_metrics.json").read_text("utf-8")
    printed = spark._jvm.sluice.spark.MetricDeclarations.json()  # noqa: SLF001
    assert shipped == printed, "python/sluice/_metrics.json is stale: regenerate it with `make docs`"


def test_values_are_read_by_their_declared_type() -> None:
    metrics = {
        "recordsRead": "12",
        "avgOffsetsBehindLatest": "2.5",
        "alignment.maxDriftAuto": "true",
        "recordsPerSource": "600,400,200",
        "splitProgress": '[{"split":"0:events-0","records":3}]',
        "sourceType": "hybrid",
        "backlogRecords": "",
    }
    assert _metrics.value(metrics, "recordsRead") == 12
    assert _metrics.value(metrics, "avgOffsetsBehindLatest") == 2.5
    assert _metrics.value(metrics, "alignment.maxDriftAuto") is True
    assert _metrics.value(metrics, "recordsPerSource") == [600, 400, 200]
    assert _metrics.value(metrics, "splitProgress") == [{"split": "0:events-0", "records": 3}]
    assert _metrics.value(metrics, "sourceType") == "hybrid"
    # not reported (or empty): None, and no splits for a per-split list
    assert _metrics.value(metrics, "backlogRecords") is None
    assert _metrics.value(metrics, "maxEventTimeMs") is None
    assert _metrics.value(metrics, "watermark.splits") == []
    assert {m.kind for m in _metrics.METRICS.values()} <= {
        "long",
        "double",
        "boolean",
        "text",
        "longList",
        "jsonList",
    }
    assert set(_metrics.declared("splitProgress").fields) == {
        "split",
        "records",
        "position",
        "available",
        "backlogRecords",
        "maxEventTimeMs",
    }
    with pytest.raises(KeyError, match="make docs"):
        _metrics.value(metrics, "recordsPerMember")


def test_a_hybrid_split_id_names_its_member_in_the_jvms_format() -> None:
    sep = _metrics.HYBRID_SPLIT_ID_SEPARATOR
    assert _metrics.hybrid_member("hybrid", f"1{sep}events-0") == (1, "events-0")
    assert _metrics.hybrid_member("hybrid", f"0{sep}file:/data/a.json") == (0, "file:/data/a.json")
    assert _metrics.hybrid_member("file", "file:/data/a.json") == (None, "file:/data/a.json")
    assert _metrics.hybrid_member("kafka", "events-0") == (None, "events-0")

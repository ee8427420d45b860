"""``sluice.status(query)``: where each split of a query's Sluice sources stands, as a table.

Everything comes from the query's progress (``sources[i].metrics``, see docs/observability.md),
kept by the listener of :mod:`sluice.progress`: ``splitProgress`` (per split: records read,
backlog, largest event time), ``watermark.splits`` (per split: watermark, paused, idle, finished and
why), the alignment group's limit, and a hybrid's active member.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sluice._metrics import hybrid_member, value
from sluice.progress import BatchReport, SourceReport, batches

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from sluice._status_table import StatusTable

COLUMNS = [
    "source",
    "source_type",
    "member",
    "member_type",
    "split",
    "state",
    "reason",
    "event_time",
    "watermark",
    "limit",
    "records",
    "backlog",
    "rate",
    "to_switch",
    "to_live",
    "lag",
    "retention_headroom",
]
"""The table's columns, in order (described in docs/observability.md)."""

DEFAULT_WINDOW = 5
"""Batches the rate is measured over."""

# A finished split holds the largest watermark there is: it constrains nobody.
_MAX_WATERMARK = 2**63 - 1

_STATES = {"finished": "finished", "alignment": "paused", "idleness": "idle"}
_REASONS = {
    "finished": "read to its end",
    "alignment": "alignment limit",
    "idleness": "idleness timeout",
}


def require_pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - pandas is PySpark's own optional dependency
        raise ImportError("sluice.status needs pandas: pip install 'spark-sluice[plot]' (or pandas)") from e
    return pandas


def is_sluice(source: SourceReport) -> bool:
    """Sluice's sources report their type and splits; Spark's own sources do not."""
    return "sourceType" in source.metrics and "splits" in source.metrics


def split_list(metrics: dict[str, str], key: str) -> list[dict[str, Any]]:
    """A per-split metric (``splitProgress``, ``watermark.splits``), read as the JVM declares it."""
    return value(metrics, key)


def member_of(source_type: str, split_id: str) -> int | None:
    """A hybrid's split id names its member (docs/hybrid.md); the format is the JVM's."""
    return hybrid_member(source_type, split_id)[0]


def int_metric(metrics: dict[str, str], key: str) -> int | None:
    """A whole-number metric, read as the JVM declares it."""
    return value(metrics, key)


@dataclass
class SourceHistory:
    """One source across the kept batches: the same index in every batch of the query."""

    index: int
    reports: list[tuple[BatchReport, SourceReport]] = field(default_factory=list)

    @property
    def last(self) -> SourceReport:
        return self.reports[-1][1]

    def member_types(self) -> dict[int, str]:
        """A hybrid member's type, as reported while it was active."""
        types: dict[int, str] = {}
        for _, s in self.reports:
            active = int_metric(s.metrics, "activeSource")
            if active is not None and s.metrics.get("activeSourceType"):
                types[active] = s.metrics["activeSourceType"]
        return types

    def switches(self) -> list[tuple[int, int]]:
        """(batch id, member switched to) wherever the active member changed between two kept batches."""
        found, previous = [], None
        for batch, s in self.reports:
            active = int_metric(s.metrics, "activeSource")
            if previous is not None and active is not None and active != previous:
                found.append((batch.batch_id, active))
            previous = active if active is not None else previous
        return found


def source_histories(kept: list[BatchReport]) -> list[SourceHistory]:
    """The Sluice sources of the last batch, each with its reports in the kept batches."""
    if not kept:
        return []
    last = kept[-1]
    histories = []
    for i, source in enumerate(last.sources):
        if not is_sluice(source):
            continue
        h = SourceHistory(i)
        for batch in kept:
            if i < len(batch.sources) and batch.sources[i].metrics.get("source") == source.metrics.get(
                "source"
            ):
                h.reports.append((batch, batch.sources[i]))
        histories.append(h)
    return histories


def split_rates(h: SourceHistory, window: int) -> dict[str, float]:
    """Records per second per split between the batch ``window`` batches back and the last one."""
    if len(h.reports) < 2:
        return {}
    (first_batch, first), (last_batch, last) = h.reports[max(0, len(h.reports) - 1 - window)], h.reports[-1]
    elapsed = last_batch.ended_s - first_batch.ended_s
    if elapsed <= 0:
        return {}
    before = {s["split"]: s.get("records", 0) for s in split_list(first.metrics, "splitProgress")}
    return {
        s["split"]: max(0, s.get("records", 0) - before.get(s["split"], 0)) / elapsed
        for s in split_list(last.metrics, "splitProgress")
    }


def status(query: StreamingQuery, window: int = DEFAULT_WINDOW, batch: int | None = None) -> StatusTable:
    """Where each split of the query's Sluice sources stands, as of the last batch.

    One row per source and split; ``sluice.STATUS_COLUMNS`` lists the columns and
    docs/observability.md describes them. ``rate`` is measured over the last ``window`` batches.
    ``batch`` shows the table as of an earlier batch id, if still kept (see :func:`sluice.watch`).
    Registers Sluice's progress listener on first use, on the session the query runs in (never
    creating one).

    Parameters
    ----------
    query : pyspark.sql.streaming.StreamingQuery
        A query reading Sluice sources (running or stopped).
    window : int, default 5
        Batches the ``rate`` column is measured over.
    batch : int, optional
        An earlier batch id to show the table as of.

    Returns
    -------
    pandas.DataFrame
        One row per source and split (a ``StatusTable``, which prints with its title).

    Raises
    ------
    ValueError
        ``batch`` is not kept, or ``window`` is below 1.

    Examples
    --------
    >>> sluice.status(query)[["split", "state", "event_time", "backlog"]]
    """
    pd = require_pandas()
    from sluice._status_table import StatusTable

    if window < 1:
        raise ValueError(f"window must be at least 1 batch, got {window}")
    kept = batches(query)
    if batch is not None:
        kept = [b for b in kept if b.batch_id <= batch]
        if not kept or kept[-1].batch_id != batch:
            raise ValueError(f"batch {batch} of query {query.name or query.id} is not kept (anymore)")
    now_ms = time.time() * 1000.0
    rows: list[dict[str, Any]] = []
    for h in source_histories(kept):
        rows.extend(_rows(pd, h, window, now_ms))
    table = StatusTable(rows, columns=COLUMNS)
    for column in ("member", "records", "backlog"):
        table[column] = table[column].astype("Int64")
    table["rate"] = table["rate"].astype("float64")
    name = query.name or str(query.id)
    table.title = (
        f"{name}: batch {kept[-1].batch_id}, {kept[-1].started:%Y-%m-%d %H:%M:%S} UTC" if kept else name
    )
    return table


def _state(
    reason: str | None, earlier_member: bool, backlog: int | None, rate: float | None
) -> tuple[str, str]:
    """The split's state and, when it does not read, why (``reason`` from ``watermark.splits``)."""
    if reason is None and earlier_member:
        reason = "finished"  # a hybrid's earlier member, without a watermark strategy to say so
    if reason is not None:
        return _STATES.get(reason, reason), _REASONS.get(reason, reason)
    return ("reading" if (backlog or 0) > 0 or (rate or 0) > 0 else "caught up"), ""


def _rows(pd: Any, h: SourceHistory, window: int, now_ms: float) -> list[dict[str, Any]]:
    metrics = h.last.metrics
    source_type = metrics.get("sourceType", "")
    progress = {s["split"]: s for s in split_list(metrics, "splitProgress")}
    event_times = {s["split"]: s for s in split_list(metrics, "watermark.splits")}
    rates = split_rates(h, window)
    types = h.member_types()
    active = int_metric(metrics, "activeSource")
    per_member = value(metrics, "recordsPerSource")  # one number per member, in member order
    members = len(per_member) if per_member is not None else None

    def timestamp(ms: Any) -> Any:
        return pd.NaT if ms is None or ms == _MAX_WATERMARK else pd.Timestamp(int(ms), unit="ms", tz="UTC")

    def duration(seconds: float | None) -> Any:
        return pd.NaT if seconds is None else pd.Timedelta(seconds=seconds)

    def time_to_read(backlog: int | None, rate: float | None) -> float | None:
        if backlog is None:
            return None
        if backlog == 0:
            return 0.0
        return backlog / rate if rate else None

    # hybrid: the bounded member still reading is read to its end, then the next member starts
    to_switch = None
    if active is not None and members is not None and active < members - 1:
        ids = [i for i in progress if member_of(source_type, i) == active]
        backlog = sum(progress[i].get("backlogRecords", 0) for i in ids)
        to_switch = time_to_read(backlog, sum(rates.get(i, 0.0) for i in ids))
    limit = timestamp(int_metric(metrics, "alignment.maxAllowedWatermarkMs"))
    headroom = int_metric(metrics, "retentionHeadroomMs")

    rows = []
    for split_id in list(progress) + [i for i in event_times if i not in progress]:
        p, et = progress.get(split_id, {}), event_times.get(split_id, {})
        member = member_of(source_type, split_id)
        backlog = p.get("backlogRecords")
        rate = rates.get(split_id)
        earlier_member = member is not None and active is not None and member < active
        state, reason = _state(et.get("reason"), earlier_member, backlog, rate)
        max_event_time = p.get("maxEventTimeMs")
        live = (
            None
            if (member is not None and active is not None and member <= active and to_switch is not None)
            else time_to_read(backlog, rate)
        )
        rows.append(
            {
                "source": metrics.get("source", ""),
                "source_type": source_type,
                "member": member,
                "member_type": types.get(member, "") if member is not None else "",
                "split": split_id,
                "state": state,
                "reason": reason,
                "event_time": timestamp(max_event_time),
                "watermark": timestamp(et.get("watermarkMs")),
                "limit": limit,
                "records": p.get("records"),
                "backlog": backlog,
                "rate": rate,
                "to_switch": duration(to_switch),
                "to_live": duration(None if state == "finished" else live),
                "lag": duration(
                    None
                    if max_event_time is None or state == "finished"
                    else (now_ms - max_event_time) / 1000.0
                ),
                "retention_headroom": pd.NaT if headroom is None else pd.Timedelta(milliseconds=headroom),
            }
        )
    return rows

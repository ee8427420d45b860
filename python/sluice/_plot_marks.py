"""What the plot marks per batch of an alignment group: the split that set the group's minimum,
and the splits the limit paused, read from the progress the sources reported.

The limit a batch is planned with is the group's minimum plus ``maxDrift`` (docs/event-time.md).
The split that sets the minimum is never held back by it — it is where the others wait for — so it
may end a batch above the limit (a line file read whole, a record past a sparse gap), while every
other split ends at most ``outOfOrderness`` above it with an exact index. Without the mark a
reader would take that split's point above the limit line for a violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sluice._status import SourceHistory, int_metric, split_list

# a finished split's watermark: the largest there is (it holds nobody back)
_MAX_WATERMARK = 2**63 - 1


@dataclass
class BatchMarks:
    """One batch of one alignment group: where its marks go, as (split label, event time ms)."""

    limit_ms: int
    minimum: tuple[str, int] | None = None
    paused: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class _Candidate:
    label: str
    entering_ms: int | None  # its event time when the batch was planned; None: not read before
    ending_ms: int  # its event time after the batch


def group_marks(histories: list[SourceHistory], label: Any) -> dict[str, dict[int, BatchMarks]]:
    """Per alignment group, per batch id: the limit, the split that set the minimum, the paused.

    ``label(history, split_id)`` names a split as the plot's legend does.

    The minimum's split is the unpaused, non-idle split with a point to mark, not finished before
    the batch (one that read its last records in it was still reading when it was planned), that stood
    lowest when the batch was planned: one that read for the first time counts as lowest (its
    first record set its place), and among equals the one that ended the batch lowest. A split
    that has read nothing yet is left out: the minimum's split is never held back, so it reads.
    """
    marks: dict[str, dict[int, BatchMarks]] = {}
    candidates: dict[tuple[str, int], list[_Candidate]] = {}
    for h in histories:
        previous: dict[str, int] = {}
        finished_before: set[str] = set()
        for batch, report in h.reports:
            metrics = report.metrics
            ending = {
                s["split"]: s["maxEventTimeMs"]
                for s in split_list(metrics, "splitProgress")
                if "maxEventTimeMs" in s
            }
            group = metrics.get("alignment.group")
            limit = int_metric(metrics, "alignment.maxAllowedWatermarkMs")
            if group is not None and limit is not None and limit != _MAX_WATERMARK:
                batch_marks = marks.setdefault(group, {}).setdefault(batch.batch_id, BatchMarks(limit))
                for s in split_list(metrics, "watermark.splits"):
                    split = s["split"]
                    at = ending.get(split)
                    if s.get("paused"):
                        if at is not None:
                            batch_marks.paused.append((label(h, split), at))
                    elif split not in finished_before and s.get("status") != "idle" and at is not None:
                        candidates.setdefault((group, batch.batch_id), []).append(
                            _Candidate(label(h, split), previous.get(split), at)
                        )
            previous.update(ending)
            finished_before = {
                s["split"] for s in split_list(metrics, "watermark.splits") if s.get("finished")
            }
    for (group, batch_id), found in candidates.items():
        lowest = min(
            found,
            key=lambda c: (
                c.entering_ms is not None,
                c.entering_ms or 0,
                c.ending_ms,
            ),
        )
        marks[group][batch_id].minimum = (lowest.label, lowest.ending_ms)
    return marks

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


def group_marks(histories: list[SourceHistory], label: Any) -> dict[str, dict[int, BatchMarks]]:
    """Per alignment group, per batch id: the limit, the split that set the minimum, the paused.

    ``label(history, split_id)`` names a split as the plot's legend does.

    The minimum's split is the one the planner reports (``alignment.minimumSplit``, from the
    source whose split it is), marked where it ended the batch; none when it read nothing.
    """
    marks: dict[str, dict[int, BatchMarks]] = {}
    for h in histories:
        for batch, report in h.reports:
            metrics = report.metrics
            group = metrics.get("alignment.group")
            limit = int_metric(metrics, "alignment.maxAllowedWatermarkMs")
            if group is None or limit is None or limit == _MAX_WATERMARK:
                continue
            ending = {
                s["split"]: s["maxEventTimeMs"]
                for s in split_list(metrics, "splitProgress")
                if "maxEventTimeMs" in s
            }
            batch_marks = marks.setdefault(group, {}).setdefault(batch.batch_id, BatchMarks(limit))
            for s in split_list(metrics, "watermark.splits"):
                at = ending.get(s["split"])
                if s.get("paused") and at is not None:
                    batch_marks.paused.append((label(h, s["split"]), at))
            minimum = metrics.get("alignment.minimumSplit")
            if minimum is not None and minimum in ending:
                batch_marks.minimum = (label(h, minimum), ending[minimum])
    return marks

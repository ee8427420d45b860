"""``sluice.plot(query)``: each split's event time over the batches, the group's limit, the switch.

matplotlib is an optional extra (``pip install 'spark-sluice[plot]'``), imported only here. The
figure is drawn on ``matplotlib.figure.Figure`` directly, without pyplot, so no window opens and
no GUI backend is needed; a notebook shows the returned figure once.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sluice._metrics import HYBRID_SPLIT_ID_SEPARATOR, hybrid_member
from sluice._status import int_metric, member_of, source_histories, split_list
from sluice.progress import batches

if TYPE_CHECKING:
    from os import PathLike

    from matplotlib.figure import Figure
    from pyspark.sql.streaming import StreamingQuery

# Beyond this many splits a source's lines share one legend entry per hybrid member (or source).
_LEGEND_SPLITS = 12


_figure_class: Any = None


def _require_matplotlib() -> Any:
    """matplotlib's Figure with a PNG form for notebooks (a figure made without pyplot has none)."""
    global _figure_class
    if _figure_class is None:
        try:
            from matplotlib.figure import Figure
        except ImportError as e:
            raise ImportError(
                "sluice.plot needs matplotlib, an optional extra: pip install 'spark-sluice[plot]'"
            ) from e

        class StatusFigure(Figure):
            def _repr_png_(self) -> bytes:
                out = io.BytesIO()
                self.savefig(out, format="png")
                return out.getvalue()

        _figure_class = StatusFigure
    return _figure_class


def _short(source_type: str, split_id: str) -> str:
    """A legend label: a file split's id is its file's URI (under a hybrid, after the member's
    index); its last path segment is what tells the lines apart."""
    if "/" not in split_id:
        return split_id
    member, _ = hybrid_member(source_type, split_id)
    prefix = f"{member}{HYBRID_SPLIT_ID_SEPARATOR}" if member is not None else ""
    return prefix + split_id.rsplit("/", 1)[1]


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def plot(query: StreamingQuery, path: str | PathLike[str] | None = None, title: str | None = None) -> Figure:
    """Draws where each split of the query's Sluice sources stood in event time after each batch.

    One line per split (its largest event time read, from ``splitProgress``), the alignment
    group's limit (``alignment.maxAllowedWatermarkMs``) as a dashed line, and a hybrid's switch to
    its next member as a vertical line at the batch that made it.

    Parameters
    ----------
    query : pyspark.sql.streaming.StreamingQuery
        A query reading Sluice sources (running or stopped).
    path : str or os.PathLike, optional
        Also saves the figure there, the format from the file's extension (e.g. ``.png``).
    title : str, optional
        The figure's title; by default ``"<query name>: event time per split"``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> figure = sluice.plot(query, path="backfill.png")
    """
    figure_class = _require_matplotlib()
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    kept = batches(query)
    figure = figure_class(figsize=(10, 5), layout="constrained")
    axes = figure.add_subplot()
    histories = source_histories(kept)
    colors = iter(f"C{i}" for i in range(10_000))
    limits_drawn: set[str | None] = set()
    for h in histories:
        source = h.last.metrics.get("source", "")
        source_type = h.last.metrics.get("sourceType", "")
        # per split, (batch, largest event time read) wherever the split had read something
        series: dict[str, list[tuple[int, datetime]]] = {}
        for batch, r in h.reports:
            for s in split_list(r.metrics, "splitProgress"):
                points = series.setdefault(s["split"], [])
                if "maxEventTimeMs" in s:
                    points.append((batch.batch_id, _time(s["maxEventTimeMs"])))
        many = len(series) > _LEGEND_SPLITS
        group_colors: dict[Any, str] = {}
        for split_id, points in series.items():
            if not points:
                continue
            member = member_of(source_type, split_id)
            if many:  # one color and one legend entry per member (or per source)
                key = member
                label = (
                    None
                    if key in group_colors
                    else (f"{source} member {member}: splits" if member is not None else f"{source}: splits")
                )
                color = group_colors.setdefault(key, next(colors))
            else:
                label, color = f"{source} {_short(source_type, split_id)}", next(colors)
            xs, ys = zip(*points, strict=False)
            axes.plot(
                xs, ys, marker="." if len(points) < 50 else None, linewidth=1.2, label=label, color=color
            )
        group = h.last.metrics.get("alignment.group")
        limits = [
            (batch.batch_id, _time(limit))
            for batch, r in h.reports
            if (limit := int_metric(r.metrics, "alignment.maxAllowedWatermarkMs")) is not None
        ]
        if limits and group not in limits_drawn:  # every member of a group plans against one limit
            limits_drawn.add(group)
            xs, ys = zip(*limits, strict=False)
            axes.step(
                xs,
                ys,
                where="post",
                linestyle="--",
                color="black",
                linewidth=1.5,
                label=f"alignment limit (group {group})",
            )
        types = h.member_types()
        for batch_id, member in h.switches():
            axes.axvline(
                batch_id,
                color="crimson",
                linestyle=":",
                linewidth=1.5,
                label=f"{source}: switch to member {member} ({types.get(member, '?')})",
            )
    if not histories or not axes.lines:
        axes.text(
            0.5,
            0.5,
            "no Sluice source has reported event times yet",
            ha="center",
            va="center",
            transform=axes.transAxes,
        )
    else:
        locator = AutoDateLocator()
        axes.yaxis.set_major_locator(locator)
        axes.yaxis.set_major_formatter(ConciseDateFormatter(locator))
        axes.legend(loc="best", fontsize="small")
    axes.set_xlabel("batch")
    axes.set_ylabel("event time (UTC)")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.grid(True, alpha=0.3)
    axes.set_title(title or f"{query.name or query.id}: event time per split")
    if path is not None:
        figure.savefig(path)
    return figure

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
from sluice._plot_marks import group_marks
from sluice._status import SourceHistory, member_of, source_histories, split_list
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

    One line per split (its largest event time read, from ``splitProgress``); the alignment
    group's limit (``alignment.maxAllowedWatermarkMs``: the group's minimum watermark plus its
    maximum drift) as a dashed step line; per batch, a diamond on the split that set the group's
    minimum (the limit never holds it back, so it may end a batch above the line) and a cross on
    each split the limit paused; and a hybrid's switch to its next member as a vertical line at the
    batch that made it.

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
        types = h.member_types()
        for batch_id, member in h.switches():
            axes.axvline(
                batch_id,
                color="crimson",
                linestyle=":",
                linewidth=1.5,
                label=f"{source}: switch to member {member} ({types.get(member, '?')})",
            )
    for group, by_batch in group_marks(histories, _label).items():
        _draw_alignment(axes, group, by_batch)
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


def _label(h: SourceHistory, split_id: str) -> str:
    source = h.last.metrics.get("source", "")
    return f"{source} {_short(h.last.metrics.get('sourceType', ''), split_id)}"


def _draw_alignment(axes: Any, group: str, by_batch: dict[int, Any]) -> None:
    """The group's limit per batch, and on the splits' points the marks that explain them."""
    batch_ids = sorted(by_batch)
    axes.step(
        batch_ids,
        [_time(by_batch[b].limit_ms) for b in batch_ids],
        where="post",
        linestyle="--",
        color="black",
        linewidth=1.5,
        label=f"alignment limit (group {group}): slowest split's watermark + max drift",
    )
    minimum = [(b, _time(by_batch[b].minimum[1])) for b in batch_ids if by_batch[b].minimum]
    if minimum:
        xs, ys = zip(*minimum, strict=True)
        axes.plot(
            xs,
            ys,
            linestyle="none",
            marker="D",
            markersize=7,
            markerfacecolor="none",
            markeredgecolor="black",
            label=f"set group {group}'s minimum: not held back by the limit",
        )
    paused = [(b, _time(at)) for b in batch_ids for _, at in by_batch[b].paused]
    if paused:
        xs, ys = zip(*paused, strict=True)
        axes.plot(
            xs,
            ys,
            linestyle="none",
            marker="x",
            markersize=7,
            color="dimgray",
            label=f"paused by group {group}'s limit",
        )

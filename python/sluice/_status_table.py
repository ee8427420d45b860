"""The status table: a pandas DataFrame that prints readably in a terminal and a notebook."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd


def format_duration(value: Any) -> str:
    """A duration as people read it: ``45.2s``, ``4m 05s``, ``3h 04m``, ``2d 03h``; empty when unknown."""
    if value is None or pd.isna(value):
        return ""
    seconds = pd.Timedelta(value).total_seconds()
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 60:
        return f"{sign}{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{sign}{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{sign}{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{sign}{days}d {hours:02d}h"


def _format_cell(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond // 1000:03d}" if value.microsecond else "")
    if isinstance(value, pd.Timedelta):
        return format_duration(value)
    if isinstance(value, float):
        return f"{value:,.0f}" if math.isfinite(value) and abs(value) >= 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


class StatusTable(pd.DataFrame):
    """One row per source and split (see :func:`sluice.status`); ``title`` says which query and batch.

    A DataFrame in every respect; only its text and HTML forms format times, durations and rates
    for reading (``rate`` in records/s, times in UTC) and leave unknown figures empty.
    """

    _metadata = ["title"]

    @property
    def _constructor(self) -> type[StatusTable]:
        return StatusTable

    def readable(self) -> pd.DataFrame:
        """The table as the strings it is shown with."""
        shown = pd.DataFrame(self).copy()
        for column in shown.columns:
            shown[column] = [_format_cell(v) for v in shown[column].astype(object)]
        return shown

    def __repr__(self) -> str:
        title = getattr(self, "title", None) or ""
        body = (
            "(no Sluice source has reported progress yet)"
            if self.empty
            else self.readable().to_string(index=False)
        )
        return f"{title}\n{body}" if title else body

    def _repr_html_(self) -> str:
        title = getattr(self, "title", None) or ""
        body = (
            "<p>(no Sluice source has reported progress yet)</p>"
            if self.empty
            else self.readable().to_html(index=False, escape=True, border=0)
        )
        return (f"<p><b>{html.escape(title)}</b></p>" if title else "") + body

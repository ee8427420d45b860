"""Watermark strategies (Flink's WatermarkStrategy), as options the source understands."""

from __future__ import annotations


class WatermarkStrategy:
    def __init__(self, options: dict[str, str]) -> None:
        self._options = dict(options)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._options)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        """No event time: the source emits no watermarks."""
        return WatermarkStrategy({"watermark.kind": "none"})

    def __repr__(self) -> str:
        return f"WatermarkStrategy({self._options})"

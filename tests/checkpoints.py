"""Checkpoints as earlier builds of Sluice wrote them, for the tests that restart from one."""

from __future__ import annotations

import re
from pathlib import Path


def as_written_by_the_bounded_build(checkpoint: Path) -> None:
    """Rewrites a table source's enumerator states in a checkpoint as Sluice wrote them before it kept
    the snapshot or version planned last: state version 1, without `tableVersion`."""
    for f in [*(checkpoint / "offsets").iterdir(), *checkpoint.glob("sources/*/sluice-initial-offset.json")]:
        if f.name.startswith("."):
            continue
        text = f.read_text()
        old = re.sub(r'\\"tableVersion\\":-?\d+,', "", text).replace(
            '"enumerator":{"version":2,', '"enumerator":{"version":1,'
        )
        assert old != text, f"no enumerator state version 2 in {f}"
        f.write_text(old)
        (f.parent / f".{f.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old text

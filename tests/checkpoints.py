"""Checkpoints as earlier builds of Sluice wrote them, for the tests that restart from one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


def as_written_by_the_bounded_build(checkpoint: Path) -> None:
    """Rewrites a table source's enumerator states in a checkpoint as Sluice wrote them before it kept
    the snapshot or version planned last: state version 1, without `tableVersion` (nor the table's
    identity and the files' table entries, which came later)."""
    for f in [*(checkpoint / "offsets").iterdir(), *checkpoint.glob("sources/*/sluice-initial-offset.json")]:
        if f.name.startswith("."):
            continue
        text = f.read_text()
        old = re.sub(r'\\"tableVersion\\":-?\d+,', "", text)
        old = re.sub(r'\\"tableId\\":\\"[^\\"]*\\",', "", old)
        old = re.sub(r',\\"entry\\":\\"[^\\"]*\\"', "", old)
        old = re.sub(r'"enumerator":\{"version":[23],', '"enumerator":{"version":1,', old)
        assert old != text, f"no enumerator state version 2 or 3 in {f}"
        f.write_text(old)
        (f.parent / f".{f.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old text


def logged_enumerator_field(checkpoint: Path, field: str) -> list[Any]:
    """`field` of the table source's enumerator state each batch of the offset log records, in batch
    order (None where a state has none): `tableVersion`, the snapshot or version a restart plans
    after (a test that only compares rows cannot see it, since a file sink keeps each file once
    whatever the version planned says), or `tableId`, the table's identity."""
    batches = sorted(
        (f for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()), key=lambda f: int(f.name)
    )
    values = []
    for batch in batches:
        offsets = [
            json.loads(line) for line in batch.read_text().splitlines() if line.startswith('{"version"')
        ]
        offsets = [o for o in offsets if "enumerator" in o or "checkpoint" in o]
        assert len(offsets) == 1, f"not one inline Sluice offset in {batch}: {offsets}"
        assert "enumerator" in offsets[0], f"the offset in {batch} is stored in a file; read it there"
        values.append(json.loads(offsets[0]["enumerator"]["state"]).get(field))
    return values


def as_written_before_table_identity(checkpoint: Path) -> None:
    """Rewrites a table source's enumerator states in a checkpoint as Sluice wrote them before it kept
    the table's identity and the files' table entries: state version 2, with `tableVersion`."""
    for f in [*(checkpoint / "offsets").iterdir(), *checkpoint.glob("sources/*/sluice-initial-offset.json")]:
        if f.name.startswith("."):
            continue
        text = f.read_text()
        old = re.sub(r',\\"tableId\\":\\"[^\\"]*\\"', "", text)
        old = re.sub(r',\\"entry\\":\\"[^\\"]*\\"', "", old)
        old = old.replace('"enumerator":{"version":3,', '"enumerator":{"version":2,')
        assert old != text, f"no enumerator state version 3 in {f}"
        f.write_text(old)
        (f.parent / f".{f.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old text

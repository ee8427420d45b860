"""The example notebook's saved outputs are what users see before running it, so they must be clean
and hold no machine's paths; `check` is also what its run from the installed wheel must show
(tests/test_wheel_install.py runs it there, so it cannot rot)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "backfill_then_live.ipynb"
# an absolute path of a POSIX machine (under tmp, home, work, root, var, Users or private), or a file: URI
ABSOLUTE_PATH = re.compile(r"(?<![\w.])(file:)?/(tmp|home|work|root|var|Users|private)/")
PNG = "image/png"


def outputs(notebook: nbformat.NotebookNode) -> list[tuple[int, dict]]:
    return [(i, o) for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" for o in cell.outputs]


def text_of(output: dict) -> str:
    parts = [output.get("text", "")] + [
        v if isinstance(v, str) else "".join(v)
        for k, v in output.get("data", {}).items()
        if k.startswith("text/")
    ]
    return "".join("".join(p) if isinstance(p, list) else p for p in parts)


def check(notebook: nbformat.NotebookNode) -> None:
    errors = [o for _, o in outputs(notebook) if o.get("output_type") == "error"]
    assert not errors, f"a cell failed: {errors}"
    streams = [
        o for _, o in outputs(notebook) if o.get("output_type") == "stream" and o.get("name") == "stderr"
    ]
    assert not streams, f"a cell wrote to stderr: {[o['text'] for o in streams]}"
    for i, o in outputs(notebook):
        match = ABSOLUTE_PATH.search(text_of(o))
        assert (
            match is None
        ), f"cell {i} shows an absolute path: ...{text_of(o)[max(0, match.start() - 40):match.end() + 40]}..."
    tables = [text_of(o) for _, o in outputs(notebook) if "text/html" in o.get("data", {})]
    assert len(tables) == 2 and all("<table" in t for t in tables)
    assert "paused" in tables[0] and "alignment limit" in tables[0], "the table during the backfill"
    assert "kafka" in tables[1] and "finished" in tables[1], "the table after the switch"
    images = [o["data"][PNG] for _, o in outputs(notebook) if PNG in o.get("data", {})]
    assert len(images) == 1 and len(images[0]) > 10_000, "the plot"


def test_the_committed_notebook_shows_clean_outputs() -> None:
    check(nbformat.read(NOTEBOOK, as_version=4))


# It runs headless in tests/test_wheel_install.py: from the installed wheel alone, outside the checkout.

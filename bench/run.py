"""`make bench [BENCH=<name>]`: runs the benchmarks and writes bench/results/<name>.json.

Each benchmark measures Sluice against Spark's built-in path on the same data in one run and
reports medians of several runs. Benchmarks register themselves in BENCHMARKS; a module
bench/<name>.py with a `run() -> dict` function is registered as <name> without further ado.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

BENCHMARKS: dict[str, Callable[[], dict]] = {}


def discover() -> None:
    """Registers every bench/<name>.py that defines run()."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name in ("run", "common") or module.name.startswith("_"):
            continue
        run = getattr(importlib.import_module(f"bench.{module.name}"), "run", None)
        if callable(run):
            BENCHMARKS.setdefault(module.name, run)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="run one benchmark by name")
    args = parser.parse_args()
    discover()
    if not BENCHMARKS:
        print("No benchmarks are defined yet (they arrive with the Kafka and file connectors).")
        return 0
    names = [args.only] if args.only else sorted(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"Unknown benchmark {unknown[0]!r}; known: {', '.join(sorted(BENCHMARKS))}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        BENCHMARKS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())

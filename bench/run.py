"""`make bench [BENCH=<name>[,<name>...]]`: runs the benchmarks and writes bench/results/<name>.json.

Each benchmark measures Sluice against Spark's built-in path on the same data in one run and
reports medians of several runs. Benchmarks register themselves in BENCHMARKS; a module
bench/<name>.py with a `run() -> dict` function is registered as <name> without further ado.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS: dict[str, Callable[[], dict]] = {}
RESULTS = Path(__file__).resolve().parent / "results"


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
    parser.add_argument("--only", help="run these benchmarks only: names, comma-separated")
    args = parser.parse_args()
    discover()
    if not BENCHMARKS:
        print("No benchmarks are defined yet (they arrive with the Kafka and file connectors).")
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else sorted(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"Unknown benchmark {unknown[0]!r}; known: {', '.join(sorted(BENCHMARKS))}",
            file=sys.stderr,
        )
        return 2
    if len(names) > 1:
        # each in a Python process of its own: PySpark starts one JVM per process, whose class path
        # the first session sets (a later benchmark's `spark.jars`, e.g. Spark's Kafka connector,
        # would not reach it), and no benchmark inherits another's warm JVM
        failed = [n for n in names if subprocess.call([sys.executable, "-m", "bench.run", "--only", n]) != 0]
        if failed:
            print(f"bench: failed: {', '.join(failed)}", file=sys.stderr)
        return 1 if failed else 0
    conditions = _Conditions()
    BENCHMARKS[names[0]]()
    conditions.record(RESULTS / f"{names[0]}.json")
    return 0


class _Conditions:
    """When a benchmark ran and how busy the machine was (the 1-minute load average at its start
    and end: on 2 cores, anything well above 2 means other work shared them), written into its
    result's `machine` so the report can say it beside the figures."""

    def __init__(self) -> None:
        self.started = time.time()
        self.load_start = os.getloadavg()[0]

    def record(self, result: Path) -> None:
        if not result.exists() or result.stat().st_mtime < self.started:
            return  # not written by this run
        data = json.loads(result.read_text())
        data.setdefault("machine", {}).update(
            run_started=datetime.fromtimestamp(self.started, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            load_average_start=round(self.load_start, 2),
            load_average_end=round(os.getloadavg()[0], 2),
            wall_seconds=round(time.time() - self.started),
        )
        result.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())

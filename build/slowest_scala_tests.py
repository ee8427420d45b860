"""Prints the slowest ScalaTest tests of an sbt log (ScalaTest's -oD reporter gives each a duration),
as pytest's --durations does for the Python suites. Usage: slowest_scala_tests.py LOG [N]"""

import re
import sys

UNITS = {"minute": 60.0, "second": 1.0, "millisecond": 0.001}
DURATION = re.compile(r"\(((?:\d+ (?:minutes?|seconds?|milliseconds?)(?:, )?)+)\)\s*$")


def slowest(lines: list[str], n: int) -> list[tuple[float, str]]:
    # by test name only: two test JVMs print side by side, so a suite's header may not precede its tests
    found = []
    for line in lines:
        test = re.match(r"^\[info\] - (.*)", line)
        duration = DURATION.search(line) if test else None
        if test and duration:
            seconds = sum(
                int(k) * UNITS[u]
                for k, u in re.findall(r"(\d+) (minute|second|millisecond)", duration.group(1))
            )
            found.append((seconds, test.group(1)[: duration.start() - len("[info] - ")].strip()))
    return sorted(found, reverse=True)[:n]


if __name__ == "__main__":
    log = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
    rows = slowest(log, int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    print(f"slowest {len(rows)} Scala tests:")
    for seconds, name in rows:
        print(f"{seconds:7.2f}s {name[:120]}")

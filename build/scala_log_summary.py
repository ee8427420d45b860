"""The end of an sbt test log in a few lines: the Scala tests that failed or aborted, each with
ScalaTest's message under it (a CI shows only the end of a long log, and two test JVMs print side by
side, so a failure is easy to lose in the middle), then the slowest tests, as pytest's --durations
prints them for the Python suites, and the tests and suites that cost their JVM the most CPU
(jvm/*/target/test-cpu/, written by the Spark suites' TestCpu). Usage: scala_log_summary.py LOG [N]"""

import collections
import glob
import re
import sys

UNITS = {"minute": 60.0, "second": 1.0, "millisecond": 0.001}
DURATION = re.compile(r"\(((?:\d+ (?:minutes?|seconds?|milliseconds?)(?:, )?)+)\)\s*$")
FAILED = re.compile(r"\*\*\* (?:FAILED|ABORTED) \*\*\*")
# ScalaTest indents a failure's message and stack under the test's line
DETAIL = re.compile(r"^\[info\]   ")
DETAIL_LINES = 12


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


def failures(lines: list[str]) -> list[list[str]]:
    """Each failed or aborted test (or suite) with the first lines of its message."""
    found = []
    for i, line in enumerate(lines):
        if FAILED.search(line) and not line.startswith("[info] *** "):
            detail = []
            for following in lines[i + 1 :]:
                if not DETAIL.match(following) or len(detail) == DETAIL_LINES:
                    break
                detail.append(following)
            found.append([line, *detail])
    return found


def cpu_records(
    pattern: str = "jvm/*/target/test-cpu/*.tsv",
) -> tuple[list[tuple[float, str, str]], list[str]]:
    """Each test's CPU in seconds, suite and test, as TestCpu wrote them; and where a line is not
    whole (`file:line`), as a JVM killed while writing it leaves it: such a line is left out."""
    records, unfinished = [], []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                # TestCpu writes a line at once, ending it with \n: one without was cut short
                fields = line.rstrip("\n").split("\t", 3) if line.endswith("\n") else []
                try:
                    cpu, _wall, suite, test = fields
                    records.append((float(cpu), suite, test))
                except ValueError:
                    unfinished.append(f"{path}:{number}")
    return records, unfinished


def costliest(
    records: list[tuple[float, str, str]], n: int
) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """The n tests and the n suites that used the most CPU, in seconds."""
    tests, suites = [], collections.Counter()
    for cpu, suite, test in records:
        tests.append((cpu, f"{suite}: {test}"))
        suites[suite] += cpu
    return sorted(tests, reverse=True)[:n], [(s, name) for name, s in suites.most_common(n)]


if __name__ == "__main__":
    log = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
    failed = failures(log)
    if failed:
        print(f"{len(failed)} Scala tests failed:")
        for block in failed:
            print("\n".join(block))
    rows = slowest(log, int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    print(f"slowest {len(rows)} Scala tests:")
    for seconds, name in rows:
        print(f"{seconds:7.2f}s {name[:120]}")
    records, unfinished = cpu_records()
    if unfinished:
        print(
            f"left out {len(unfinished)} unfinished CPU records (a test JVM killed while writing?): ", end=""
        )
        print(", ".join(unfinished))
    tests, suites = costliest(records, int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    if suites:
        total = sum(cpu for cpu, _, _ in records)
        print(f"costliest Scala suites (CPU of their JVM; {total:.0f} s over all that record it):")
        for seconds, name in suites:
            print(f"{seconds:7.2f}s {name}")
        print("costliest Scala tests (CPU):")
        for seconds, name in tests:
            print(f"{seconds:7.2f}s {name[:120]}")

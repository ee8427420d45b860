"""What each chaos scenario reads, how its data grows between faults, and what it must deliver.

Every record carries a unique `id` ("<scenario>:<n>") and an event time `ts` that grows with n,
so a sink's ids say exactly what was lost or duplicated. The data lives outside the drivers (in
files and the orchestrator's broker), and so does `expected`: what was written before the last,
draining run started.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sluice.testing import EmbeddedKafka

T0 = 1_700_000_000_000  # the first record's event time (ms)
STEP_MS = 100  # event time between consecutive records of a scenario
PARTITIONS = 2
SCHEMA = "id STRING, ts TIMESTAMP"


def record(scenario: str, n: int) -> dict:
    ts = datetime.fromtimestamp((T0 + n * STEP_MS) / 1000, tz=UTC)
    return {"id": f"{scenario}:{n}", "ts": ts.isoformat()}


@dataclass
class Scenario:
    """One scenario: `mode` is how Spark runs it (micro, realtime, continuous); `topics` the Kafka
    topics it reads (records go round-robin over their partitions); `files` how many records the
    backfill files hold before Kafka takes over (0: no files)."""

    name: str
    mode: str
    topics: list[str]
    files: int = 0
    #: the files' last records but one, written to Kafka too (event times below the files' end): a
    #: switch that starts Kafka anywhere but right after the files' end reads some of them twice
    overlap: int = 0
    #: this scenario's share of a run's driver kills
    kill_share: float = 0.0
    per_feed: int = 300
    partitions: int = PARTITIONS
    #: more of what the driver needs (e.g. `master`), passed through its config
    settings: dict = field(default_factory=dict)
    expected: list[str] = field(default_factory=list)
    next_n: int = 0

    def prepare(self, kafka: EmbeddedKafka, work: Path) -> None:
        """Writes the backfill files and creates the topics (empty)."""
        work.mkdir(parents=True, exist_ok=True)
        if self.files:
            history = work / "history"
            history.mkdir(parents=True)
            per_file = self.files // 3
            for f in range(3):
                lines = [record(self.name, n) for n in range(f * per_file, (f + 1) * per_file)]
                tmp = history / f".part-{f}.json.tmp"
                tmp.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
                tmp.rename(history / f"part-{f}.json")
                self.expected += [r["id"] for r in lines]
            self.next_n = 3 * per_file
        for topic in self.topics:
            kafka.create_topic(topic, self.partitions)
        if self.overlap:
            first = self.next_n - 1 - self.overlap
            kafka.produce(self.topics[0], [self._kafka_record(n) for n in range(first, self.next_n - 1)])

    def feed(self, kafka: EmbeddedKafka, count: int | None = None) -> None:
        """Appends the next `count` records (default `per_feed`) to the topics, in turn."""
        count = self.per_feed if count is None else count
        batches: dict[str, list[dict]] = {t: [] for t in self.topics}
        for i in range(count):
            n = self.next_n + i
            batches[self.topics[n % len(self.topics)]].append(self._kafka_record(n))
            self.expected.append(record(self.name, n)["id"])
        for topic, records in batches.items():
            if records:
                kafka.produce(topic, records)
        self.next_n += count

    def _kafka_record(self, n: int) -> dict:
        return {
            "value": json.dumps(record(self.name, n)),
            "partition": (n // len(self.topics)) % self.partitions,
            "timestamp": T0 + n * STEP_MS,
        }

    def config(self, kafka: EmbeddedKafka, work: Path, *, drain: bool) -> dict:
        """What a driver process needs to build this scenario's query."""
        return {
            "scenario": self.name,
            "mode": self.mode,
            "topics": self.topics,
            "files": str(work / "history") if self.files else None,
            "bootstrap": kafka.bootstrap_servers,
            "checkpoint": str(work / "checkpoint"),
            "out": str(work / "out"),
            "drain": drain,
            "expected": len(self.expected),
            **self.settings,
        }


def all_scenarios() -> list[Scenario]:
    """The scenarios of a full run, one per kind of query. A driver's start costs 10-20 s on a
    2-core machine, so a run's kills are shared: the hybrid, whose switch a kill can cut, gets
    the most."""
    return [
        Scenario("hybrid", "micro", ["hybrid-live"], files=3000, overlap=200, kill_share=0.4),
        Scenario("group", "micro", ["group-a", "group-b"], kill_share=0.2),
        Scenario("realtime", "realtime", ["rt"], kill_share=0.2),
        Scenario("continuous", "continuous", ["ct"], kill_share=0.2),
    ]

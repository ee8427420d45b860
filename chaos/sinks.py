"""What a scenario's sink holds, counted the way its engine commits it."""

from __future__ import annotations

import json
import re
from pathlib import Path


def committed_epochs(checkpoint: str) -> set[int]:
    """Batches (epochs) the query has committed: every one up to the last in its commit log, whose
    older files Spark deletes (it keeps 100), so that a long real-time run's first epochs count."""
    commits = Path(checkpoint) / "commits"
    if not commits.is_dir():
        return set()
    logged = [int(f.name) for f in commits.iterdir() if f.name.isdigit()]
    return set(range(max(logged) + 1)) if logged else set()


def committed_positions(checkpoint: str) -> dict[str, int]:
    """Where the last committed batch left each split (its Sluice offset in the offset log): the
    next offset it reads; of every source of the query (a line each, after the log's version and
    metadata; `-` for one without an offset yet). Empty before the first commit."""
    if not (committed := committed_epochs(checkpoint)):
        return {}
    lines = (Path(checkpoint) / "offsets" / str(max(committed))).read_text().splitlines()
    return {s["id"]: s["position"] for line in lines[2:] if line != "-" for s in json.loads(line)["splits"]}


def topic_partition(split_id: str) -> tuple[str, int]:
    """The topic and partition of a Kafka split id: `topic-3`, or `topic-3@1` for a later
    incarnation."""
    match = re.fullmatch(r"(.*)-(\d+)(@\d+)?", split_id)
    if match is None:
        raise ValueError(f"not a Kafka split id: {split_id}")
    return match.group(1), int(match.group(2))


def partition_of(split_id: str) -> int:
    return topic_partition(split_id)[1]


def epoch_ids(config: dict) -> list[str]:
    """The ids the epoch sink (jvm/benchkit `EpochFileSink`) holds for committed epochs: an epoch cut
    by a kill is not committed, and its replay replaces what it wrote."""
    out = Path(config["out"])
    ids: list[str] = []
    for epoch in sorted(committed_epochs(config["checkpoint"])):
        folder = out / str(epoch)
        if folder.is_dir():
            for part in sorted(folder.iterdir()):
                if not part.name.startswith("."):
                    ids += [line for line in part.read_text(encoding="utf-8").splitlines() if line]
    return ids


def sink_ids(config: dict) -> tuple[list[str], int]:
    """The ids a drained scenario delivered, and the records its source still had to read."""
    if config["mode"] == "micro":
        found = json.loads(Path(config["out"] + ".ids.json").read_text())
        return found["ids"], found["backlog"]
    return epoch_ids(config), 0

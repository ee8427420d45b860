"""The chaos harness's own rules (no broker, no Spark): only leftovers of a checkpoint that logged
no batch are removed before a start; a fault step waits until a real-time or continuous sink holds
what was written, and until a micro-batch query committed a batch that read to the topic's end;
the comparison with a topic still finds ids nobody wrote."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from chaos import broker_faults
from chaos.broker_faults import Fleet, against_topic
from chaos.run import clear_unlogged_start
from chaos.scenarios import Scenario
from chaos.sinks import committed_epochs


def _files(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_a_new_checkpoint_is_left_alone(tmp_path: Path) -> None:
    assert clear_unlogged_start(tmp_path / "missing") == 0
    (tmp_path / "offsets").mkdir()
    assert clear_unlogged_start(tmp_path) == 0


def test_the_leftovers_of_a_cut_first_write_are_removed(tmp_path: Path) -> None:
    # what a kill during the first offset write left (seen in a real run)
    _files(tmp_path, "offsets/.0.c71cba64.tmp", "offsets/..0.c71cba64.tmp.crc", "sources/0/meta")
    assert clear_unlogged_start(tmp_path) == 2
    assert list((tmp_path / "offsets").iterdir()) == []
    assert (tmp_path / "sources/0/meta").exists()  # the sources' own files are not Spark's check


def test_a_checkpoint_with_a_logged_batch_is_never_touched(tmp_path: Path) -> None:
    _files(tmp_path, "offsets/0", "offsets/.0.crc", "commits/.0.e05d.tmp")
    assert clear_unlogged_start(tmp_path) == 0
    assert sorted(f.name for f in (tmp_path / "offsets").iterdir()) == [".0.crc", "0"]
    assert [f.name for f in (tmp_path / "commits").iterdir()] == [".0.e05d.tmp"]


def test_a_commit_without_its_offset_is_left_for_spark_to_refuse(tmp_path: Path) -> None:
    # not what a kill leaves (a commit follows its offset): the run must fail loudly, not be cleared
    _files(tmp_path, "commits/0", "commits/.0.crc")
    (tmp_path / "offsets").mkdir()
    assert clear_unlogged_start(tmp_path) == 0
    assert sorted(f.name for f in (tmp_path / "commits").iterdir()) == [".0.crc", "0"]


def test_epochs_whose_commit_files_spark_deleted_still_count_as_committed(tmp_path: Path) -> None:
    # Spark keeps the last 100 commit files: a long real-time run's first epochs lose theirs, and
    # counting only the files left took their sink output for uncommitted (and removed it)
    _files(tmp_path, *(f"commits/{n}" for n in range(126, 131)), "commits/.130.crc")
    assert committed_epochs(str(tmp_path)) == set(range(131))


class _Cluster:
    """Takes the records a scenario writes (the broker's part, which these checks do not need)."""

    bootstrap_servers = "127.0.0.1:9"  # named in the drivers' configs, never connected to

    def __init__(self) -> None:
        self.topics: dict[str, list[dict]] = {}

    def create_topic(self, topic: str, partitions: int) -> None:
        self.topics[topic] = []

    def produce(self, topic: str, records: list[dict]) -> None:
        self.topics[topic] += records

    def consume(self, topic: str) -> list[dict]:
        return self.topics[topic]

    def end_offsets(self, topic: str) -> dict[int, int]:
        return dict(Counter(r["partition"] for r in self.topics[topic]))


class _Process:
    def poll(self) -> None:
        return None  # still running


class _Driver:
    """A running query (what it committed is what a test writes into its checkpoint)."""

    process = _Process()

    def tail(self) -> str:
        return "(the driver's log)"


def _sink_holds(config: dict, epoch: int, ids: list[str]) -> None:
    _files(Path(config["checkpoint"]), f"commits/{epoch}")
    part = Path(config["out"]) / str(epoch) / "part-0"
    part.parent.mkdir(parents=True, exist_ok=True)
    part.write_text("".join(f"{i}\n" for i in ids))


def _fleet(tmp_path: Path, mode: str) -> tuple[Fleet, Scenario, dict]:
    cluster = _Cluster()
    scenario = Scenario(f"cluster-{mode}", mode, [f"cluster-{mode}"], per_feed=3)
    scenario.prepare(cluster, tmp_path)
    scenario.feed(cluster)
    config = scenario.config(cluster, tmp_path, drain=False)
    fleet = Fleet([scenario], cluster, tmp_path, driver=None)
    fleet.configs[scenario.name] = config
    fleet.drivers[scenario.name] = _Driver()
    return fleet, scenario, config


@pytest.mark.parametrize("mode", ["realtime", "continuous"])
def test_a_fault_step_waits_for_the_ids_written_not_for_empty_epochs(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_faults, "SINK_WAIT_S", 0.2)
    fleet, scenario, config = _fleet(tmp_path, mode)
    _sink_holds(config, 0, scenario.expected)  # read before the fault
    # epochs go on committing after the fault, but nothing written after it reaches the sink
    fleet.progress("after the fault")
    assert list(fleet.problems) == [scenario.name]
    problem = fleet.problems[scenario.name]
    assert problem.startswith(
        "waited 0.2 s after the fault for the sink's committed epochs to hold all 6 ids written so far;"
        f" 3 missing (e.g. {scenario.name}:3, {scenario.name}:4, {scenario.name}:5)"
    ), problem


def test_a_fault_step_passes_once_the_sink_holds_what_was_written(tmp_path: Path) -> None:
    fleet, scenario, config = _fleet(tmp_path, "realtime")
    _sink_holds(config, 0, scenario.expected[:2])
    # what the query delivers once the step has written its records (the step writes 3 more)
    _sink_holds(config, 1, [f"{scenario.name}:{n}" for n in range(2, 6)])
    fleet.progress("after the fault")
    assert fleet.problems == {}
    assert len(scenario.expected) == 6


def _batch_read_to(config: dict, batch: int, positions: dict[int, int]) -> None:
    """Batch `batch` of the micro-batch query, committed, read each partition to `positions`."""
    topic = config["topics"][0]
    splits = [{"id": f"{topic}-{p}", "position": n, "records": n} for p, n in positions.items()]
    _files(Path(config["checkpoint"]), f"commits/{batch}")
    offsets = Path(config["checkpoint"]) / "offsets" / str(batch)
    offsets.parent.mkdir(parents=True, exist_ok=True)
    offsets.write_text('v1\n{"batchWatermarkMs":0}\n' + json.dumps({"splits": splits}))


def test_a_micro_batch_step_waits_for_a_batch_that_reads_what_was_written_after_the_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(broker_faults, "SINK_WAIT_S", 0.2)
    fleet, scenario, config = _fleet(tmp_path, "micro")
    _batch_read_to(config, 0, {0: 1, 1: 1})  # before the fault
    # a batch that was running when the fault hit commits after it, but reads nothing written since
    _batch_read_to(config, 1, {0: 2, 1: 1})
    fleet.progress("after the fault")
    problem = fleet.problems[scenario.name]
    assert problem.startswith(
        "waited 0.2 s after the fault for a committed batch to read to the topics' end offsets "
        "{'cluster-micro': {0: 3, 1: 3}}; behind: [('cluster-micro', 0), ('cluster-micro', 1)] "
        "(read to {('cluster-micro', 0): 2, ('cluster-micro', 1): 1})"
    ), problem


def test_a_micro_batch_step_passes_once_a_batch_read_to_the_topics_end(tmp_path: Path) -> None:
    fleet, scenario, config = _fleet(tmp_path, "micro")
    _batch_read_to(config, 0, {0: 2, 1: 1})  # the 3 records written before the step
    _batch_read_to(config, 1, {0: 3, 1: 3})  # and the 3 the step writes
    fleet.progress("after the fault")
    assert fleet.problems == {}


def _read_by_micro_batch(config: dict, ids: list[str]) -> None:
    Path(config["out"] + ".ids.json").write_text(json.dumps({"ids": ids, "backlog": 0}))


def test_the_comparison_with_the_topic_counts_ids_the_harness_never_wrote(tmp_path: Path) -> None:
    fleet, scenario, config = _fleet(tmp_path, "micro")
    cluster = fleet.cluster
    topic = scenario.topics[0]
    cluster.produce(topic, cluster.topics[topic][:1])  # the producer's retry: the topic holds :0 twice
    _read_by_micro_batch(config, [*scenario.expected, scenario.expected[0], "cluster-micro:77", "junk"])
    found = against_topic(scenario, config, cluster)
    # :0 read as often as the topic holds it is read once; the two ids nobody wrote are not
    assert found == {
        "lost_copies": 0,
        "copies_unread": [],
        "duplicated_in_topic": 1,
        "duplicated": 2,
        "read_twice": [],
        "not_written": ["cluster-micro:77", "junk"],
    }


def test_the_comparison_with_the_topic_counts_a_copy_the_topic_holds_and_no_read_matched(
    tmp_path: Path,
) -> None:
    """An id the topic holds twice (the producer's retry at a fault) is two records: reading it once
    skipped one, which the id alone would hide."""
    fleet, scenario, config = _fleet(tmp_path, "micro")
    cluster = fleet.cluster
    topic = scenario.topics[0]
    first, second = scenario.expected[:2]
    cluster.produce(topic, cluster.topics[topic][:2])  # :0 and :1 held twice each
    cluster.produce(topic, cluster.topics[topic][:1])  # :0 three times
    _read_by_micro_batch(config, [*scenario.expected, first])  # :0 read twice, :1 once
    found = against_topic(scenario, config, cluster)
    assert (found["lost_copies"], found["copies_unread"], found["duplicated"]) == (2, [first, second], 0)


def test_the_comparison_with_the_topic_counts_reads_past_what_the_topic_holds(tmp_path: Path) -> None:
    fleet, scenario, config = _fleet(tmp_path, "micro")
    one, two = scenario.expected[:2]
    _read_by_micro_batch(config, [*scenario.expected, one, one, two])
    found = against_topic(scenario, config, fleet.cluster)
    assert (found["duplicated"], found["read_twice"], found["not_written"]) == (3, [one, two], [])


def test_a_cluster_down_failure_is_clear_only_naming_sluice_the_cause_and_the_option() -> None:
    """`make chaos` fails a query that, the whole cluster down, failed without saying so (make test's
    reduced run no longer takes the cluster down: this keeps its check honest between chaos runs)."""
    clear = "KafkaSource: no broker of kafka.bootstrap.servers (127.0.0.1:1) answered: the brokers are unreachable"
    assert broker_faults.clear_failure(clear) is None
    kafka_only = "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment"
    unclear = broker_faults.clear_failure(kafka_only)
    assert unclear is not None and "'KafkaSource:'" in unclear and "'kafka.bootstrap.servers'" in unclear

"""Broker faults on the 3-broker test cluster (`chaos.cluster`) under running queries, one per
execution mode, all three reading at once (each fault then lands under every mode):

- a partition's leader SIGKILLed mid-read (records written before the kill and while it is down),
  restarted once the queries read on, and every partition led by its preferred node again, so
  that the next kill finds a leader of every query's topic on any node;
- a rolling restart under load: each node in turn stopped cleanly, records written while it is
  down, started, and the next only once every replica is in sync again;
- a partition moved off its leader's node and back (`Admin.alterPartitionReassignments`);
- the whole cluster down (all nodes SIGKILLed) for longer than the readers' patience: each query
  must fail within DOWN_FAILURE_S with an error that names the cause (brokers unreachable) and
  the option to check (`kafka.bootstrap.servers`, `clear_failure`); once the cluster is back, a
  restart from the checkpoint must read every record once (the full run and the reduced run in
  `make test`).

Beside them (`sasl_ssl_scenario`) a micro-batch query reads as a user with READ and DESCRIBE on
its topic only, over the SASL_SSL listener (SCRAM-SHA-512, the brokers' certificates and host
names verified), under every fault: a secured connection must come back as a plaintext one does.

The reduced run in `make test` has no such fourth driver: its micro-batch query itself reads as
that user, one topic over SASL_SSL and one over mutual TLS (`secured_micro_scenario`).

Every record must reach the sink once: micro-batch into the file sink (exactly once), real-time
and continuous into the epoch sink (committed epochs only, a replay replaces its epoch). A
secured query's driver logs Kafka's client configuration (passwords as `[hidden]`), and its logs
must hold none of the cluster's passwords (`secrets_in_logs`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from chaos.cluster import NODES, KafkaCluster
from chaos.scenarios import Scenario
from chaos.sinks import committed_positions, epoch_ids, sink_ids, topic_partition

#: the readers' patience (`kafkaConsumer.pollTimeoutMs`): longer than a leader's failover, shorter
#: than the whole cluster's outage
READER_PATIENCE_MS = 30_000
#: how long the queries may take to fail once the whole cluster is down
DOWN_FAILURE_S = 240
PARTITIONS = 3  # one led by each node once leaders are rebalanced
FEED = 150  # records per scenario written before and after each fault
BATCH_RECORDS = 50  # per micro-batch: a few batches per feed, so a kill lands mid-read
#: how long a real-time or continuous query may take to deliver what was written (`wait_for_sink`)
SINK_WAIT_S = 120


def scenarios(modes: list[str], cluster: KafkaCluster, secured: bool = False) -> list[Scenario]:
    """One query per mode, over PLAINTEXT as a super user; with `secured`, the micro-batch one
    reads over the secured listeners instead (`secured_micro_scenario`)."""
    return [
        secured_micro_scenario(cluster)
        if secured and mode == "micro"
        else Scenario(
            f"cluster-{mode}",
            mode,
            [f"cluster-{mode}"],
            per_feed=FEED,
            partitions=PARTITIONS,
            settings={"poll_timeout_ms": READER_PATIENCE_MS, "batch_records": BATCH_RECORDS},
        )
        for mode in modes
    ]


def secured_micro_scenario(cluster: KafkaCluster) -> Scenario:
    """The micro-batch query reading as `reader` (READ and DESCRIBE on its topics only), through
    the Python builder's `property`: its first topic over SASL_SSL (SCRAM-SHA-512), its second over
    mutual TLS (the user's client certificate); the brokers' certificates verified. The reduced
    run's one secured read: the same driver as a plaintext query, so it costs no more JVMs."""
    sasl, mtls = "cluster-micro", "cluster-micro-mtls"
    for topic in (sasl, mtls):
        cluster.grant("reader", topic, ["READ", "DESCRIBE"])
    return Scenario(
        "cluster-micro",
        "micro",
        [sasl, mtls],
        per_feed=FEED,
        partitions=PARTITIONS,
        settings={
            "poll_timeout_ms": READER_PATIENCE_MS,
            "batch_records": BATCH_RECORDS,
            "bootstrap_by_topic": {sasl: cluster.sasl_ssl_bootstrap(), mtls: cluster.ssl_bootstrap()},
            "kafka_properties_by_topic": {
                sasl: cluster.scram_properties("reader"),
                mtls: cluster.mtls_properties("reader"),
            },
            "log_kafka_config": True,
        },
    )


#: what Kafka's clients log of a secured consumer's configuration: the scan saw it (see below)
CONFIG_LOGGED = ("sasl.jaas.config = [hidden]", "ssl.keystore.password = [hidden]")


def secrets_in_logs(work: Path, secrets: list[str]) -> dict:
    """The scenario's driver logs (every start's) scanned for the cluster's passwords: which hold
    one (none may), and whether they hold what Kafka logs of a secured consumer's configuration,
    which says the scan saw the secured clients' start."""
    logs = {f.name: f.read_text(encoding="utf-8", errors="replace") for f in sorted(work.glob("*.log"))}
    return {
        "logs_scanned": len(logs),
        "config_logged": [c for c in CONFIG_LOGGED if any(c in text for text in logs.values())],
        "secrets_in_logs": sorted(name for name, text in logs.items() if any(x in text for x in secrets)),
    }


def sasl_ssl_scenario(cluster: KafkaCluster) -> Scenario:
    """A micro-batch query reading as `reader` (granted READ and DESCRIBE on its topic only, no
    super user) over the SASL_SSL listener with SCRAM-SHA-512, the brokers' certificates verified:
    the secured connections must come back after each fault as the plaintext ones do."""
    topic = "cluster-sasl-ssl"
    cluster.grant("reader", topic, ["READ", "DESCRIBE"])
    return Scenario(
        topic,
        "micro",
        [topic],
        per_feed=FEED,
        partitions=PARTITIONS,
        settings={
            "poll_timeout_ms": READER_PATIENCE_MS,
            "batch_records": BATCH_RECORDS,
            "bootstrap": cluster.sasl_ssl_bootstrap(),
            "kafka_properties": cluster.scram_properties("reader"),
            "log_kafka_config": True,
        },
    )


def wait_for_sink(driver, config: dict, written: list[str], what: str) -> str | None:
    """Until the epoch sink's committed epochs hold every id in `written` (all the harness wrote so
    far, the records written after the fault included); why not, if they did not within
    SINK_WAIT_S or the query ended. A committed epoch alone proves nothing here: real-time and
    continuous queries commit epochs that read nothing."""
    wanted = set(written)
    deadline = time.monotonic() + SINK_WAIT_S
    while missing := wanted - set(epoch_ids(config)):
        if driver.process.poll() is not None:
            return f"the query ended {what}:\n{driver.tail()}"
        if time.monotonic() > deadline:
            return (
                f"waited {SINK_WAIT_S} s {what} for the sink's committed epochs to hold all "
                f"{len(wanted)} ids written so far; {len(missing)} missing (e.g. "
                f"{', '.join(sorted(missing)[:3])}):\n{driver.tail()}"
            )
        time.sleep(0.5)
    return None


def wait_for_offsets(driver, checkpoint: str, ends: dict[str, dict[int, int]], what: str) -> str | None:
    """Until the micro-batch query's last committed batch left every partition of its topics at
    (or past) `ends` (each topic's end offsets); why not, if it did not within SINK_WAIT_S or the
    query ended."""
    wanted = {(t, p): end for t, offsets in ends.items() for p, end in offsets.items()}
    deadline = time.monotonic() + SINK_WAIT_S
    while short := sorted(tp for tp, end in wanted.items() if _read_to(checkpoint).get(tp, 0) < end):
        if driver.process.poll() is not None:
            return f"the query ended {what}:\n{driver.tail()}"
        if time.monotonic() > deadline:
            return (
                f"waited {SINK_WAIT_S} s {what} for a committed batch to read to the topics' end "
                f"offsets {ends}; behind: {short} (read to {_read_to(checkpoint)}):\n{driver.tail()}"
            )
        time.sleep(0.2)
    return None


def _read_to(checkpoint: str) -> dict[tuple[str, int], int]:
    """Per topic and partition, the offset the last committed batch left it at (its latest
    incarnation's split at most)."""
    found: dict[tuple[str, int], int] = {}
    for split, position in committed_positions(checkpoint).items():
        found[topic_partition(split)] = max(found.get(topic_partition(split), 0), position)
    return found


class Fleet:
    """The running queries of a cluster run, one driver each, and the harness's view of them."""

    def __init__(
        self, scenarios: list[Scenario], cluster: KafkaCluster, root: Path, driver: Callable
    ) -> None:
        self.scenarios = scenarios
        self.cluster = cluster
        self.root = root
        self.make_driver = driver
        self.drivers: dict[str, object] = {}
        self.configs: dict[str, dict] = {}
        self.problems: dict[str, str] = {}

    def start(self) -> None:
        for s in self.scenarios:
            work = self.root / s.name
            s.prepare(self.cluster, work)
            s.feed(self.cluster, 3 * FEED)
            config = {**s.config(self.cluster, work, drain=False), "drain_signal": str(work / "drain.now")}
            self.configs[s.name] = config
            self.drivers[s.name] = self.make_driver(config, work, "run")
        for s in self.scenarios:
            self.drivers[s.name].wait_started()
        self.progress("before the first fault")

    def feed(self) -> None:
        for s in self.scenarios:
            if s.name not in self.problems:
                s.feed(self.cluster)

    def progress(self, what: str) -> None:
        """Writes more records, then waits until each query still running read them all: a
        micro-batch query until its last committed batch's offsets reach the topic's end offsets
        taken after the write (`wait_for_offsets`: a batch that was running when the fault hit
        was planned before the write, so it cannot); a real-time or continuous query until its
        sink holds every id written so far (`wait_for_sink`: its epochs commit when empty too)."""
        self.feed()
        ends = {
            s.name: {t: self.cluster.end_offsets(t) for t in s.topics}
            for s in self.scenarios
            if s.mode == "micro" and s.name not in self.problems
        }
        for s in self.scenarios:
            if s.name in self.problems:
                continue
            config = self.configs[s.name]
            driver = self.drivers[s.name]
            if s.mode == "micro":
                problem = wait_for_offsets(driver, config["checkpoint"], ends[s.name], what)
            else:
                problem = wait_for_sink(driver, config, s.expected, what)
            if problem is not None:
                self.problems[s.name] = problem

    def topics(self) -> list[str]:
        return [t for s in self.scenarios for t in s.topics]

    def led_by(self, node: int) -> dict[str, bool]:
        """Whether the node leads a partition each query reads now."""
        return {
            s.name: any(node == leader for t in s.topics for leader in self.cluster.leaders(t).values())
            for s in self.scenarios
        }


def leader_kills(fleet: Fleet, kills: int, counts: dict[str, dict]) -> None:
    cluster = fleet.cluster
    first = fleet.topics()[0]
    for k in range(kills):
        fleet.feed()  # unread when the leader dies
        victim = cluster.leader(first, k % PARTITIONS)
        if victim is None:
            raise RuntimeError(f"{first} partition {k % PARTITIONS} has no leader before kill {k}")
        for name, hit in fleet.led_by(victim).items():
            counts[name]["broker_kills"] += hit
        cluster.kill_node(victim)
        # written while it is down (acks=all, two replicas in sync), and read
        fleet.progress(f"after node {victim} (a leader) was killed")
        cluster.start_nodes(victim)
        cluster.await_in_sync()
        cluster.elect_leaders(fleet.topics())


def rolling_restarts(fleet: Fleet, restarts: int, counts: dict[str, dict]) -> None:
    cluster = fleet.cluster
    for _ in range(restarts):
        for node in NODES:
            fleet.feed()
            cluster.stop_node(node)
            fleet.feed()
            cluster.start_nodes(node)
            cluster.await_in_sync()  # else the next stop leaves one replica in sync
        cluster.elect_leaders(fleet.topics())
        fleet.progress("after a rolling restart")
        for s in fleet.scenarios:
            counts[s.name]["rolling_restarts"] += 1


def reassignments(fleet: Fleet, counts: dict[str, dict]) -> None:
    """Each topic's partition 0 moves off its leader's node (two replicas left, the leader's copy
    deleted), then back onto it as a new replica that copies the log from the others."""
    cluster = fleet.cluster
    for s in fleet.scenarios:
        topic = s.topics[0]
        replicas = cluster.replicas(topic, 0)
        fleet.feed()
        cluster.reassign(topic, 0, replicas[1:])
        fleet.progress(f"after {topic} partition 0 moved off node {replicas[0]}")
        cluster.reassign(topic, 0, replicas)
        counts[s.name]["reassignments"] += 2
    fleet.progress("after the partitions moved back")


def cluster_down(fleet: Fleet, counts: dict[str, dict]) -> None:
    """Every node SIGKILLed: each query must fail within DOWN_FAILURE_S, naming the cause; the
    cluster then starts again (same data)."""
    fleet.feed()
    began = time.monotonic()
    for node in NODES:
        fleet.cluster.kill_node(node)
    for s in fleet.scenarios:
        driver = fleet.drivers[s.name]
        left = DOWN_FAILURE_S - (time.monotonic() - began)
        try:
            driver.process.wait(timeout=max(1.0, left))
        except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired: the query waits on
            counts[s.name]["cluster_down"] = f"still running {DOWN_FAILURE_S} s after the cluster went down"
            fleet.problems.setdefault(s.name, counts[s.name]["cluster_down"])
            driver.kill()
            continue
        line = failure_line(driver.tail(200))
        counts[s.name]["cluster_down"] = line
        counts[s.name]["failed_after_s"] = round(time.monotonic() - began, 1)
        if (unclear := clear_failure(line)) is not None:
            fleet.problems.setdefault(s.name, f"with the whole cluster down the query failed {unclear}")
    fleet.cluster.start_nodes(*NODES)
    fleet.cluster.await_in_sync()


def failure_line(log: str) -> str:
    """The first line of the log that names Sluice's or Spark's error, as the user would read it."""
    for line in log.splitlines():
        if "SLUICE_" in line or "KafkaSource:" in line:
            return line.strip()[:400]
    for line in log.splitlines():
        if "Exception" in line or "Error" in line:
            return line.strip()[:400]
    return "(no error in the log)"


#: what a failure with every broker down must say: the cause, and the option to check
DOWN_CAUSE = ("brokers", "reachable")
DOWN_OPTION = "kafka.bootstrap.servers"


def clear_failure(line: str) -> str | None:
    """Why the error a query failed with, the whole cluster down, would not tell its user what
    happened and what to check (None: it does): it must be Sluice's (`KafkaSource:`), name the
    brokers as unreachable and the option that says where they are."""
    missing = [w for w in ("KafkaSource:", *DOWN_CAUSE, DOWN_OPTION) if w not in line]
    return f"without naming {', '.join(repr(w) for w in missing)}: {line}" if missing else None


def against_topic(scenario: Scenario, config: dict, cluster: KafkaCluster) -> dict:
    """The sink against what the topic holds, record by record: a record the harness's producer
    wrote twice (a retry across a fault) is the topic's duplicate, not the reader's, so an id read
    as often as the topic holds it is read once. What replaces `check`'s `duplicated` keeps its
    other half: an id in the sink that the harness never wrote (a corrupt or made-up record) counts
    too, every time it appears. Lost and unread stay `check`'s (every id written, read), plus
    `lost_copies`: a copy the topic holds that no read matched (an id held twice, read once - the
    copies sit at the fault, where a reader that skips or seeks wrong would lose one), which the
    caller adds to `lost`. A few of each kind are named."""
    held = Counter(json.loads(r["value"])["id"] for t in scenario.topics for r in cluster.consume(t))
    written = set(scenario.expected)
    ids, _ = sink_ids(config)
    got = Counter(ids)
    read_twice = sorted(i for i, n in got.items() if i in written and n > max(held.get(i, 0), 1))
    not_written = sorted(i for i in got if i not in written)
    # an id never read at all is `check`'s (lost or unread) once: only its further copies count
    short = {i: held[i] - max(got.get(i, 0), 1) for i in written if held.get(i, 0) > max(got.get(i, 0), 1)}
    return {
        "lost_copies": sum(short.values()),
        "copies_unread": sorted(short)[:5],
        "duplicated_in_topic": sum(n - 1 for n in held.values() if n > 1),
        "duplicated": sum(got[i] - max(held.get(i, 0), 1) for i in read_twice)
        + sum(got[i] for i in not_written),
        "read_twice": read_twice[:5],
        "not_written": not_written[:5],
    }


def run_cluster(
    cluster: KafkaCluster,
    root: Path,
    modes: list[str],
    *,
    kills: int,
    rolling: int,
    move: bool,
    down: bool,
    driver: Callable,
    end: Callable,
    drain: Callable,
    extra: list[Scenario] = (),
    secured: bool = False,
) -> dict[str, dict]:
    """The faults above against one query per mode; `end(scenario, driver, config)` drains a
    query still running and checks its sink, `drain(scenario, work)` restarts one from its
    checkpoint to drain; `extra` scenarios run beside one per mode; `secured`: the micro-batch
    query reads over SASL_SSL and mutual TLS. Returns each scenario's result."""
    began = time.monotonic()
    fleet = Fleet(scenarios(modes, cluster, secured) + list(extra), cluster, root, driver)
    counts = {s.name: {"broker_kills": 0, "rolling_restarts": 0, "reassignments": 0} for s in fleet.scenarios}
    fleet.start()
    steps: list[Callable[[], None]] = [lambda: leader_kills(fleet, kills, counts)]
    if rolling:
        steps.append(lambda: rolling_restarts(fleet, rolling, counts))
    if move:
        steps.append(lambda: reassignments(fleet, counts))
    for step in steps:
        if len(fleet.problems) == len(fleet.scenarios):
            break
        step_began = time.monotonic()
        step()
        print(
            f"  a fault step took {time.monotonic() - step_began:.0f} s; problems: {fleet.problems}",
            flush=True,
        )
    if down:
        cluster_down(fleet, counts)
        print(f"  the whole cluster down: {counts}", flush=True)
    results: dict[str, dict] = {}
    for s in fleet.scenarios:
        work = root / s.name
        config = fleet.configs[s.name]
        if down or s.name in fleet.problems:
            fleet.drivers[s.name].kill()
            s.feed(cluster)  # written once the cluster is back
            # a query the outage failed is restarted; one a fault stopped otherwise is killed first
            killed = int(not down or s.name in fleet.problems)
            result = {**drain(s, work), "kills": killed, "restarts": 1}
        else:
            result = end(s, fleet.drivers[s.name], config)
        found = against_topic(s, fleet.configs[s.name], cluster)
        result.update(found, lost=result["lost"] + found["lost_copies"])
        if s.settings.get("log_kafka_config"):
            scan = secrets_in_logs(work, cluster.secrets())
            result.update(scan)
            if scan["secrets_in_logs"]:
                fleet.problems.setdefault(s.name, f"a password of the cluster in {scan['secrets_in_logs']}")
            elif not scan["config_logged"]:
                fleet.problems.setdefault(s.name, "no Kafka client configuration in the driver's log")
        if s.name in fleet.problems:
            result["failed"] = "; ".join(filter(None, [result.get("failed"), fleet.problems[s.name]]))
        results[s.name] = {**result, **counts[s.name], "seconds": round(time.monotonic() - began, 1)}
    return results

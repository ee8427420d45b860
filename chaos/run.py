"""`make chaos`: runs every scenario under faults and checks that its sink holds every record
exactly once; writes `bench/results/chaos.json`.

Driver kills: the scenario's driver (Python and its JVM, one process group) is started from the
checkpoint, killed with SIGKILL a random time (fixed seed) after its query started, and more
records are written before the next start; `CHAOS_KILLS` (default 20) kills in all, shared by
the scenarios (`Scenario.kill_share`). A last run drains what is left (AvailableNow, or until the
committed epochs hold it) and the sink is checked. Then faults of the system around one running
query: executor JVMs killed, the broker stopped and restarted (same port and data), and records
deleted below the read position (failOnDataLoss true and false); the driver is then killed and a
draining driver restarts from the checkpoint the fault left, and the sink is checked. The reduced
run in `make test` lets that query drain itself instead (a driver's start is the costliest step
there; `end_fault_run`).

Switch halts: a files -> Kafka hybrid's driver halted by its own fault injection between the
switch being logged and committed (`switch`: before the batch ran; `switch-ran`: after it ran),
then restarted from that checkpoint to drain (`switch_halt`); `make test` runs `switch`.

`CHAOS_SEED` fixes the kill moments; `CHAOS_SCENARIOS` (comma-separated names) runs a part
(printed, not written to the results); `sasl` alone runs the SASL_SSL reader on the 3-broker
cluster under two leader kills and a partition moved (`SASL_CLUSTER_FAULTS`), `cluster` the full
cluster faults (with it).

Keys: `kills`, `restarts`, `scenarios` (name -> passed), `lost`, `duplicated`, `unread` (sums
over the scenarios; goal 0 each), `cleared_first_writes` (files a kill left in a checkpoint that
had logged no batch yet, removed before the restart as Spark asks: `clear_unlogged_start`), and
per scenario its counts and seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from sluice.testing import EmbeddedKafka

from chaos.broker_faults import run_cluster, sasl_ssl_scenario
from chaos.cluster import KafkaCluster
from chaos.scenarios import Scenario, all_scenarios
from chaos.sinks import committed_epochs, committed_positions, partition_of, sink_ids

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "bench" / "results" / "chaos.json"
STARTUP_TIMEOUT_S = 180
DRAIN_TIMEOUT_S = 600


def clear_unlogged_start(checkpoint: Path) -> int:
    """Spark 4.3 refuses to start a micro-batch or real-time query whose offset log holds no batch
    while its `offsets` or `commits` folder holds any file (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY;
    continuous processing does not check, and the chaos queries keep no state, whose folder
    micro-batch mode checks too). A driver killed while it wrote its first offset leaves exactly
    that: the write's temporary file (and its checksum). Nothing was logged, so removing the
    leftovers is what Spark's message asks and loses nothing (`sources/`, where Sluice keeps its
    resolved start, stays); the runs count how often it was needed. Returns the files removed."""
    folders = [checkpoint / "offsets", checkpoint / "commits"]
    files = [f for d in folders if d.is_dir() for f in d.iterdir()]
    if not files or any(f.name.isdigit() for f in files):
        return 0  # a new checkpoint, or one with a logged batch: Spark restarts from it
    for f in files:
        f.unlink()
    return len(files)


def checkpoint_logs(checkpoint: Path) -> str:
    """What a checkpoint's offset and commit logs hold (names and sizes), for a failure to show."""
    listed = {
        sub: sorted(f"{f.name}:{f.stat().st_size}" for f in (checkpoint / sub).iterdir())
        for sub in ("offsets", "commits")
        if (checkpoint / sub).is_dir()
    }
    return json.dumps(listed)


class Driver:
    """One driver process of a scenario, in a process group of its own (its JVM included)."""

    def __init__(self, config: dict, work: Path, label: str, env: dict[str, str] | None = None) -> None:
        checkpoint = Path(config["checkpoint"])
        found = checkpoint_logs(checkpoint)
        #: leftovers of a first offset write cut by the previous run's kill, removed before start
        self.cleared = clear_unlogged_start(checkpoint)
        #: the checkpoint's logs as this driver found them (and after clearing), said on failure
        self.logs_at_start = f"{found} (cleared {self.cleared} files)" if self.cleared else found
        path = work / f"{label}.json"
        path.write_text(json.dumps(config))
        self.log = work / f"{label}.log"
        # `env`: more of the driver's environment (its JVM inherits it), e.g. a test's fault injection
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **(env or {}),
        )
        with open(self.log, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "chaos.driver", str(path)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )

    def wait_started(self) -> None:
        """Until the query runs; raises with the driver's log if it ended first or stayed silent."""
        started = threading.Event()

        def watch() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                if line.strip() == "STARTED":
                    started.set()

        threading.Thread(target=watch, daemon=True).start()
        if not started.wait(STARTUP_TIMEOUT_S):
            self.kill()
            raise RuntimeError(
                f"the driver did not start its query; its checkpoint's logs at start: "
                f"{self.logs_at_start}\n{self.tail()}"
            )

    def wait_for_commits(self, checkpoint: str, more_than: int, what: str) -> str | None:
        """Until the running query commits more than `more_than` batches; why not, if it did not."""
        deadline = time.monotonic() + 120
        while len(committed_epochs(checkpoint)) <= more_than:
            if self.process.poll() is not None:
                return f"the query ended {what}:\n{self.tail()}"
            if time.monotonic() > deadline:
                return f"the query committed no batch {what} within 120 s:\n{self.tail()}"
            time.sleep(0.2)
        return None

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def finish(self) -> None:
        """Waits for a draining driver to end; raises with its log if it failed."""
        try:
            code = self.process.wait(timeout=DRAIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"the draining driver did not end:\n{self.tail()}") from None
        if code != 0:
            raise RuntimeError(
                f"the draining driver failed ({code}); its checkpoint's logs at start: "
                f"{self.logs_at_start}\n{self.tail()}"
            )

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def check(scenario: Scenario, config: dict) -> dict:
    """Lost, duplicated and unread records of a drained scenario."""
    ids, backlog = sink_ids(config)
    got = Counter(ids)
    expected = set(scenario.expected)
    missing = len(expected - got.keys())
    unread = min(missing, backlog)
    return {
        "records": len(expected),
        "lost": missing - unread,
        "duplicated": sum(n - 1 for n in got.values() if n > 1)
        + sum(n for i, n in got.items() if i not in expected),
        "unread": unread,
    }


def drain(scenario: Scenario, kafka: EmbeddedKafka, work: Path) -> dict:
    config = scenario.config(kafka, work, drain=True)
    driver = Driver(config, work, "drain")
    driver.finish()
    return {**check(scenario, config), "cleared_first_writes": driver.cleared}


def end_fault_run(
    scenario: Scenario, driver: Driver, config: dict, kafka: EmbeddedKafka, work: Path, restart: bool
) -> dict:
    """Ends the run of a query that lived through a fault, and checks the sink. With `restart` (the
    full run) the driver is killed and a draining driver restarts from the checkpoint the fault
    left; without (the reduced run in `make test`) the same query drains what is left (a driver
    started with `drain_signal`: no second JVM). A drain that fails is the scenario's failure,
    never the end of the run: a restart then drains, so the sink is still counted."""
    if not restart:
        # how many records were written in all: a real-time or continuous query drains to that
        Path(config["drain_signal"]).write_text(str(len(scenario.expected)))
        try:
            driver.finish()
            return check(scenario, config)
        except RuntimeError as failed:
            problem = f"the query failed while draining in place: {failed}"
    else:
        problem = None
    driver.kill()
    result = {**drain(scenario, kafka, work), "kills": 1, "restarts": 1}
    return {**result, "failed": problem} if problem else result


def _draining_in_place(config: dict, work: Path) -> dict:
    return {**config, "drain_signal": str(work / "drain.now")}


def killed_runs(scenario: Scenario, kafka: EmbeddedKafka, work: Path, kills: int, rng: random.Random) -> dict:
    """Starts and kills the scenario's driver `kills` times, then drains and checks the sink."""
    began = time.monotonic()
    scenario.prepare(kafka, work)
    scenario.feed(kafka)
    checkpoint = str(work / "checkpoint")
    committed_at_kills = []
    cleared = 0
    for k in range(kills):
        driver = Driver(scenario.config(kafka, work, drain=False), work, f"run-{k}")
        cleared += driver.cleared
        driver.wait_started()
        # from planning the first batch to well into the run: the first batch of a start takes seconds
        time.sleep(rng.uniform(0.2, 8.0))
        driver.kill()
        committed_at_kills.append(len(committed_epochs(checkpoint)))
        scenario.feed(kafka)
    result = drain(scenario, kafka, work)
    return {
        **result,
        "cleared_first_writes": cleared + result["cleared_first_writes"],
        "kills": kills,
        "restarts": kills,
        "batches": len(committed_epochs(checkpoint)),
        "committed_at_kills": committed_at_kills,
        "seconds": round(time.monotonic() - began, 1),
    }


def fault_under_query(
    scenario: Scenario,
    config: dict,
    kafka: EmbeddedKafka,
    work: Path,
    fault: Callable[[], None],
    what: str,
    warm: int,
    restart: bool,
) -> dict:
    """Runs the scenario's query until it committed more than `warm` batches, applies `fault`,
    writes 1,000 more records and requires the same query (not a restarted one) to commit more;
    then ends the run (`end_fault_run`) and checks the sink."""
    began = time.monotonic()
    config = _draining_in_place(config, work)
    driver = Driver(config, work, "run")
    driver.wait_started()
    problem = driver.wait_for_commits(config["checkpoint"], warm, f"before {what}")
    if problem is None:
        fault()
        scenario.feed(kafka, 1000)
        problem = driver.wait_for_commits(
            config["checkpoint"], len(committed_epochs(config["checkpoint"])) + 1, f"after {what}"
        )
    if problem is None:
        result = end_fault_run(scenario, driver, config, kafka, work, restart)
    else:
        driver.kill()
        result = {**drain(scenario, kafka, work), "kills": 1, "restarts": 1, "failed": problem}
    return {**result, "seconds": round(time.monotonic() - began, 1)}


#: the driver JVM's fault injection of tests (`SwitchHalt` in jvm/spark): set (`SWITCH_HALTS`), the driver
#: halts when the offset log holds the batch that performs a hybrid's switch and the commit log does not
HALT_AT_SWITCH = "SLUICE_TEST_FAULT_HALT_AT_SWITCH"
#: the line the driver writes to its stderr just before that halt
HALT_ANNOUNCEMENT = "SLUICE TEST FAULT: halting the driver at the hybrid switch"


def _offset_log_batches(checkpoint: Path, log: str) -> list[int]:
    folder = checkpoint / log
    return sorted(int(f.name) for f in folder.iterdir() if f.name.isdigit()) if folder.is_dir() else []


def _active_source(checkpoint: Path, batch: int) -> int:
    """The hybrid's active source in batch `batch`'s end offset (its one source's line of the
    offset log: a Sluice offset that holds its checkpoint, whose enumerator state is the hybrid's)."""
    offset = json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[-1])
    if "enumerator" not in offset:
        raise ValueError(f"batch {batch}'s offset names a kept checkpoint, not read here: {offset}")
    return json.loads(offset["enumerator"]["state"])["active"]


def switch_logged_not_committed(checkpoint: Path) -> dict:
    """What the checkpoint says about the last logged batch: its number, the hybrid's active
    source before and after it, and whether the commit log holds it."""
    logged = _offset_log_batches(checkpoint, "offsets")
    if not logged:
        return {"last_logged": None}
    last = logged[-1]
    return {
        "last_logged": last,
        "active_before": _active_source(checkpoint, last - 1) if last > 0 else 0,
        "active_after": _active_source(checkpoint, last),
        "committed": last in _offset_log_batches(checkpoint, "commits"),
    }


#: when the switch halt lands (`HALT_AT_SWITCH`'s values): `logged`, when Spark plans the switch
#: batch's tasks (nothing of it ran); `ran`, once its tasks ended (before the sink commits it)
SWITCH_HALTS = {"logged": "switch", "ran": "switch-ran"}


def switch_halt(kafka: EmbeddedKafka, work: Path, moment: str) -> dict:
    """A files -> Kafka hybrid's driver halts exactly between its switch being logged and
    committed: started with `HALT_AT_SWITCH` set to `moment`, its JVM halts (no shutdown hook, no
    commit: what a SIGKILL leaves) once the offset log holds the batch whose end offset performs
    the switch. The checkpoint must show that batch last in the offset log, switching from source
    0 to 1, with no commit, and the file sink no entry for it; a driver without the fault restarts
    from it and drains, and the sink must hold every record once (the records of the files, the
    overlap the switch must not read twice, and Kafka's)."""
    began = time.monotonic()
    name = SWITCH_HALTS[moment]
    scenario = Scenario(name, "micro", [f"{name}-live"], files=1200, overlap=200)
    scenario.prepare(kafka, work)
    scenario.feed(kafka)
    checkpoint = work / "checkpoint"
    driver = Driver(scenario.config(kafka, work, drain=False), work, "halted", env={HALT_AT_SWITCH: moment})
    driver.wait_started()
    problem = None
    try:
        # the JVM halts on its own; its Python process then ends on the lost gateway
        code: int | None = driver.process.wait(timeout=STARTUP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        code = None
        problem = f"the driver did not halt within {STARTUP_TIMEOUT_S} s:\n{driver.tail()}"
    driver.kill()  # what is left of its process group
    announced = driver.log.read_text(encoding="utf-8", errors="replace").count(HALT_ANNOUNCEMENT)
    found = switch_logged_not_committed(checkpoint)
    committed_at_halt = len(committed_epochs(str(checkpoint)))
    # the file sink's own log of the batches it committed
    sink_logged = (
        found.get("last_logged") is not None
        and (
            Path(scenario.config(kafka, work, drain=False)["out"])
            / "_spark_metadata"
            / str(found["last_logged"])
        ).exists()
    )
    at_switch = (
        announced == 1
        and found.get("last_logged") is not None
        and (found["active_before"], found["active_after"], found["committed"], sink_logged)
        == (0, 1, False, False)
    )
    if problem is None and not at_switch:
        problem = (
            f"the halt was not at the switch: announced {announced} times, checkpoint {found}, "
            f"logs {checkpoint_logs(checkpoint)}:\n{driver.tail()}"
        )
    scenario.feed(kafka)
    result = drain(scenario, kafka, work)
    result = {
        **result,
        "kills": 1,
        "restarts": 1,
        "committed_at_kills": [committed_at_halt],
        "halted_at_switch": at_switch,
        "halt_moment": moment,
        "halted_driver_exit": code,
        "halted_batch": {**found, "sink_committed": sink_logged},
        "batches": len(committed_epochs(str(checkpoint))),
        "seconds": round(time.monotonic() - began, 1),
    }
    return {**result, "failed": problem} if problem else result


LOCAL_CLUSTER = "local-cluster[2,1,768]"  # two executor JVMs of their own, as a cluster has
EXECUTOR_WAIT_S = 120


def _executor_pids(driver: Driver) -> list[int]:
    """The executor JVMs of a local-cluster driver: its workers start them in its process group."""
    found = subprocess.run(
        ["pgrep", "-g", str(driver.process.pid), "-f", "CoarseGrainedExecutorBackend"],
        capture_output=True,
        text=True,
    )
    return [int(p) for p in found.stdout.split()]


def _records_read(path: Path) -> int:
    return json.loads(path.read_text())["recordsRead"] if path.exists() else 0


def _log_count(driver: Driver, text: str) -> int:
    return driver.log.read_text(encoding="utf-8", errors="replace").count(text)


def _tasks_in_flight(driver: Driver) -> int:
    """Tasks the driver started and has not yet heard end (its TaskSetManager logs at INFO
    under local-cluster: `chaos/driver.py`)."""
    log = driver.log.read_text(encoding="utf-8", errors="replace")
    return log.count("Starting task ") - log.count("Finished task ") - log.count("Lost task ")


def executor_kills(kafka: EmbeddedKafka, work: Path, kills: int, rng: random.Random, restart: bool) -> dict:
    """Executor JVMs killed with SIGKILL while one driver reads (local-cluster mode), until
    `kills` of them landed inside a running task: Spark re-runs the lost tasks, and the stages
    whose shuffle output died with an executor, on executors it starts again. Every record must
    reach the sink once, and the source's progress must count each record once (`recordsRead`
    equal to what was written), although re-run source tasks report their ranges again."""
    began = time.monotonic()
    progress = work / "progress.json"
    scenario = Scenario(
        "executors",
        "micro",
        ["executors"],
        per_feed=600,
        settings={"master": LOCAL_CLUSTER, "slow": True, "progress": str(progress)},
    )
    scenario.prepare(kafka, work)
    scenario.feed(kafka, 1500)
    config = _draining_in_place(scenario.config(kafka, work, drain=False), work)
    driver = Driver(config, work, "run")
    driver.wait_started()
    problem = driver.wait_for_commits(config["checkpoint"], 0, "before the first executor kill")
    killed = landed = 0
    while problem is None and landed < kills and killed < 4 * kills:
        time.sleep(rng.uniform(0.5, 3.0))
        deadline = time.monotonic() + EXECUTOR_WAIT_S
        while (
            not (pids := _executor_pids(driver))
            and time.monotonic() < deadline
            and driver.process.poll() is None
        ):
            time.sleep(0.5)  # the cluster is starting an executor again
        if not pids:
            problem = f"no executor ran within {EXECUTOR_WAIT_S} s after kill {killed}:\n{driver.tail()}"
            break
        # a kill between batches cuts nothing: wait for a task in flight (under load the query
        # may have read all it was fed, or the random pause may fall between two batches)
        busy = time.monotonic() + EXECUTOR_WAIT_S
        while _tasks_in_flight(driver) == 0 and time.monotonic() < busy and driver.process.poll() is None:
            if _records_read(progress) >= len(scenario.expected):
                scenario.feed(kafka)
            time.sleep(0.1)
        lost_before = _log_count(driver, "ExecutorLostFailure")
        try:
            os.kill(rng.choice(pids), signal.SIGKILL)
        except ProcessLookupError:
            continue  # it ended between the listing and the kill
        killed += 1
        scenario.feed(kafka)
        # the driver hears of a lost executor within a second or two; did the kill cut a task?
        heard = time.monotonic() + 5
        while _log_count(driver, "ExecutorLostFailure") == lost_before and time.monotonic() < heard:
            time.sleep(0.5)
        landed += _log_count(driver, "ExecutorLostFailure") > lost_before
    if problem is None and landed < kills:
        problem = f"only {landed} of {killed} executor kills landed inside a task (wanted {kills})"
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while problem is None and _records_read(progress) < len(scenario.expected):
        if driver.process.poll() is not None or time.monotonic() > deadline:
            problem = f"the query read {_records_read(progress)} of {len(scenario.expected)} records:\n{driver.tail()}"
        time.sleep(1)
    counted = _records_read(progress)
    if problem is None:
        result = end_fault_run(scenario, driver, config, kafka, work, restart)
    else:
        driver.kill()
        result = {**drain(scenario, kafka, work), "kills": 1, "restarts": 1}
    tasks_lost = _log_count(driver, "ExecutorLostFailure")
    resubmitted = _log_count(driver, "Resubmitted ShuffleMapTask")
    if problem is None and counted != len(scenario.expected):
        problem = f"the source's progress counted {counted} records read of {len(scenario.expected)} written"
    if problem is not None:
        result["failed"] = "; ".join(filter(None, [result.get("failed"), problem]))
    return {
        **result,
        "executor_kills": killed,
        "kills_inside_tasks": landed,
        "tasks_lost_with_executors": tasks_lost,
        "finished_map_tasks_rerun": resubmitted,
        "records_counted": counted,
        "seconds": round(time.monotonic() - began, 1),
    }


def broker_restart(kafka: EmbeddedKafka, work: Path, restart: bool) -> dict:
    """The broker stops and comes back (same port and data) while a query reads."""
    scenario = Scenario("broker", "micro", ["broker"])
    scenario.prepare(kafka, work)
    scenario.feed(kafka, 2000)

    def bounce() -> None:
        kafka.stop()
        time.sleep(5)  # the outage itself
        kafka.start()

    return fault_under_query(
        scenario,
        scenario.config(kafka, work, drain=False),
        kafka,
        work,
        bounce,
        "the broker's restart",
        warm=0,
        restart=restart,
    )


def deleted_below(kafka: EmbeddedKafka, work: Path, fail_on_data_loss: bool, restart: bool) -> dict:
    """Records below the position read are deleted while the query reads: nothing may fail,
    nothing is lost or duplicated."""
    name = f"deleted-{str(fail_on_data_loss).lower()}"
    scenario = Scenario(name, "micro", [name])
    scenario.prepare(kafka, work)
    scenario.feed(kafka, 3000)
    config = {**scenario.config(kafka, work, drain=False), "failOnDataLoss": fail_on_data_loss}
    trimmed: list[str] = []

    def delete() -> None:
        for split, position in committed_positions(config["checkpoint"]).items():
            kafka.delete_records(name, partition_of(split), position)
            trimmed.append(split)

    result = fault_under_query(
        scenario, config, kafka, work, delete, "records were deleted", warm=2, restart=restart
    )
    return {**result, "partitions_trimmed": len(trimmed)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CLUSTER_MODES = ("micro", "realtime", "continuous")


class ClusterFaults:
    """How the broker faults on the 3-broker cluster run (`chaos.broker_faults`): `modes` are the
    queries reading at once; `kills` leader kills and `rolling` rolling restarts under them all;
    `move` partitions reassigned; `down` the whole cluster down past the readers' patience (then
    every query restarts from its checkpoint); `beside`: they run beside the other scenarios rather
    than after them (the reduced run, whose wall time `make test` pays; its faults mostly wait on
    broker JVMs); `sasl`: a micro-batch query reading over SASL_SSL (SCRAM-SHA-512) beside them
    (`chaos.broker_faults.sasl_ssl_scenario`), under every fault; `secured`: the micro-batch
    query itself reads over SASL_SSL and mutual TLS (`secured_micro_scenario`: no more drivers)."""

    def __init__(
        self,
        modes: tuple[str, ...],
        kills: int,
        rolling: int,
        move: bool,
        down: bool,
        beside: bool = False,
        sasl: bool = False,
        secured: bool = False,
    ) -> None:
        self.modes, self.kills, self.rolling, self.move, self.down = list(modes), kills, rolling, move, down
        self.beside, self.sasl, self.secured = beside, sasl, secured


FULL_CLUSTER_FAULTS = ClusterFaults(CLUSTER_MODES, kills=10, rolling=2, move=True, down=True, sasl=True)
#: `CHAOS_SCENARIOS=sasl`: the SASL_SSL reader alone, under leader kills and a partition moved
SASL_CLUSTER_FAULTS = ClusterFaults((), kills=2, rolling=0, move=True, down=False, sasl=True)


def _in_background(work: Callable[[], object], name: str) -> threading.Thread:
    """`work` in a thread of its own; what it raised is kept for whoever joins it (`_joined`)."""
    failure: list[BaseException] = []

    def run_it() -> None:
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - raised again by _joined
            failure.append(e)

    thread = threading.Thread(target=run_it, name=name, daemon=True)
    thread.failure = failure  # type: ignore[attr-defined]
    thread.start()
    return thread


def _joined(thread: threading.Thread) -> None:
    thread.join()
    if thread.failure:  # type: ignore[attr-defined]
        raise thread.failure[0]  # type: ignore[attr-defined]


def cluster_scenarios(
    cluster: KafkaCluster, starting: threading.Thread, root: Path, faults: ClusterFaults, restart: bool
) -> dict[str, dict]:
    _joined(starting)
    print(
        f"chaos: broker faults on the 3-broker cluster under {', '.join(faults.modes) or 'no mode query'}: "
        f"{faults.kills} leader kills, {faults.rolling} rolling restarts, "
        f"reassignments {'yes' if faults.move else 'no'}, whole cluster down {'yes' if faults.down else 'no'}"
        f"{', a reader over SASL_SSL beside them' if faults.sasl else ''}"
        f"{', the micro-batch query over SASL_SSL and mutual TLS' if faults.secured else ''}",
        flush=True,
    )
    return run_cluster(
        cluster,
        root,
        faults.modes,
        kills=faults.kills,
        rolling=faults.rolling,
        move=faults.move,
        down=faults.down,
        driver=Driver,
        end=lambda s, driver, config: end_fault_run(s, driver, config, cluster, root / s.name, restart),
        drain=lambda s, work: drain(s, cluster, work),
        extra=[sasl_ssl_scenario(cluster)] if faults.sasl else [],
        secured=faults.secured,
    )


@contextlib.contextmanager
def _scratch() -> Iterator[str]:
    """The run's folder; CHAOS_KEEP=1 keeps it (checkpoints, sinks, driver logs) for a post-mortem."""
    folder = tempfile.mkdtemp(prefix="sluice-chaos-")
    try:
        yield folder
    finally:
        if os.environ.get("CHAOS_KEEP"):
            print(f"chaos: the run's folder is kept: {folder}", flush=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def run(
    kills: int,
    seed: int,
    names: list[str] | None = None,
    restart_after_faults: bool = True,
    cluster_faults: ClusterFaults = FULL_CLUSTER_FAULTS,
) -> dict:
    """Every scenario (or those named), each in a folder of its own, sharing `kills` driver kills
    (each scenario at least one); the summary. `restart_after_faults`: a query that lived through
    a fault is killed and its checkpoint restarted to drain (else it drains itself: `end_fault_run`).
    The name `cluster` runs `cluster_faults` on the 3-broker cluster."""
    rng = random.Random(seed)
    results: dict[str, dict] = {}
    began = time.monotonic()
    with _scratch() as scratch:
        root = Path(scratch)
        kafka = EmbeddedKafka(port=free_port(), data_dir=root / "kafka")
        kafka.start()
        if names is not None and "sasl" in names and "cluster" not in names:
            cluster_faults = SASL_CLUSTER_FAULTS
        wants_cluster = names is None or "cluster" in names or "sasl" in names
        cluster = KafkaCluster() if wants_cluster else None
        starting = _in_background(cluster.start, "chaos-cluster-start") if cluster is not None else None
        found: dict[str, dict] = {}

        def cluster_run() -> None:
            assert cluster is not None and starting is not None
            found.update(
                cluster_scenarios(cluster, starting, root / "cluster", cluster_faults, restart_after_faults)
            )

        beside = (
            _in_background(cluster_run, "chaos-cluster-faults")
            if cluster is not None and cluster_faults.beside
            else None
        )
        try:
            for scenario in all_scenarios():
                if names is None or scenario.name in names:
                    share = max(1, round(kills * scenario.kill_share))
                    print(f"chaos: {scenario.name} ({scenario.mode}), {share} kills", flush=True)
                    results[scenario.name] = killed_runs(scenario, kafka, root / scenario.name, share, rng)
                    print(f"  {results[scenario.name]}", flush=True)
            for moment, label in SWITCH_HALTS.items():
                if names is None or label in names:
                    print(
                        f"chaos: a hybrid's driver halted at its switch, {moment}, not committed", flush=True
                    )
                    results[label] = switch_halt(kafka, root / label, moment)
                    print(f"  {results[label]}", flush=True)
            if names is None or "executors" in names:
                share = max(1, kills // 6)  # kills inside tasks; those that cut none are retried
                print(f"chaos: executors killed mid-task ({LOCAL_CLUSTER}), {share} kills", flush=True)
                results["executors"] = executor_kills(
                    kafka, root / "executors", share, rng, restart_after_faults
                )
                print(f"  {results['executors']}", flush=True)
            if names is None or "broker" in names:
                print("chaos: broker stopped and restarted while a query reads", flush=True)
                results["broker-restart"] = broker_restart(kafka, root / "broker", restart_after_faults)
                print(f"  {results['broker-restart']}", flush=True)
            for fail in (True, False):
                label = f"deleted-below-read-failOnDataLoss-{str(fail).lower()}"
                if names is None or "deleted" in names or f"deleted-{str(fail).lower()}" in names:
                    print(f"chaos: {label}", flush=True)
                    results[label] = deleted_below(kafka, root / label, fail, restart_after_faults)
                    print(f"  {results[label]}", flush=True)
            if beside is not None:
                _joined(beside)
            elif cluster is not None:
                cluster_run()
            if found:
                for name, result in found.items():
                    print(f"  {name}: {result}", flush=True)
                results.update(found)
        finally:
            if beside is not None:
                beside.join()
            if starting is not None:
                starting.join()
            if cluster is not None:
                cluster.stop()
            kafka.stop()

    def total(key: str) -> int:
        return sum(r.get(key, 0) for r in results.values())

    passed = {
        name: "failed" not in r and r["lost"] == 0 and r["duplicated"] == 0 and r["unread"] == 0
        for name, r in results.items()
    }
    return {
        "benchmark": "chaos",
        "seed": seed,
        "kills": total("kills"),
        "restarts": total("restarts"),
        "executor_kills": total("executor_kills"),
        # each broker fault lands under every query of the cluster run at once: counted once here
        "broker_kills": max((r.get("broker_kills", 0) for r in results.values()), default=0),
        "rolling_restarts": max((r.get("rolling_restarts", 0) for r in results.values()), default=0),
        "cleared_first_writes": total("cleared_first_writes"),
        "scenarios": passed,
        "lost": total("lost"),
        "duplicated": total("duplicated"),
        "unread": total("unread"),
        "seconds": round(time.monotonic() - began, 1),
        "details": results,
    }


def main() -> int:
    kills = int(os.environ.get("CHAOS_KILLS", "20"))
    seed = int(os.environ.get("CHAOS_SEED", "20261124"))
    only = os.environ.get("CHAOS_SCENARIOS")  # e.g. "hybrid,broker": a part of the run, for debugging
    result = run(kills, seed, only.split(",") if only else None)
    if not only:  # a part of the run is not the run's result
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "details"}, indent=2))
    return 0 if all(result["scenarios"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

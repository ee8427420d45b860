"""The chaos run in small (`make chaos` is the full one): a files -> Kafka hybrid whose driver is
killed once at random and once, deterministically, between its switch being logged and committed
(the driver's fault injection halts it there), an aligned group, a continuous and a real-time query killed once each, an executor
JVM killed under a local-cluster query, the broker restarted under a reading query, records
deleted below the read position under failOnDataLoss=true (which must do nothing), and on the
3-broker cluster a partition leader killed under a micro-batch query that reads through the Python
builder as a user of READ and DESCRIBE only, one topic over SASL_SSL and one over mutual TLS, and
whose driver's log holds none of the cluster's passwords (rolling restarts, reassignments and the
whole cluster down are `make chaos`'s); every
sink must hold every record exactly once. The queries that live through a fault drain themselves
here; `make chaos` restarts them.

`make test` runs the real-time kill alone, after everything else (build/test): under load, Spark
has refused its restart (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY naming `commits`) in a way the
harness does not explain yet; each start now logs what the checkpoint's logs hold, so the next
occurrence says why (see docs/reliability.md, known gaps)."""

from __future__ import annotations

import pytest

from chaos.broker_faults import CONFIG_LOGGED
from chaos.run import ClusterFaults, run

pytestmark = pytest.mark.slow


def _check(result: dict, scenarios: set[str]) -> None:
    details = {name: {k: v for k, v in r.items() if k != "failed"} for name, r in result["details"].items()}
    failures = {name: r["failed"] for name, r in result["details"].items() if "failed" in r}
    assert not failures, failures
    assert set(result["scenarios"]) == scenarios
    assert (result["lost"], result["duplicated"], result["unread"]) == (0, 0, 0), details
    # the records were there to lose: every scenario delivered what was written
    assert all(r["records"] > 0 for r in result["details"].values()), details


#: the reduced broker faults: one leader kill under a micro-batch query reading over both secured
#: listeners, beside the other scenarios (they mostly wait on broker JVMs); a rolling restart
#: restarts three JVMs and the whole cluster down waits out the driver's 60 s look-up, then starts
#: three (a fresh clone measured the latter at +120 s of the lane, +27 CPU-s), which make test's 15
#: minutes cannot pay for: make chaos runs both in every mode
REDUCED_CLUSTER = ClusterFaults(
    ("micro",), kills=1, rolling=0, move=False, down=False, beside=True, secured=True
)


def test_kills_broker_faults_and_deletions_lose_and_duplicate_nothing() -> None:
    # 3 kills shared: 1 each for the hybrid, the group, the continuous query and the executors (the
    # hybrid's second kill is the switch halt: one more driver start than one random kill costs)
    # the reduced run: a query that lived through a fault drains itself (no restart's JVM)
    result = run(
        kills=3,
        seed=7,
        names=["hybrid", "switch", "group", "continuous", "executors", "broker", "deleted-true", "cluster"],
        restart_after_faults=False,
        cluster_faults=REDUCED_CLUSTER,
    )
    _check(
        result,
        {
            "hybrid",
            "switch",
            "group",
            "continuous",
            "executors",
            "broker-restart",
            "deleted-below-read-failOnDataLoss-true",
            "cluster-micro",
        },
    )
    assert result["details"]["hybrid"]["kills"] == 1
    switch = result["details"]["switch"]
    # the halt landed where it was asked to: the driver said so, and the checkpoint's last logged
    # batch switches from the files (source 0) to Kafka (1) with no commit for it, in the commit
    # log or the file sink's log
    assert switch["halted_at_switch"], switch
    halted = switch["halted_batch"]
    assert (halted["active_before"], halted["active_after"]) == (0, 1), switch
    assert (halted["committed"], halted["sink_committed"]) == (False, False), switch
    # the restart replayed that batch and went on past it
    assert switch["batches"] > halted["last_logged"] + 1, switch
    assert (result["details"]["group"]["kills"], result["details"]["continuous"]["kills"]) == (1, 1)
    cluster = result["details"]["cluster-micro"]
    # the node killed led a partition the query read
    assert (cluster["broker_kills"], cluster["rolling_restarts"]) == (1, 0), cluster
    # read over both secured listeners (every record once, above); Kafka's clients logged their
    # configuration with the SCRAM login and the key store password hidden, and no log of the
    # driver holds a password of the cluster
    assert cluster["config_logged"] == list(CONFIG_LOGGED), cluster
    assert cluster["logs_scanned"] >= 1 and cluster["secrets_in_logs"] == [], cluster
    executors = result["details"]["executors"]
    # the kill cut a running task (the scenario kills again until one does, or fails)
    assert executors["kills_inside_tasks"] == 1, executors
    assert executors["records_counted"] == executors["records"], executors


def test_a_real_time_query_killed_loses_and_duplicates_nothing() -> None:
    result = run(kills=5, seed=7, names=["realtime"])
    _check(result, {"realtime"})
    assert result["details"]["realtime"]["kills"] == 1

"""A hybrid of a table (Iceberg by pyiceberg, Delta by delta-rs) then Kafka (the session's broker)
stopped before, at and after its switch, the table appended to or dropped and created again while
it is stopped, and restarted from its checkpoint; and a bounded table read restarted on a table
created again. Each stop is a batch that fails before the sink commits it (its offset logged, as
when a driver dies then), so the restart replays it from the offset log before it plans on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sluice
from checkpoints import logged_enumerator_field
from pyspark.sql import SparkSession
from sluice.testing import EmbeddedKafka
from table_hybrids import (
    APPENDED_IDS,
    HISTORIES,
    KAFKA_STARTS,
    TABLE_IDS,
    TOPIC_IDS,
    DeltaHistory,
    HistoryTable,
    expected_rows,
    kafka_starts,
    produce_events,
    read_rows,
    rows_of,
    run,
    table_then_kafka,
)

#: the row that stops a query inside the table, in its second batch: each batch reads 6 or 7 rows of
#: each of the table's three files, and id 30 is the 11th of its file
INSIDE_THE_TABLE = "id = 30"
#: Kafka's records from the table's largest event time minus the margin: ids 54 and 55 on
FROM_KAFKA = range(54, TOPIC_IDS.stop)


@pytest.fixture(params=sorted(HISTORIES))
def history(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryTable:
    return HISTORIES[request.param](tmp_path / "table")


def _topic(kafka: EmbeddedKafka, request: pytest.FixtureRequest) -> str:
    """A topic of this test's own (the broker is the session's), holding `TOPIC_IDS`."""
    topic = "py-table-hybrid-" + "".join(c if c.isalnum() else "-" for c in request.node.name).strip("-")
    kafka.create_topic(topic, partitions=2)
    produce_events(kafka, topic, TOPIC_IDS)
    return topic


def _logged(checkpoint: Path) -> tuple[list[int], list[int]]:
    """The batches the offset log holds, and those the commit log holds."""

    def batches(folder: str) -> list[int]:
        return sorted(int(f.name) for f in (checkpoint / folder).iterdir() if f.name.isdigit())

    return batches("offsets"), batches("commits")


def _planned(checkpoint: Path) -> list[Any]:
    """Each batch's `tableVersion` of the hybrid's table member (the snapshot or version it
    planned), as its offset logs it while the table is the active member (None after the switch)."""
    states = logged_enumerator_field(checkpoint, "childState")
    actives = logged_enumerator_field(checkpoint, "active")
    return [
        json.loads(s).get("tableVersion") if a == 0 else None for s, a in zip(states, actives, strict=True)
    ]


def _stopped(failure: Any, where: str) -> None:
    assert failure is not None and f"stopped at a row where {where}" in str(failure), failure


@pytest.mark.parametrize("stop", ["before", "at"])
def test_a_table_appended_to_while_stopped_before_or_at_the_switch_changes_nothing_read(
    spark: SparkSession,
    kafka: EmbeddedKafka,
    history: HistoryTable,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    stop: str,
) -> None:
    """Stopped inside the table (its second batch in flight) or at the switch (the batch that
    switches to Kafka in flight), then rows with later event times appended to the table: the
    restarted query reads the snapshot or version it planned at its start, as its checkpoint
    records, not the table's newer one. Every row of that snapshot once, none of the append, and
    Kafka from the same offsets as without the append (the table's last event time read, minus the
    margin): no record lost or read twice across the switch."""
    topic = _topic(kafka, request)
    checkpoint = tmp_path / "checkpoint"
    where = INSIDE_THE_TABLE if stop == "before" else f"instr(_split, '{topic}') > 0"
    _stopped(run(spark, table_then_kafka(history, kafka, topic), tmp_path, fail_where=where), where)
    logged, committed = _logged(checkpoint)
    actives = logged_enumerator_field(checkpoint, "active")
    if stop == "before":  # the second batch logged, not committed; the table active throughout
        assert (logged, committed, actives) == ([0, 1], [0], [0, 0])
    else:  # the switch logged in the batch in flight, every batch before it of the table
        assert logged[-1] == committed[-1] + 1 and actives == [0] * (len(logged) - 1) + [1]
    planned = _planned(checkpoint)[0]
    assert planned is not None

    history.append(APPENDED_IDS)  # a new snapshot or version, of later event times
    assert run(spark, table_then_kafka(history, kafka, topic), tmp_path) is None
    assert read_rows(spark, tmp_path, topic) == expected_rows(TABLE_IDS, FROM_KAFKA)
    assert kafka_starts(spark, tmp_path, topic) == KAFKA_STARTS
    # every batch that read the table planned the first snapshot or version, also after the restart
    assert {p for p in _planned(checkpoint) if p is not None} == {planned}


def test_after_the_switch_a_table_appended_to_or_created_again_changes_nothing_read(
    spark: SparkSession,
    kafka: EmbeddedKafka,
    history: HistoryTable,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """Read to Kafka's end, the hybrid gives every row of the table (its commits out of event-time
    order) and Kafka's records from the table's largest event time minus the margin, at the offsets
    of that time in each partition, once each. Stopped there, after the switch, the table appended
    to and then dropped and created again: each restart reads on from Kafka's checkpointed offsets
    (the records produced while it was stopped, once each) and nothing of the table. Once Kafka,
    the last member, is active, the checkpoint keeps no table position to check the table against:
    the table is no longer read."""
    topic = _topic(kafka, request)
    assert run(spark, table_then_kafka(history, kafka, topic), tmp_path) is None
    assert read_rows(spark, tmp_path, topic) == expected_rows(TABLE_IDS, FROM_KAFKA)
    assert kafka_starts(spark, tmp_path, topic) == KAFKA_STARTS
    assert logged_enumerator_field(tmp_path / "checkpoint", "active")[-1] == 1

    history.append(APPENDED_IDS)
    produce_events(kafka, topic, range(100, 110))
    assert run(spark, table_then_kafka(history, kafka, topic), tmp_path) is None
    assert read_rows(spark, tmp_path, topic) == expected_rows(TABLE_IDS, range(54, 110))

    old = history.identity()
    history.create_again(range(200, 220))
    assert history.identity() != old
    produce_events(kafka, topic, range(110, 120))
    assert run(spark, table_then_kafka(history, kafka, topic), tmp_path) is None
    assert read_rows(spark, tmp_path, topic) == expected_rows(TABLE_IDS, range(54, 120))
    assert kafka_starts(spark, tmp_path, topic) == KAFKA_STARTS


@pytest.mark.parametrize("read", ["bounded", "hybrid"])
def test_a_restart_before_the_end_of_a_table_created_again_is_refused_naming_both_identities(
    spark: SparkSession,
    kafka: EmbeddedKafka,
    history: HistoryTable,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    read: str,
) -> None:
    """A bounded read of the table, alone or as a hybrid's history before its switch, stopped inside
    the table; the table dropped and created again at the same place: the restart is refused with
    SLUICE_TABLE_REPLACED naming the table's identity the checkpoint recorded and the new one,
    before it reads a row (of the new table, or of Kafka)."""

    def source() -> Any:
        return history.source() if read == "bounded" else table_then_kafka(history, kafka, topic)

    topic = _topic(kafka, request)
    _stopped(run(spark, source(), tmp_path, fail_where=INSIDE_THE_TABLE), INSIDE_THE_TABLE)
    assert _logged(tmp_path / "checkpoint") == ([0, 1], [0])
    before = read_rows(spark, tmp_path, topic)
    assert sum(before.values()) == 20 and {kind for kind, _ in before} == {"table"}

    old = history.identity()
    history.create_again(range(100, 120))
    new = history.identity()
    assert new != old
    refused = run(spark, source(), tmp_path)
    assert refused is not None
    error = sluice.sluice_error(refused)
    assert error is not None and error.getCondition() == "SLUICE_TABLE_REPLACED", refused
    message = str(refused)
    assert f"of {history.identity_name} {old}, but the table there now has {history.identity_name} {new}" in (
        message
    ), message
    assert "Start the query on a new checkpoint to read this table" in message, message
    assert read_rows(spark, tmp_path, topic) == before  # nothing more read


def test_a_dataframe_started_again_after_its_table_was_created_again_reads_the_old_table_or_nothing(
    spark: SparkSession, history: HistoryTable, tmp_path: Path
) -> None:
    """The DataFrame of a bounded read kept by the driver and started again after the table was
    created again: its definition names what it resolved, the table's version or snapshot then.
    A Delta table's directory is now another table, without that version: refused before a row is
    read, saying it was created again. An Iceberg table given by its metadata file is still the old
    table there (dropping it from the catalog removes no file): read on to its end, each row once."""
    kept = rows_of(spark, history.source())
    _stopped(run(spark, kept, tmp_path, fail_where=INSIDE_THE_TABLE), INSIDE_THE_TABLE)
    before = read_rows(spark, tmp_path, "none")
    assert sum(before.values()) == 20 and {kind for kind, _ in before} == {"table"}
    history.create_again(range(100, 120))
    again = run(spark, kept, tmp_path)
    if isinstance(history, DeltaHistory):
        assert again is not None
        message = str(again)
        assert "below version" in message and "deleted and created again" in message, message
        assert read_rows(spark, tmp_path, "none") == before  # nothing more read
    else:
        assert again is None, again
        assert read_rows(spark, tmp_path, "none") == expected_rows(TABLE_IDS, range(0))

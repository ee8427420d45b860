"""The published figures come from bench/results/*.json, and the pair method computes them right."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import pairs, report


@pytest.mark.parametrize("page", sorted(report.PAGES), ids=lambda p: p.name)
def test_pages_hold_what_the_result_files_say(page):
    text = page.read_text(encoding="utf-8")
    assert report.render(text, page) == text, (
        f"{page.name} differs from bench/results/: run `python -m bench.report` "
        "(figures are never edited by hand)"
    )


def test_ratio_is_the_median_of_the_per_pair_ratios_not_a_ratio_of_medians():
    sluice = [10.0, 30.0, 20.0, 40.0, 12.0]
    spark = [10.0, 10.0, 20.0, 10.0, 12.0]
    r = pairs.ratios(sluice, spark)
    assert r["pair_ratios"] == [1.0, 3.0, 1.0, 4.0, 1.0]
    assert (r["ratio"], r["ratio_min"], r["ratio_max"]) == (1.0, 1.0, 4.0)
    # a median over a median would have said 20 / 12
    assert r["ratio"] != pytest.approx(20.0 / 12.0)


def test_rounds_alternate_the_order_after_the_warm_ups():
    calls: list[str] = []

    def side(name: str):
        def once() -> float:
            calls.append(name)
            return float(len(calls))

        return once

    measured = pairs.interleaved({"a": side("a"), "b": side("b")}, 3, warmups=1)
    assert calls == ["a", "b", "a", "b", "b", "a", "b", "a"]
    assert measured == {"a": [3.0, 6.0, 8.0], "b": [4.0, 5.0, 7.0]}


def test_round_order_rotates_by_one_every_two_rounds_and_reverses_every_second():
    names = ["a", "b", "c"]
    assert [pairs.round_order(names, i) for i in range(6)] == [
        ["a", "b", "c"],
        ["c", "b", "a"],
        ["b", "c", "a"],
        ["a", "c", "b"],
        ["c", "a", "b"],
        ["b", "a", "c"],
    ]
    assert pairs.round_order(["only"], 3) == ["only"]


@pytest.mark.parametrize("sides", [2, 3, 4])
def test_over_2n_rounds_each_side_holds_each_place_twice(sides):
    names = [f"s{k}" for k in range(sides)]
    for name in names:
        places = [pairs.round_order(names, i).index(name) for i in range(2 * sides)]
        assert sorted(places) == sorted(list(range(sides)) * 2), (name, places)


@pytest.mark.parametrize("sides", [2, 3, 4])
def test_every_two_rounds_each_side_runs_before_and_after_every_other_once(sides):
    names = [f"s{k}" for k in range(sides)]
    for start in range(0, 4 * sides, 2):
        before: dict[tuple[str, str], int] = {}
        just_before: dict[tuple[str, str], int] = {}
        for i in (start, start + 1):
            order = pairs.round_order(names, i)
            assert sorted(order) == names
            for x, a in enumerate(order):
                for b in order[x + 1 :]:
                    before[(a, b)] = before.get((a, b), 0) + 1
            for a, b in zip(order, order[1:], strict=False):
                just_before[(a, b)] = just_before.get((a, b), 0) + 1
        for a in names:
            for b in names:
                if a != b:
                    assert before.get((a, b), 0) == 1, (start, a, b)
                    assert just_before.get((a, b), 0) == just_before.get((b, a), 0)


def test_the_pushdown_row_shows_every_goal_and_says_which_are_not_met():
    def ratio(name: str, value: float) -> dict:
        return {name: value, f"{name}_min": value, f"{name}_max": value, f"{name}_pairs": [value]}

    result = {
        "benchmark": "pushdown",
        "rows": 2_000_000,
        "columns": 40,
        "days": 30,
        "kept_days": 3,
        "parquet_bytes": 50 * 1024**2,
        "json_bytes": 400 * 1024**2,
        "kafka_records": 3_000_000,
        "parquet_spark_rps": 1000.0,
        "parquet_sluice_rps": 1200.0,
        "json_spark_rps": 500.0,
        "json_sluice_rps": 450.0,
        "kafka_default_rps": 2.0e6,
        "kafka_compact_rps": 2.1e6,
        "parquet_bytes_read_ratio": 1.3,
        **ratio("parquet_ratio", 1.2),
        **ratio("json_ratio", 0.9),
        **ratio("kafka_value_only_ratio", 0.96),
    }
    row = report.ROWS["pushdown"](result)
    assert "Parquet 1.20 (1.20 – 1.20 over 1 pairs) (goal ≥ 1)" in row
    assert "JSON 0.90 (0.90 – 0.90 over 1 pairs) (goal ≥ 1: not met)" in row
    assert "bytes read Sluice / Spark 1.30 (goal ≤ 1.1: not met)" in row
    assert "compact 0.96 (0.96 – 0.96 over 1 pairs) (goal ≥ 0.95)" in row


def test_the_table_history_row_shows_both_parts_and_says_which_goals_are_not_met():
    def ratio(name: str, value: float) -> dict:
        return {name: value, f"{name}_min": value, f"{name}_max": value, f"{name}_pairs": [value]}

    def run(late: int, wrong: int, missing: int, state: int, batches: int) -> dict:
        return {
            "late_dropped": late,
            "wrong_windows": wrong,
            "missing_events": missing,
            "peak_state_rows": state,
            "batches": batches,
        }

    result = {
        "benchmark": "table_history",
        "rows": 46_000_000,
        "spark_conf": {"spark.sql.files.maxPartitionBytes": str(128 * 1024**2)},
        "iceberg_files": 23,
        "iceberg_bytes": 1000 * 1024**2,
        "delta_files": 23,
        "delta_bytes": 990 * 1024**2,
        "iceberg_spark_rps": 4.0e6,
        "iceberg_sluice_rps": 3.4e6,
        "delta_spark_rps": 4.0e6,
        "delta_sluice_rps": 4.4e6,
        **ratio("iceberg_ratio", 0.85),
        **ratio("delta_ratio", 1.1),
        **ratio("iceberg_ratio_provenance", 0.8),
        **ratio("delta_ratio_provenance", 0.9),
        "hours": 24,
        "event_rows": 172_800,
        "windows": 1440,
        "event_time_runs": {
            "spark": run(1200, 1200, 144_000, 71, 24),
            "spark_one_batch": run(0, 0, 0, 1440, 1),
            "sluice_iceberg": run(0, 0, 0, 26, 96),
            "sluice_delta": run(3, 1, 60, 26, 97),
        },
        "late_dropped_spark": 1200,
        "missing_events_spark": 144_000,
        "wrong_windows_spark": 1200,
        "peak_state_rows_spark": 71,
        "late_dropped_sluice": 3,
        "wrong_windows_sluice": 1,
        "missing_events_sluice": 60,
        "peak_state_rows_sluice": 26,
    }
    row = report.ROWS["table_history"](result)
    assert "Iceberg 0.85 (0.85 – 0.85 over 1 pairs) (goal ≥ 0.9: not met)" in row
    assert "Delta 1.10 (1.10 – 1.10 over 1 pairs) (goal ≥ 0.9)" in row
    assert "drops 1,200 rows as late (after partial aggregation; 144,000 events missing" in row
    assert "(all files in one batch: 0 late, 0 wrong, peak state 1,440)" in row
    assert "3 late (goal 0: not met), 1 wrong (goal 0: not met), 60 events missing" in row
    assert "(of 24 and 97 batches)" in row


def test_goals_are_set_in_one_table_only():
    source = Path(report.__file__).read_text(encoding="utf-8")
    # a goal typed into a row's text would read "≥ 2" or "≤ 50"; GOALS writes ("≥", 2.0)
    assert re.findall(r"[≥≤] ?[\d{]", source) == []
    for name in report.ROWS:
        assert name in report.GOALS, f"{name} has a row but no goals"


def test_the_goals_table_says_what_is_not_met_and_what_was_not_measured(monkeypatch):
    results = {
        "kafka_throughput": {"benchmark": "kafka_throughput", "ratio": 4.0, "fraction_of_ceiling": 0.7}
    }
    monkeypatch.setattr(report, "_load", results.get)
    table = "\n".join(report.goals_table())
    assert "| `kafka_throughput` | `ratio` | ≥ 2 | 4 | yes |" in table
    assert "| `kafka_throughput` | `ratio_tuned` | ≥ 3 | not measured | **not measured** |" in table
    assert "| `kafka_throughput` | `fraction_of_ceiling` | ≥ 0.85 | 0.7 | **not met** |" in table
    assert "| `skew` | `sluice_late_dropped` | 0 | no result yet | — |" in table
    assert "| `hybrid_switch` | `switch_latency_ms` | ≤ set by the run | no result yet | — |" in table


def test_the_tuned_sides_name_the_fetch_size_where_the_sweep_tuned_it():
    swept = {"tuned_max_poll_records": 5_000, "tuned_max_partition_fetch_bytes": 8 << 20}
    assert report._tuning(swept) == ("`kafka.max.poll.records` 5,000, `kafka.max.partition.fetch.bytes` 8 MB")
    # a result from before the fetch size was swept: the poll size alone, as it was measured
    assert report._tuning({"tuned_max_poll_records": 20_000}) == "`kafka.max.poll.records` 20,000"

"""`python -m bench.report`: writes the figures of docs/benchmarks.md, docs/reliability.md and README.md from bench/results/*.json.

`make bench` runs it after the benchmarks. It replaces what stands between marker comments in
docs/benchmarks.md and leaves the prose around them alone:

- `<!-- results:begin -->` … `<!-- results:end -->`: the summary table, one row per result file
  (a benchmark without a result file keeps a row saying so);
- `<!-- results:group_join:begin -->` … `<!-- results:group_join:end -->`: the group_join
  section's table, with bench/results/group_join.baseline.json beside it when that file exists;
- in docs/reliability.md, `<!-- results:chaos:begin -->` … `<!-- results:chaos:end -->`: the
  scenarios of the last `make chaos` (bench/results/chaos.json);
- in README.md, `<!-- results:headline:begin -->` … `<!-- results:headline:end -->`: the sentence
  of headline figures.

Figures are never typed into the page by hand: change a row's wording here, and the figures by
running the benchmark. This module defines no `run()`, so bench.run does not take it for a
benchmark.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
DOC = ROOT.parent / "docs" / "benchmarks.md"

HEADER = [
    "| benchmark | data | Spark rows/s | Sluice rows/s | ratio (goal) |",
    "|---|---|---|---|---|",
]


#: Every goal of the benchmarks, in one place: benchmark -> result key -> (comparison, bound). A
#: bound is a number, or computed from the result where the run's own settings set it (a switch
#: within one trigger interval). The rows and the goals table render these; no goal is typed
#: anywhere else.
GOALS: dict[str, dict[str, tuple[str, float | Callable[[dict], float]]]] = {
    "kafka_throughput": {
        "ratio": ("≥", 2.0),
        "ratio_tuned": ("≥", 3.0),
        "fraction_of_ceiling": ("≥", 0.85),
    },
    "file_throughput": {"ratio": ("≥", 1.0)},
    "hybrid_switch": {"switch_latency_ms": ("≤", lambda r: r["trigger_interval_ms"])},
    "skew": {"sluice_late_dropped": ("≤", 0), "sluice_wrong_windows": ("≤", 0), "overhead_pct": ("≤", 5.0)},
    "compact": {"ratio": ("≥", 2.0)},
    "group_join": {
        "time_ratio": ("≤", 1.0),
        "state_ratio": ("≤", 0.2),
        "sluice_late_dropped": ("≤", 0),
        "sluice_empty_member_batches": ("≤", 0),
    },
    "realtime_latency": {
        "p99_ratio": ("≤", 1.1),
        "observed_max_drift_ms": ("≤", lambda r: r["max_drift_ms"] + r["update_interval_ms"]),
    },
    "history_formats": {"gzip_ratio": ("≥", 0.9), "parquet_ratio": ("≥", 0.9)},
    "pushdown": {
        "parquet_ratio": ("≥", 1.0),
        "json_ratio": ("≥", 1.0),
        "parquet_bytes_read_ratio": ("≤", 1.1),
        "kafka_value_only_ratio": ("≥", 0.95),
    },
    "scale": {
        "small_files_ratio": ("≥", 1.0),
        "offset_bytes_max": ("≤", 65_536),
        "splits_1024_plan_ms_p50": ("≤", 50),
        "one_partition_ratio": ("≥", 1.5),
    },
    "flink_anchor": {
        "raw_ratio": ("≥", 1.0),
        "aligned_catchup_ratio": ("≤", 1.0),
        "sluice_late_dropped": ("≤", 0),
    },
    "table_history": {
        "iceberg_ratio": ("≥", 0.9),
        "delta_ratio": ("≥", 0.9),
        "late_dropped_sluice": ("≤", 0),
        "wrong_windows_sluice": ("≤", 0),
    },
}


def _bound(r: dict, key: str) -> tuple[str, float]:
    comparison, bound = GOALS[r["benchmark"]][key]
    return comparison, bound(r) if callable(bound) else bound


def _met(r: dict, key: str) -> bool | None:
    """Whether `r` meets its goal for `key`; None when the result does not hold the figure."""
    if r.get(key) is None:
        return None
    comparison, bound = _bound(r, key)
    return r[key] >= bound if comparison == "≥" else r[key] <= bound


def _number(value: float) -> str:
    return _n(value) if abs(value) >= 1000 else f"{value:g}"


def _goal_cell(r: dict, key: str) -> str:
    """The goal as a table cell: the comparison and the bound, or '0' for an upper bound of nothing."""
    comparison, bound = _bound(r, key)
    return "0" if (comparison, bound) == ("≤", 0) else f"{comparison} {_number(bound)}"


def _goal(r: dict, key: str, unit: str = "") -> str:
    """The goal in brackets after a figure, with ': not met' when the result misses it."""
    missed = "" if _met(r, key) is not False else ": not met"
    return f" (goal {_goal_cell(r, key)}{unit}{missed})"


def _n(value: float) -> str:
    """12,345 (rounded)."""
    return f"{value:,.0f}"


def _millions(value: float) -> str:
    """5, 9.76, 1.5, 0.5 (millions, at most two decimals)."""
    return f"{value / 1e6:.2f}".rstrip("0").rstrip(".")


def _pct(value: float) -> str:
    """−0.4 % (a typographic minus), 3.1 %."""
    text = f"{value:.1f}"
    return ("−" + text[1:] if text.startswith("-") else text) + " %"


def _minutes(delay: str) -> str:
    """'10 minutes' -> '10-minute'."""
    number, unit = delay.split()
    return f"{number}-{unit.rstrip('s')}"


def _step(step_ms: int) -> str:
    return "one event a second" if step_ms == 1000 else f"one event every {step_ms / 1000:g} s"


def _spread(r: dict, key: str = "ratio") -> str:
    """' (1.59 – 1.96 over 5 pairs)' from a result of bench/pairs.py; '' for an older result."""
    if f"{key}_min" not in r:
        return ""
    pairs = len(r.get(f"{key}_pairs", [])) or r.get("pairs", "?")
    return f" ({r[f'{key}_min']:.2f} – {r[f'{key}_max']:.2f} over {pairs} pairs)"


def _versions(r: dict) -> str:
    """'spark-sql-kafka 4.2.0 on Spark 4.3.0', from what the result file recorded."""
    v = r.get("machine", {}).get("versions")
    if not v:
        return "versions not recorded in this result"
    return f"spark-sql-kafka {v['spark_sql_kafka']} on Spark {v['spark']}"


def _tuning(r: dict) -> str:
    """The tuned sides' Kafka options; results from before the fetch size was swept name none."""
    tuning = f"`kafka.max.poll.records` {_n(r['tuned_max_poll_records'])}"
    if "tuned_max_partition_fetch_bytes" in r:
        tuning += f", `kafka.max.partition.fetch.bytes` {r['tuned_max_partition_fetch_bytes'] >> 20} MB"
    return tuning


def _tuned(r: dict) -> str:
    if "ratio_tuned" not in r:
        comparison, bound = _bound(r, "ratio_tuned")
        return f"; tuned sides not in this result (ratio_tuned: goal {comparison} {_number(bound)}: not measured)"
    return (
        f"; both tuned ({_tuning(r)}, Spark's best of a sweep): Spark {_n(r['spark_tuned_rps'])}, Sluice {_n(r['sluice_tuned_rps'])}, "
        f"{r['ratio_tuned']:.2f}{_spread(r, 'ratio_tuned')}{_goal(r, 'ratio_tuned')}"
    )


def _kafka_throughput(r: dict) -> str:
    return (
        f"| `kafka_throughput` | {_millions(r['records'])} M records of {r['value_bytes']} bytes in "
        f"{r['partitions']} partitions, raw rows, `Trigger.AvailableNow` into the no-op sink; Spark: "
        f'`format("kafka")` ({_versions(r)}) | '
        f"{_n(r['spark_rps'])} | {_n(r['sluice_rps'])} | {r['ratio']:.2f}{_spread(r)}{_goal(r, 'ratio')}"
        f"{_tuned(r)}; a plain `KafkaConsumer` loop in one JVM: {_n(r['ceiling_rps'])}/s, Sluice at "
        f"{r['fraction_of_ceiling']:.0%} of it{_spread(r, 'fraction_of_ceiling')}"
        f"{_goal(r, 'fraction_of_ceiling')} |"
    )


def _file_throughput(r: dict) -> str:
    # older result files have no file count; 17 is what their data set had
    return (
        f"| `file_throughput` | {r['data_bytes'] / 1024**3:.2f} GB of JSON lines "
        f"({_millions(r['rows'])} M rows, {r.get('files', 17)} files, nested struct + array), "
        "`Trigger.AvailableNow` into the no-op sink; Spark: `spark.readStream.schema(s).json(dir)` | "
        f"{_n(r['spark_rps'])} | {_n(r['sluice_rps'])} | {r['ratio']:.2f}{_spread(r)}{_goal(r, 'ratio')}; "
        "Sluice's default rows, with their three provenance columns: "
        f"{r['ratio_provenance']:.2f}{_spread(r, 'ratio_provenance')} |"
    )


def _hybrid_switch(r: dict) -> str:
    rows, data = r["rows"], r["data"]
    return (
        f"| `hybrid_switch` | {_millions(rows['total'])} M events: {_millions(rows['files'])} M in "
        f"{data['files']} JSON-lines files ({data['file_bytes'] / 1024**2:.0f} MiB), then "
        f"{_millions(rows['kafka'])} M JSON values in Kafka ({data['kafka_partitions']} partitions), "
        "`Trigger.AvailableNow` into the no-op sink; Sluice: one files→Kafka hybrid query; Spark: "
        "`readStream.json(dir)`, then a separate `kafka` query with `from_json` | "
        f"{_n(rows['total'] / r['spark_seconds'])} ({r['spark_seconds']:.2f} s, two queries) | "
        f"{_n(rows['total'] / r['sluice_seconds'])} ({r['sluice_seconds']:.2f} s, one query) | "
        f"{r['ratio']:.2f}{_spread(r)}; switch latency {_n(r['switch_latency_ms'])} ms"
        f"{_goal(r, 'switch_latency_ms', ' ms: one trigger')} |"
    )


def _skew(r: dict) -> str:
    data = r["data"]
    overhead = r["alignment_overhead"]
    speed = (
        f"records/s Sluice / Spark {r['rps_ratio']:.2f}{_spread(r, 'rps_ratio')}; "
        if "rps_ratio" in r
        else ""
    )
    return (
        f"| `skew` | {_n(data['events'])} events, {data['partitions']} partitions: partition 0's "
        f"backlog 24 h, the others' 2 h, {_step(data['event_step_ms'])} each; 1-minute window "
        f"counts, {_minutes(data['watermark_delay'])} watermark, {_n(data['read_limit_per_batch'])} "
        "records per batch, `Trigger.AvailableNow`; Sluice aligned with a "
        f"{data['max_drift_ms'] / 60_000:g}-minute drift | "
        f"{_n(r['spark_records_per_second'])} ({_n(r['spark_late_dropped'])} rows dropped as late, "
        f"{_n(r['spark_wrong_windows'])} of {_n(r['windows'])} windows wrong) | "
        f"{_n(r['sluice_records_per_second'])} ({_n(r['sluice_late_dropped'])} dropped"
        f"{_goal(r, 'sluice_late_dropped')}, {_n(r['sluice_wrong_windows'])} wrong"
        f"{_goal(r, 'sluice_wrong_windows')}) | {speed}alignment overhead on unskewed data "
        f"{_pct(r['overhead_pct'])} ({_pct(overhead.get('overhead_pct_min', r['overhead_pct']))}–"
        f"{_pct(overhead.get('overhead_pct_max', r['overhead_pct']))} over "
        f"{overhead.get('pairs', 1)} pairs){_goal(r, 'overhead_pct', ' %')} |"
    )


def _compact(r: dict) -> str:
    if r["spark_row_bytes"] == r["full_row_bytes"]:
        sizes = f"{r['spark_row_bytes']:.0f} B (Spark, full)"
    else:
        sizes = f"{r['spark_row_bytes']:.0f} B (Spark), {r['full_row_bytes']:.0f} B (full)"
    return (
        f"| `compact` | {_millions(r['records'])} M records of {r['value_bytes']} B in "
        f"{r['partitions']} partitions, the value column only, `Trigger.AvailableNow` into the "
        'no-op sink; Spark: `format("kafka").load().select("value")`; Sluice full: the same select; '
        "Sluice compact: `forceTimestampSupport=false` | "
        f"{_n(r['spark_rps'])} | full {_n(r['full_rps'])}; compact {_n(r['compact_rps'])} | "
        f"compact / Spark **{r['ratio']:.2f}**{_spread(r)}{_goal(r, 'ratio')}; rows {sizes} vs "
        f"{r['compact_row_bytes']:.0f} B (compact) |"
    )


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _group_join(r: dict) -> str:
    data = r["data"]
    density = data["left_step_ms_per_partition"] / data["right_step_ms_per_partition"]
    return (
        f"| `group_join` | {_n(data['left_events'])} + {_n(data['right_events'])} events: the same "
        f"{data['hours']} h of event time in two topics of {data['partitions']} partitions (`right` "
        f"{density:g}× denser), {data['keys']} keys; inner join on the key within ±1 minute, "
        f"{_minutes(data['watermark_delay'])} watermarks, {_n(data['read_limit_per_source'])} "
        "records per batch and source, `Trigger.AvailableNow` into the no-op sink; Sluice: both "
        f"sources in one alignment group, {data['max_drift_ms'] / 60_000:g}-minute drift | "
        f"{_n(r['spark_rps'])} ({r['spark_seconds']:.1f} s; peak state {_n(r['spark_peak_state_rows'])} "
        f"rows, {_n(r['spark_late_dropped'])} dropped) | "
        f"{_n(r['sluice_rps'])} ({r['sluice_seconds']:.1f} s; peak state "
        f"{_n(r['sluice_peak_state_rows'])} rows, {_n(r['sluice_late_dropped'])} dropped"
        f"{_goal(r, 'sluice_late_dropped')}, {r['sluice_empty_member_batches']} empty member "
        f"{'batch' if r['sluice_empty_member_batches'] == 1 else 'batches'}"
        f"{_goal(r, 'sluice_empty_member_batches')}) | "
        f"time {r['time_ratio']:.2f}{_goal(r, 'time_ratio')}, state {_ratio(r['state_ratio'])}"
        f"{_goal(r, 'state_ratio')} |"
    )


def _realtime_latency(r: dict) -> str:
    drift = r["observed_max_drift_ms"]
    return (
        f"| `realtime_latency` | {_n(r['rate_records_per_second'])} records/s for {r['seconds_per_run']} s "
        f"into a topic of {r['partitions']} partitions, real-time mode (batches of {r['batch']}), "
        "stateless, into a foreach sink timing `arrival - send time`; aligned: two topics in one group, "
        f"one 30 minutes behind in event time, drift {r['max_drift_ms'] / 60_000:g} minute, update "
        f"interval {r['update_interval_ms'] / 1000:g} s; `{r['machine']['spark_master']}` | "
        f"p50 {_n(r['spark_p50_ms'])} ms, p99 {_n(r['spark_p99_ms'])} ms | "
        f"p50 {_n(r['sluice_p50_ms'])} ms, p99 {_n(r['sluice_p99_ms'])} ms; aligned p99 "
        f"{_n(r['aligned_p99_ms'])} ms | p99 {r['p99_ratio']:.2f} ({r['p99_ratio_min']:.2f} – "
        f"{r['p99_ratio_max']:.2f}){_goal(r, 'p99_ratio')}; observed drift "
        f"{'n/a' if drift is None else _n(drift)} ms{_goal(r, 'observed_max_drift_ms', ' ms')}; continuous "
        f"({r['continuous_interval']} epochs) p99 {_n(r['continuous_p99_ms'])} ms |"
    )


def _provenance(r: dict) -> str:
    """What Sluice's provenance columns cost on Parquet, for results that measured it."""
    if "parquet_compact_ratio" not in r:
        return ""
    return (
        f"; Parquet compact rows (Spark's columns) / Spark {r['parquet_compact_ratio']:.2f}"
        f"{_spread(r, 'parquet_compact_ratio')}; default rows / Spark with the same three "
        f"columns from `_metadata` {r['parquet_provenance_ratio']:.2f}"
        f"{_spread(r, 'parquet_provenance_ratio')}"
    )


def _history_formats(r: dict) -> str:
    return (
        f"| `history_formats` | {_millions(r['rows'])} M rows as gzip JSON lines "
        f"({r['gzip_files']} `.json.gz` files, {r['gzip_bytes'] / 1024**2:.0f} MiB) and as Parquet "
        f"({r['parquet_files']} files, {r['parquet_bytes'] / 1024**2:.0f} MiB, 128 MB row groups), "
        "`Trigger.AvailableNow` into the no-op sink; Spark: `readStream.json` / `.parquet` | "
        f"gzip {_n(r['gzip_spark_rps'])}; Parquet {_n(r['parquet_spark_rps'])} | "
        f"gzip {_n(r['gzip_sluice_rps'])}; Parquet {_n(r['parquet_sluice_rps'])} | "
        f"gzip {r['gzip_ratio']:.2f}{_spread(r, 'gzip_ratio')}{_goal(r, 'gzip_ratio')}; Parquet "
        f"{r['parquet_ratio']:.2f}{_spread(r, 'parquet_ratio')}{_goal(r, 'parquet_ratio')}{_provenance(r)} |"
    )


def _kept_checkpoint(r: dict) -> str:
    """What a run wrote beside the offset log, when the run recorded it (older results did not)."""
    size = r.get("checkpoint_bytes_written_max")
    return f", {_n(size)} B kept beside it per run" if size else ""


def _tuned_listing(r: dict) -> str:
    """Small files against Spark with its parallel listing threshold raised, where measured."""
    if "small_files_ratio_tuned" not in r:
        return "; against Spark with its listing threshold raised: not in this result"
    tasks = r.get("small_files_tasks_per_run")
    return (
        f"; against Spark with `parallelPartitionDiscovery.threshold` "
        f"{_n(r['small_files_listing_threshold_tuned'])} ({_n(r['small_files_spark_tuned_rps'])}/s) "
        f"{r['small_files_ratio_tuned']:.2f}{_spread(r, 'small_files_ratio_tuned')}"
        + (
            f"; tasks a run: Spark {_n(tasks['spark'])}, tuned {_n(tasks['spark_tuned'])}, Sluice {_n(tasks['sluice'])}"
            if tasks
            else ""
        )
    )


def _scale(r: dict) -> str:
    return (
        f"| `scale` | {_n(r['small_files'])} one-line JSON files, `Trigger.AvailableNow`; a generator "
        f"of {r['planning']['splits']:,} splits in an alignment group; one partition of "
        f"{_millions(r['one_partition_records'])} M records with `minPartitions` 2 | small files "
        f"{_n(r['small_files_spark_rps'])}; one partition {_n(r['one_partition_spark_rps'])} | "
        f"small files {_n(r['small_files_sluice_rps'])}; one partition "
        f"{_n(r['one_partition_sluice_rps'])} | small files "
        f"{r['small_files_ratio']:.2f}{_spread(r, 'small_files_ratio')}{_goal(r, 'small_files_ratio')}"
        f"{_tuned_listing(r)}; largest offset {_n(r['offset_bytes_max'])} B{_goal(r, 'offset_bytes_max', ' B')}"
        f"{_kept_checkpoint(r)}; planning at {r['planning']['splits']:,} splits p50 "
        f"{_n(r['splits_1024_plan_ms_p50'])} ms{_goal(r, 'splits_1024_plan_ms_p50', ' ms')}; one partition "
        f"{r['one_partition_ratio']:.2f}{_spread(r, 'one_partition_ratio')}{_goal(r, 'one_partition_ratio')} |"
    )


def _pushdown(r: dict) -> str:
    return (
        f"| `pushdown` | {_millions(r['rows'])} M rows of {r['columns']} columns in {r['days']} day "
        f"partitions as Parquet ({r['parquet_bytes'] / 1024**2:.0f} MiB) and JSON lines "
        f"({r['json_bytes'] / 1024**2:.0f} MiB); the query keeps 2 columns and {r['kept_days']} "
        "days, `Trigger.AvailableNow` into the no-op sink; Spark: `readStream.parquet` / `.json`; "
        f"Kafka: {_millions(r['kafka_records'])} M records, `select(\"value\")` | Parquet "
        f"{_n(r['parquet_spark_rps'])}; JSON {_n(r['json_spark_rps'])} (rows kept/s) | Parquet "
        f"{_n(r['parquet_sluice_rps'])}; JSON {_n(r['json_sluice_rps'])}; Kafka default layout "
        f"{_n(r['kafka_default_rps'])}, compact {_n(r['kafka_compact_rps'])} | Parquet "
        f"{r['parquet_ratio']:.2f}{_spread(r, 'parquet_ratio')}{_goal(r, 'parquet_ratio')}; "
        f"JSON {r['json_ratio']:.2f}{_spread(r, 'json_ratio')}{_goal(r, 'json_ratio')}; "
        f"Parquet bytes read Sluice / Spark {r['parquet_bytes_read_ratio']:.2f}"
        f"{_goal(r, 'parquet_bytes_read_ratio')}; Kafka value only, default layout / "
        f"compact {r['kafka_value_only_ratio']:.2f}{_spread(r, 'kafka_value_only_ratio')}"
        f"{_goal(r, 'kafka_value_only_ratio')} |"
    )


def _flink_anchor(r: dict) -> str:
    raw, aligned = r["raw"], r["aligned"]
    data = aligned["data"]
    return (
        f"| `flink_anchor` | against Flink {r['machine']['versions']['flink']}'s `KafkaSource` at parallelism "
        f"{r['machine']['flink_parallelism']} in a local MiniCluster (third column): raw, "
        f"{_millions(raw['records'])} M records as `kafka_throughput`; aligned catch-up, "
        f"{_n(aligned['events'])} events as `skew` ({data['max_drift_ms'] / 60_000:g}-minute drift, "
        f"Flink's update interval {data['flink_update_interval_ms'] / 1000:g} s, 1-minute windows, "
        f"{data['watermark_delay_ms'] / 60_000:g}-minute watermark) | raw {_n(raw['flink_rps'])}; "
        f"aligned {aligned['flink_seconds']:.1f} s, {_n(r['flink_late_dropped'])} dropped | "
        f"raw {_n(raw['sluice_rps'])}; aligned {aligned['sluice_seconds']:.1f} s "
        f"({aligned['sluice_batches']} batch{'es' if aligned['sluice_batches'] != 1 else ''}), "
        f"{aligned['sluice_limited_seconds']:.1f} s with {_n(data['sluice_limited_read_limit_per_batch'])} "
        f"records per batch ({aligned['sluice_limited_batches']} batches), "
        f"{_n(r['sluice_late_dropped'])} dropped{_goal(r, 'sluice_late_dropped')} | raw Sluice / Flink "
        f"{r['raw_ratio']:.2f}{_spread(r, 'raw_ratio')}{_goal(r, 'raw_ratio')}; aligned seconds Sluice / "
        f"Flink {r['aligned_catchup_ratio']:.2f}{_spread(r, 'aligned_catchup_ratio')}"
        f"{_goal(r, 'aligned_catchup_ratio')}, with the read limit "
        f"{aligned['aligned_catchup_ratio_limited']:.2f}"
        f"{_spread(aligned, 'aligned_catchup_ratio_limited')} |"
    )


def _table_history(r: dict) -> str:
    spark, one = r["event_time_runs"]["spark"], r["event_time_runs"]["spark_one_batch"]
    return (
        f"| `table_history` | {_millions(r['rows'])} M rows as an Iceberg table by pyiceberg "
        f"({r['iceberg_files']} files, {r['iceberg_bytes'] / 1024**2:.0f} MiB) and as a Delta table by "
        f"delta-rs ({r['delta_files']} files, {r['delta_bytes'] / 1024**2:.0f} MiB), "
        "`Trigger.AvailableNow` into the no-op sink; Spark: `readStream.parquet` over the table's data "
        "files (no `maxFilesPerTrigger`, vectorized, `maxPartitionBytes` "
        f"{int(r['spark_conf']['spark.sql.files.maxPartitionBytes']) // 1024**2} MB) | "
        f"Iceberg {_n(r['iceberg_spark_rps'])}; Delta {_n(r['delta_spark_rps'])} | "
        f"Iceberg {_n(r['iceberg_sluice_rps'])}; Delta {_n(r['delta_sluice_rps'])} | "
        f"Iceberg {r['iceberg_ratio']:.2f}{_spread(r, 'iceberg_ratio')}{_goal(r, 'iceberg_ratio')}; "
        f"Delta {r['delta_ratio']:.2f}{_spread(r, 'delta_ratio')}{_goal(r, 'delta_ratio')}; "
        "Sluice's default rows, with their three provenance columns: "
        f"Iceberg {r['iceberg_ratio_provenance']:.2f}{_spread(r, 'iceberg_ratio_provenance')}, "
        f"Delta {r['delta_ratio_provenance']:.2f}{_spread(r, 'delta_ratio_provenance')}; "
        f"{r['hours']}-hour table of {_n(r['event_rows'])} events, hourly files "
        f"committed out of event-time order, {_n(r['windows'])} 1-minute windows, 10-minute watermark: "
        f"Spark, a file a batch, drops {_n(r['late_dropped_spark'])} rows as late (after partial "
        f"aggregation; {_n(r['missing_events_spark'])} events missing from the final counts), "
        f"{_n(r['wrong_windows_spark'])} windows wrong, peak state {_n(r['peak_state_rows_spark'])} rows "
        f"(all files in one batch: {_n(one['late_dropped'])} late, {_n(one['wrong_windows'])} wrong, peak "
        f"state {_n(one['peak_state_rows'])}); Sluice aligned, worse of both tables: "
        f"{_n(r['late_dropped_sluice'])} late{_goal(r, 'late_dropped_sluice')}, "
        f"{_n(r['wrong_windows_sluice'])} wrong{_goal(r, 'wrong_windows_sluice')}, "
        f"{_n(r['missing_events_sluice'])} events missing, peak state "
        f"{_n(r['peak_state_rows_sluice'])} rows (of {spark['batches']} and "
        f"{max(r['event_time_runs']['sluice_iceberg']['batches'], r['event_time_runs']['sluice_delta']['batches'])}"
        " batches) |"
    )


#: The summary table's rows, in the page's order: benchmark name -> row renderer.
ROWS: dict[str, Callable[[dict], str]] = {
    "kafka_throughput": _kafka_throughput,
    "file_throughput": _file_throughput,
    "hybrid_switch": _hybrid_switch,
    "skew": _skew,
    "compact": _compact,
    "group_join": _group_join,
    "realtime_latency": _realtime_latency,
    "history_formats": _history_formats,
    "pushdown": _pushdown,
    "scale": _scale,
    "flink_anchor": _flink_anchor,
    "table_history": _table_history,
}


def _load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def summary_table() -> list[str]:
    lines = list(HEADER)
    for name, render in ROWS.items():
        result = _load(name)
        if result is None:
            lines.append(f"| `{name}` | no result yet: `make bench BENCH={name}` | | | |")
        else:
            lines.append(render(result))
    return lines


def _group_join_column(r: dict) -> list[str]:
    """The Sluice figures of one group_join result, row by row (see group_join_section)."""
    return [
        f"{r['sluice_seconds']:.1f} s",
        f"{r['time_ratio']:.2f} ({r['time_ratio_min']:.2f} – {r['time_ratio_max']:.2f})",
        _n(r["sluice_peak_state_rows"]),
        _ratio(r["state_ratio"]),
        _n(r["sluice_late_dropped"]),
        str(r["sluice_batches"]),
        str(r["sluice_empty_member_batches"]),
        f"{_n(r['sluice_joined_rows'])}{'' if r['sluice_complete'] else ' (incomplete)'}",
    ]


def goals_table() -> list[str]:
    """Every goal of GOALS against the last result of its benchmark."""
    lines = [
        "| benchmark | figure | goal | last result | met | measured (load average at start – end) |",
        "|---|---|---|---|---|---|",
    ]
    for name, goals in GOALS.items():
        result = _load(name)
        for key in goals:
            if result is None:
                lines.append(f"| `{name}` | `{key}` | {_goal_text(name, key)} | no result yet | — | — |")
                continue
            met = _met(result, key)
            value = "not measured" if met is None else _number(round(result[key], 3))
            verdict = {True: "yes", False: "**not met**", None: "**not measured**"}[met]
            lines.append(
                f"| `{name}` | `{key}` | {_goal_cell(result, key)} | {value} | {verdict} | {_conditions(result)} |"
            )
    return lines


def _conditions(result: dict) -> str:
    """When a result was measured and how busy the 2 cores were (recorded by bench/run.py)."""
    m = result.get("machine", {})
    if "run_started" not in m:
        return "not recorded"
    return f"{m['run_started'][:10]} ({m['load_average_start']:.1f} – {m['load_average_end']:.1f})"


def _goal_text(name: str, key: str) -> str:
    comparison, bound = GOALS[name][key]
    if callable(bound):
        return f"{comparison} set by the run"
    return "0" if (comparison, bound) == ("≤", 0) else f"{comparison} {_number(bound)}"


def kafka_profile_section() -> list[str]:
    """Where each side's Kafka read spends its time: shares of its tasks' profile samples, and (in
    results that hold the counts) samples per million records read, which compare across sides."""
    r = _load("kafka_profile")
    if r is None:
        return ["No result yet: run `make bench BENCH=kafka_profile`."]
    sampled = f", a sample every {r['sample_period_ms']} ms" if "sample_period_ms" in r else ""
    load = r.get("machine", {}).get("load_average_1m")
    if load:
        sampled += f", load average {load[0]:.1f} before, {load[1]:.1f} after"
    counted = "counts" in r["sluice"] and "counts" in r["spark"]
    per_million = (r["records"] * r["profiled_runs"]) / 1e6
    header = (
        f"| share of the tasks' samples ({_millions(r['records'])} M records, {r['profiled_runs']} "
        f"profiled runs a side{sampled}) | Sluice | Spark `kafka` |"
    )
    lines = [
        header + (" Sluice, samples per M records | Spark, samples per M records |" if counted else ""),
        "|---|---|---|" + ("---|---|" if counted else ""),
    ]
    for name in r["categories"]:
        row = (
            f"| {name} | {r['sluice']['shares'].get(name, 0):.0%} | {r['spark']['shares'].get(name, 0):.0%} |"
        )
        if counted:
            row += (
                f" {r['sluice']['counts'].get(name, 0) / per_million:.1f} |"
                f" {r['spark']['counts'].get(name, 0) / per_million:.1f} |"
            )
        lines.append(row)
    samples = f"| samples | {_n(r['sluice']['samples'])} | {_n(r['spark']['samples'])} |"
    if counted:
        samples += (
            f" {r['sluice']['samples'] / per_million:.1f} | {r['spark']['samples'] / per_million:.1f} |"
        )
    lines.append(samples)
    if "wall_seconds" in r["sluice"]:
        sides: tuple[str, ...] = ("sluice", "spark")
        header = "| the same runs | Sluice | Spark `kafka` |"
        if "spark_tuned" in r:
            sides += ("sluice_tuned", "spark_tuned")
            polled = _tuning(r)
            header += f" Sluice, {polled} | Spark `kafka`, {polled} |"
        lines += ["", header, "|---|" + "---|" * len(sides), *_cost_rows(r, sides)]
    return lines


def _cost_rows(r: dict, sides: tuple[str, ...]) -> list[str]:
    """Rows of a profile's table: per million records read, each side's wall seconds, the CPU
    seconds of its JVM and of the broker's (from /proc), and how many cores the two kept busy."""
    million = r["records"] * r["profiled_runs"] / 1e6

    def row(name: str, value: Callable[[dict], float], digits: int = 2) -> str:
        return f"| {name} | " + " | ".join(f"{value(r[side]):,.{digits}f}" for side in sides) + " |"

    return [
        row("wall seconds per M records", lambda s: s["wall_seconds"] / million),
        row("CPU seconds of the side's JVM per M records", lambda s: s["cpu_seconds"]["jvm"] / million),
        row("CPU seconds of the broker's JVM per M records", lambda s: s["cpu_seconds"]["broker"] / million),
        row(
            "cores kept busy by both JVMs",
            lambda s: (s["cpu_seconds"]["jvm"] + s["cpu_seconds"]["broker"]) / s["wall_seconds"],
        ),
        *(
            row(
                f"`{request}` requests the broker answered per M records",
                lambda s, request=request: s["broker_requests"].get(request, 0) / million,
                digits=0,
            )
            for request in ("FetchConsumer", "ListOffsets")
            if all("broker_requests" in r[side] for side in sides)
        ),
    ]


def flink_profile_section() -> list[str]:
    """Where Sluice's and Flink's raw Kafka reads spend their time: per million records read, the
    wall and CPU seconds of each side's JVM and of the broker's (Flink with its connector's Kafka
    client and with Sluice's), then each side's profile samples by category (the engines' work
    differs, so each has its own categories)."""
    r = _load("flink_profile")
    if r is None:
        return ["No result yet: run `make bench BENCH=flink_profile`."]
    million = r["records"] * r["profiled_runs"] / 1e6
    load = r["machine"]["load_average_1m"]
    names = {
        "sluice": f"Sluice (Kafka client {r['sluice']['kafka_client']})",
        "flink": f"Flink {r['flink']['flink']} (its Kafka client {r['flink']['kafka_client']})",
        "flink_sluice_client": f"Flink on Sluice's Kafka client {r['flink_sluice_client']['kafka_client']}",
    }
    lines = [
        f"| {_millions(r['records'])} M records, {r['profiled_runs']} profiled runs a side, load average "
        f"{load[0]:.1f} before, {load[1]:.1f} after | " + " | ".join(names.values()) + " |",
        "|---|---|---|---|",
        *_cost_rows(r, tuple(names)),
        f"| profile samples of the read's threads per M records (a sample every {r['sample_period_ms']} ms) | "
        + " | ".join(f"{r[side]['samples'] / million:.1f}" for side in names)
        + " |",
    ]
    for side, categories in (("sluice", "sluice"), ("flink", "flink"), ("flink_sluice_client", "flink")):
        lines += [
            "",
            f"| {names[side]}: samples of the read's threads | share | per M records |",
            "|---|---|---|",
        ]
        lines += [
            f"| {category} | {r[side]['shares'].get(category, 0):.0%} | "
            f"{r[side]['counts'].get(category, 0) / million:.1f} |"
            for category in r["categories"][categories]
        ]
    return lines


def flink_aligned_section() -> list[str]:
    """Where each side's seconds of the aligned catch-up go, medians of the timed rounds: Spark's
    phases of Sluice's batch and the rest of its query, and the part of Flink's job Flink counts as
    its run."""
    r = _load("flink_anchor")
    aligned = r["aligned"] if r else {}
    if "sluice_durations_ms" not in aligned:
        return ["No result with the phases yet: run `make bench BENCH=flink_anchor`."]
    phases = aligned["sluice_durations_ms"]
    query_ms = aligned["sluice_seconds"] * 1000
    named = [
        ("planning the batch (`queryPlanning`)", "queryPlanning"),
        ("finding the offsets to read (`latestOffset`)", "latestOffset"),
        ("reading and counting the windows (`addBatch`)", "addBatch"),
        ("writing the offset log (`walCommit`)", "walCommit"),
        ("writing the commit log (`commitOffsets`)", "commitOffsets"),
    ]
    lines = [
        f"| aligned catch-up of {_n(aligned['events'])} events, the median of each over {r['pairs']} timed "
        "rounds | ms |",
        "|---|---|",
        f"| Sluice: the query, from its start to its end ({aligned['sluice_batches']} batch"
        f"{'es' if aligned['sluice_batches'] != 1 else ''}) | {_n(query_ms)} |",
        *(f"| of it: {name} | {_n(phases.get(key, 0))} |" for name, key in named),
        f"| of it: the query's start and stop, outside its batch | {_n(query_ms - phases['triggerExecution'])} |",
        f"| Flink: the job, from its submission to its end | {_n(aligned['flink_seconds'] * 1000)} |",
        f"| of it: the job's run as Flink counts it (net runtime) | {_n(aligned['flink_net_runtime_ms'])} |",
    ]
    return lines


def pushdown_phases_section() -> list[str]:
    """Where a pushdown run's milliseconds go, each side and format: from the query's start to its
    end, and Spark's `durationMs` phases of its batches (medians of each over the timed rounds)."""
    r = _load("pushdown")
    if r is None or "parquet_phases_ms" not in r:
        return ["No result with the phases yet: run `make bench BENCH=pushdown`."]
    columns = [(fmt, side) for fmt in ("parquet", "json") for side in ("spark", "sluice")]
    names = {"parquet": "Parquet", "json": "JSON", "spark": "Spark", "sluice": "Sluice"}
    rows = [
        ("the query, from its start to its end", "query"),
        ("planning its batches (`queryPlanning`)", "queryPlanning"),
        ("finding what to read (`latestOffset`)", "latestOffset"),
        ("reading (`addBatch`)", "addBatch"),
        ("writing the offset log (`walCommit`)", "walCommit"),
        ("writing the commit log (`commitOffsets`)", "commitOffsets"),
    ]
    lines = [
        f"| ms, the median of each over {r['pairs']} timed rounds | "
        + " | ".join(f"{names[fmt]}, {names[side]}" for fmt, side in columns)
        + " |",
        "|---|" + "---|" * len(columns),
    ]
    for label, key in rows:
        lines.append(
            f"| {label} | "
            + " | ".join(_n(r[f"{fmt}_phases_ms"][side].get(key, 0)) for fmt, side in columns)
            + " |"
        )
    return lines


def group_join_section() -> list[str]:
    result = _load("group_join")
    if result is None:
        return ["No result yet: run `make bench BENCH=group_join`."]
    baseline = _load("group_join.baseline")
    measures = [
        ("wall time, median", f"{result['spark_seconds']:.1f} s", "—"),
        ("time ratio Sluice / Spark, median of the pairs (min – max)", "—", _goal_cell(result, "time_ratio")),
        ("peak state rows (`numRowsTotal`)", _n(result["spark_peak_state_rows"]), "—"),
        ("state ratio Sluice / Spark", "—", _goal_cell(result, "state_ratio")),
        (
            "rows dropped as late (`numRowsDroppedByWatermark`)",
            _n(result["spark_late_dropped"]),
            f"{_goal_cell(result, 'sluice_late_dropped')} (Sluice)",
        ),
        ("batches", str(result["spark_batches"]), "—"),
        (
            "empty member batches (a source with a backlog read nothing)",
            "—",
            _goal_cell(result, "sluice_empty_member_batches"),
        ),
        (
            f"joined rows (expected {_n(result['expected_joined_rows'])})",
            f"{_n(result['spark_joined_rows'])}" f"{'' if result['spark_complete'] else ' (incomplete)'}",
            "all (checked by the run)",
        ),
    ]
    ours = _group_join_column(result)
    before = _group_join_column(baseline) if baseline else None
    head = "| measure | Spark `kafka` | Sluice, one group |"
    rule = "|---|---|---|"
    if before:
        head += " Sluice before the one-round group planning |"
        rule += "---|"
    head += " goal |"
    rule += "---|"
    lines = [head, rule]
    for i, (measure, spark, goal) in enumerate(measures):
        row = f"| {measure} | {spark} | {ours[i]} |"
        if before:
            row += f" {before[i]} |"
        lines.append(row + f" {goal} |")
    machine = result.get("machine", {})
    note = (
        f"{result['runs']} interleaved pairs after a warm-up each, "
        f"{machine.get('spark_master', 'local[2]')}, {machine.get('cpus', '?')} cores; the Spark "
        "column and the ratios are from the same runs"
    )
    if baseline:
        note += (
            "; the baseline column is `bench/results/group_join.baseline.json`, measured the same "
            f"way (its own Spark side: {baseline['spark_seconds']:.1f} s, peak state "
            f"{_n(baseline['spark_peak_state_rows'])} rows)"
        )
    lines += ["", *textwrap.wrap(note + ".", width=100, break_on_hyphens=False)]
    return lines


def chaos_section() -> list[str]:
    """docs/reliability.md's table: every fault scenario of the last `make chaos`."""
    result = _load("chaos")
    if result is None:
        return ["No result yet: run `make chaos`."]
    lines = [
        "| scenario | records | driver kills (batches committed at each) | executor kills (inside a task; "
        "tasks lost; finished map tasks re-run) "
        "| broker faults (leader kills; rolling restarts; reassignments) "
        "| lost | duplicated | unread | passed | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in result["details"].items():
        at = r.get("committed_at_kills")
        kills = f"{r.get('kills', 0)}" + (f" ({', '.join(map(str, at))})" if at else "")
        executors = (
            f"{r['executor_kills']} ({r.get('kills_inside_tasks', 0)}; {r.get('tasks_lost_with_executors', 0)}; "
            f"{r.get('finished_map_tasks_rerun', 0)})"
            if "executor_kills" in r
            else "—"
        )
        brokers = (
            f"{r['broker_kills']}; {r.get('rolling_restarts', 0)}; {r.get('reassignments', 0)}"
            if "broker_kills" in r
            else "—"
        )
        lines.append(
            f"| {name} | {_n(r.get('records', 0))} | {kills} | {executors} | {brokers} | {r.get('lost', '—')} | "
            f"{r.get('duplicated', '—')} | {r.get('unread', '—')} | "
            f"{'yes' if result['scenarios'][name] else 'no'} | {r.get('seconds', 0):.0f} |"
        )
    lines += [
        "",
        f"Seed {result['seed']}: {result['kills']} driver kills, {result.get('executor_kills', 0)} executor "
        f"kills, {result.get('broker_kills', 0)} broker (leader) kills, {result.get('rolling_restarts', 0)} "
        f"rolling restarts of the cluster and {result['restarts']} restarts in all; "
        f"lost {result['lost']}, duplicated {result['duplicated']}, unread {result['unread']} "
        f"(goal 0 each); {result['seconds'] / 60:.1f} minutes.",
    ]
    return lines


def compact_section() -> list[str]:
    """The compact section's table: each side's scan and shuffle records/s and row size."""
    r = _load("compact")
    if r is None:
        return ["No result yet: run `make bench BENCH=compact`."]
    shuffle = r["shuffle"]
    lines = [
        "| measure | Spark `kafka` | Sluice full | Sluice compact | compact / Spark |",
        "|---|---|---|---|---|",
        f"| scan of `value` into the no-op sink, records/s | {_n(r['spark_rps'])} | "
        f"{_n(r['full_rps'])} | {_n(r['compact_rps'])} | {r['ratio']:.2f}{_spread(r)} |",
        "| the same with every batch grouped by `pmod(hash(value), 1024)` and counted, records/s | "
        f"{_n(shuffle['spark_rps'])} | {_n(shuffle['full_rps'])} | {_n(shuffle['compact_rps'])} | "
        f"{shuffle['ratio']:.2f}{_spread(shuffle)} |",
        f"| mean `UnsafeRow` size of the scan's rows | {r['spark_row_bytes']:.0f} B | "
        f"{r['full_row_bytes']:.0f} B | {r['compact_row_bytes']:.0f} B | — |",
    ]
    if "full_ratio" in r:
        lines += [
            "",
            f"Full layout / Spark on the scan: {r['full_ratio']:.2f}{_spread(r, 'full_ratio')}.",
        ]
    return lines


def _range(values: list[float], fmt: Callable[[float], str]) -> str:
    return f"{fmt(min(values))} – {fmt(max(values))}"


def hybrid_section() -> list[str]:
    """The hybrid_switch section's table: each side's time, the switch latency and batches."""
    r = _load("hybrid_switch")
    if r is None:
        return ["No result yet: run `make bench BENCH=hybrid_switch`."]
    runs, switches = r["all_runs"], r["all_runs"]["switch"]
    seconds = lambda v: f"{v:.2f} s"  # noqa: E731
    within = sum(1 for sw in switches if sw["within_one_trigger"])
    file_batches = sorted({sw["file_batches"] for sw in switches})
    kafka_batches = sorted({sw["kafka_batches"] for sw in switches})
    return [
        f"| measure (median of {len(runs['spark_seconds'])} "
        f"{'pairs' if 'ratio_min' in r else 'runs'}) | figure | runs |",
        "|---|---|---|",
        f"| Spark, files + Kafka (two queries) | {r['spark_seconds']:.2f} s | "
        f"{_range(runs['spark_seconds'], seconds)} |",
        f"| Sluice, one hybrid query | {r['sluice_seconds']:.2f} s | "
        f"{_range(runs['sluice_seconds'], seconds)} |",
        f"| records/s Sluice / Spark, median of the per-pair ratios | {r['ratio']:.2f} | "
        + (f"{r['ratio_min']:.2f} – {r['ratio_max']:.2f} |" if "ratio_min" in r else "— |"),
        f"| switch latency, trigger {_n(r['trigger_interval_ms'])} ms | "
        f"{_n(r['switch_latency_ms'])} ms, within one trigger in {within} of {len(switches)} runs | "
        f"{_range([sw['switch_latency_ms'] for sw in switches], lambda v: f'{_n(v)} ms')} |",
        f"| batches per switch run | {'/'.join(map(str, file_batches))} with file rows, then "
        f"{'/'.join(map(str, kafka_batches))} with Kafka rows | — |",
    ]


def skew_section() -> list[str]:
    """The skew section's table: what each side dropped, got wrong, kept, and how fast."""
    r = _load("skew")
    if r is None:
        return ["No result yet: run `make bench BENCH=skew`."]
    spark, ours = r["spark"], r["sluice"]
    pairs = r.get("pairs", 1)
    head = f"worst of {pairs} pairs" if pairs > 1 else "one run each"
    speed = f"{r['rps_ratio']:.2f}{_spread(r, 'rps_ratio')}" if "rps_ratio" in r else "—"
    return [
        f"| measure ({head}; speed: medians) | " "Spark `kafka` | Sluice, aligned |",
        "|---|---|---|",
        "| rows dropped as late (`numRowsDroppedByWatermark`, partially aggregated rows) | "
        f"{_n(r['spark_late_dropped'])} | {_n(r['sluice_late_dropped'])} |",
        f"| windows with a wrong final count (of {_n(r['windows'])}) | "
        f"{_n(r['spark_wrong_windows'])} | {_n(r['sluice_wrong_windows'])} |",
        f"| peak state rows (`numRowsTotal`) | {_n(spark['peak_state_rows'])} | "
        f"{_n(ours['peak_state_rows'])} |",
        f"| batches with data | {spark['batches']} | {ours['batches']} |",
        f"| wall time, records/s | {spark['seconds']:.1f} s, {_n(r['spark_records_per_second'])}/s | "
        f"{ours['seconds']:.1f} s, {_n(r['sluice_records_per_second'])}/s; ratio {speed} |",
    ]


def _times(r: dict | None, key: str = "ratio") -> str | None:
    """'3.86×' (or '3.86× (3.63–4.03)' with the spread of the pairs), None without a result."""
    if r is None:
        return None
    spread = f" ({r[f'{key}_min']:.2f}–{r[f'{key}_max']:.2f})" if f"{key}_min" in r else ""
    return f"{r[key]:.2f}×{spread}"


def readme_headline() -> list[str]:
    """The README's sentence of measured figures, from the same result files as the table."""
    kafka, files, compact = (
        _load("kafka_throughput"),
        _load("file_throughput"),
        _load("compact"),
    )
    hybrid, skew = _load("hybrid_switch"), _load("skew")
    parts = []
    if kafka:
        parts.append(
            f"raw Kafka reads at {_times(kafka)} the records/s of Spark's `kafka` source"
            + (
                f" ({_times(kafka, 'ratio_tuned')} with both tuned as Spark's best of a sweep:"
                f" {_tuning(kafka)})"
                if "ratio_tuned" in kafka
                else ""
            )
            + f" ({kafka['fraction_of_ceiling']:.0%} of a plain `KafkaConsumer` loop)"
        )
    if compact:
        parts.append(f"compact rows at {_times(compact)}")
    if files:
        parts.append(f"JSON files at {_times(files)} `spark.readStream.json`")
    if hybrid:
        parts.append(f"a files→Kafka hybrid query at {_times(hybrid)} a file query followed by a Kafka query")
    if skew:
        parts.append(
            f"on a skewed catch-up Spark's source drops {_n(skew['spark_late_dropped'])} records as "
            f"late and gets {_n(skew['spark_wrong_windows'])} of {_n(skew['windows'])} windows "
            f"wrong, aligned Sluice {_n(skew['sluice_late_dropped'])} and "
            f"{_n(skew['sluice_wrong_windows'])}"
        )
    if not parts:
        return ["No benchmark results yet: run `make bench`."]
    used = [r for r in (kafka, files, compact, hybrid, skew) if r is not None]
    method = (
        "medians of the per-pair ratios of interleaved Spark/Sluice runs (lowest–highest pair in " "brackets)"
        if all("pairs" in r for r in used)
        else "some figures still from the older method, a median of runs over a median of runs"
    )
    machines = {(r.get("machine", {}).get("cpus"), r.get("machine", {}).get("spark_master")) for r in used}
    cpus, master = next(iter(machines))
    where = (
        f"on {cpus} cores (`{master}`)"
        if len(machines) == 1 and cpus
        else "on the machines their result files name"
    )
    sentence = f"Last `make bench` {where}, {method}: " + "; ".join(parts) + "."
    return textwrap.wrap(sentence, width=100, break_on_hyphens=False, break_long_words=False)


#: marker name -> the lines between `<!-- results:<name>begin -->` and `<!-- results:<name>end -->`
BLOCKS: dict[str, Callable[[], list[str]]] = {
    "": summary_table,
    "goals:": goals_table,
    "group_join:": group_join_section,
    "compact:": compact_section,
    "hybrid_switch:": hybrid_section,
    "skew:": skew_section,
    "kafka_profile:": kafka_profile_section,
    "flink_profile:": flink_profile_section,
    "flink_aligned:": flink_aligned_section,
    "pushdown_phases:": pushdown_phases_section,
}

#: the pages the blocks are written into
PAGES: dict[Path, dict[str, Callable[[], list[str]]]] = {
    DOC: BLOCKS,
    ROOT.parent / "docs" / "reliability.md": {"chaos:": chaos_section},
    ROOT.parent / "README.md": {"headline:": readme_headline},
}


def render(text: str, page: Path = DOC) -> str:
    for prefix, block in PAGES[page].items():
        begin, end = f"<!-- results:{prefix}begin -->", f"<!-- results:{prefix}end -->"
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
        if not pattern.search(text):
            raise SystemExit(f"{page}: the markers {begin} … {end} are missing")
        body = "\n".join([begin, *block(), end])
        text = pattern.sub(lambda _, body=body: body, text, count=1)
    return text


def main() -> int:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        updated = render(text, page)
        if updated != text:
            page.write_text(updated, encoding="utf-8")
            print(f"bench.report: updated {page.relative_to(ROOT.parent)}")
        else:
            print(f"bench.report: {page.relative_to(ROOT.parent)} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())

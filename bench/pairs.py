"""Interleaved pairs: how every benchmark compares Sluice with Spark on a noisy machine.

A ratio of two medians taken over separate runs hides the noise (one lucky Sluice run against one
slow Spark run makes the headline). Instead each side runs once untimed (class loading, JIT, page
cache), then the sides run in rounds, one run of each per round. Rounds come in twos: one in an
order, the next in the reverse order, and each two rotate the order by one; so over every two
rounds each side runs before every other side once and after it once (and right before it as
often as right after it) — a plain rotation would not do that for three sides or more, where two
neighbours in the order keep theirs in most rounds. A round gives one ratio
per compared pair of sides; the figure reported is the median of those per-round ratios, with
every round's ratio and the lowest and highest beside it.

`SLUICE_BENCH_PAIRS` (default 6: even, so that every round has its mirror) sets the number of
rounds. Order is balanced pair by pair over every two rounds (an odd count leaves its last round
unpaired) and place by place over 2 × (number of sides) rounds.
This module defines no `run()`, so bench.run does not take it for a benchmark.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable

#: Rounds of every benchmark unless SLUICE_BENCH_PAIRS says otherwise.
DEFAULT_PAIRS = 6


def pairs_from_env(default: int = DEFAULT_PAIRS) -> int:
    value = int(os.environ.get("SLUICE_BENCH_PAIRS", str(default)))
    if value < 1:
        raise ValueError(f"SLUICE_BENCH_PAIRS must be >= 1, got {value}")
    return value


def interleaved(
    sides: dict[str, Callable[[], float]],
    pairs: int,
    *,
    warmups: int = 1,
    label: str = "",
    unit: str = "records/s",
) -> dict[str, list[float]]:
    """Runs every side `warmups` times untimed, then `pairs` rounds of one run each, in the order
    `round_order` gives; returns each side's measurements, round by round (index i = round i)."""
    names = list(sides)
    for w in range(warmups):
        for name in names:
            value = sides[name]()
            print(f"  {label}warm-up {w + 1}: {name:<10} {value:>14,.0f} {unit}")
    measured: dict[str, list[float]] = {name: [] for name in names}
    for i in range(pairs):
        for name in round_order(names, i):
            value = sides[name]()
            measured[name].append(value)
            print(f"  {label}round {i + 1}: {name:<10} {value:>14,.0f} {unit}")
    return measured


def round_order(names: list[str], i: int) -> list[str]:
    """The order of round `i`: rotated by one every two rounds, reversed in every second round."""
    shift = (i // 2) % len(names)
    order = names[shift:] + names[:shift]
    return order[::-1] if i % 2 else order


def ratios(numerators: list[float], denominators: list[float]) -> dict:
    """The per-round ratios of two sides measured by `interleaved`, and their median, min, max."""
    if len(numerators) != len(denominators) or not numerators:
        raise ValueError("ratios need the same, non-zero number of rounds on both sides")
    per_pair = [n / d for n, d in zip(numerators, denominators, strict=True)]
    return {
        "ratio": statistics.median(per_pair),
        "ratio_min": min(per_pair),
        "ratio_max": max(per_pair),
        "pair_ratios": per_pair,
    }


def summary(name: str, numerators: list[float], denominators: list[float]) -> dict:
    """`ratios` under keys prefixed by `name` (e.g. `compact_ratio`, `compact_ratio_min`, ...)."""
    r = ratios(numerators, denominators)
    return {
        name: r["ratio"],
        f"{name}_min": r["ratio_min"],
        f"{name}_max": r["ratio_max"],
        f"{name}_pairs": r["pair_ratios"],
    }

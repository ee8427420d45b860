"""The published figures come from bench/results/*.json, and the pair method computes them right."""

from __future__ import annotations

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


def test_rounds_rotate_the_order_after_the_warm_ups():
    calls: list[str] = []

    def side(name: str):
        def once() -> float:
            calls.append(name)
            return float(len(calls))

        return once

    measured = pairs.interleaved({"a": side("a"), "b": side("b")}, 3, warmups=1)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]
    assert measured == {"a": [3.0, 6.0, 7.0], "b": [4.0, 5.0, 8.0]}

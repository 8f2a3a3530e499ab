"""Plain-text rendering of rankings and audits (fairjudge.report)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import fairjudge
from fairjudge.report import format_ranking
from fairjudge.report._tables import format_count, format_estimate
from fairjudge.stats import Estimate


@pytest.mark.parametrize("value, text", [(2147210, "2,147,210"), (2147210.0, "2,147,210"),
                                         (np.int64(12), "12"), (1234.5, "1,234.5"),
                                         (float("nan"), "n/a")])
def test_counts_print_as_integers_with_separators(value, text):
    assert format_count(value) == text


def test_rank_prints_the_verdict_count_as_an_integer():
    """Formerly "verdicts = 2.14721e+06"."""
    verdicts = pd.DataFrame({"item_a": ["a", "b", "c"], "item_b": ["b", "c", "a"],
                             "winner": ["a", "a", "b"]})
    ranking = fairjudge.rank(verdicts, k=1, model="naive", n_samples=50)
    big = dataclasses.replace(
        ranking, fit=dataclasses.replace(ranking.fit, n_comparisons=2147210.0),
        diagnostics={**ranking.diagnostics, "n_verdicts": 2147210, "ties": 31250})
    text = format_ranking(big)
    assert "verdicts = 2,147,210" in text.splitlines()[0]
    assert "e+06" not in text and "ties 31,250" in text


def test_weighted_verdicts_show_the_fitted_weight():
    verdicts = pd.DataFrame({"item_a": ["a", "b"], "item_b": ["b", "a"], "winner": ["a", "b"],
                             "weight": [2.5, 1.0]})
    text = format_ranking(fairjudge.rank(verdicts, k=1, model="naive", n_samples=50))
    assert "verdicts = 2 (fitted weight 3.5)" in text


def test_an_interval_from_too_few_units_prints_n_a():
    assert format_estimate(Estimate(1.0, float("nan"), float("nan"), 1)) == "1.000 [n/a] n=1"
    assert format_estimate(Estimate(0.5, 0.25, 0.75, 12000)) == "0.500 [0.250, 0.750] n=12,000"
    assert format_estimate(Estimate.missing()) == "n/a"


def test_columns_line_up_whatever_the_length_of_judge_and_item_names():
    """Formerly each bias row was padded to the covariate name only, so a long judge name
    pushed its numbers right; item ids longer than 20 characters did the same."""
    rng = np.random.default_rng(0)
    ids = ["x", "an-item-with-a-rather-long-identifier", "y", "z"]
    first = rng.integers(0, 4, size=80)
    second = (first + rng.integers(1, 4, size=80)) % 4
    verdicts = pd.DataFrame({
        "item_a": [ids[i] for i in first], "item_b": [ids[i] for i in second],
        "winner": rng.choice(["a", "b"], size=80),
        "judge": np.where(np.arange(80) % 2 == 0, "j", "a-judge-with-a-long-name")})
    lines = format_ranking(fairjudge.rank(verdicts, k=1, n_samples=50)).splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    table = lines[header:header + 1 + len(ids)]
    assert sum(any(i in line for i in ids) for line in table[1:]) == len(ids)
    assert len({len(line) for line in table}) == 1, table
    bias = [line for line in lines if "/position" in line]
    assert len(bias) == 2 and len({line.index("[") for line in bias}) == 1, bias


def test_the_solver_line_says_what_the_sparse_figures_are():
    from fairjudge.report._text import solver_description

    assert solver_description({"solver": "dense"}) == "dense (exact posterior)"
    estimated = solver_description({"solver": "sparse",
                                    "marginal_variance_max_rel_error": 0.0017})
    assert estimated == ("sparse (marginal variances estimated, largest relative s.e. 0.17%; "
                         "rank intervals and P(top-k) without residual correlations)")
    exact = solver_description({"solver": "sparse", "marginal_variance_max_rel_error": 0.0,
                                "items_in_doubt": 12, "joint_draw_items": 12})
    assert exact == ("sparse (marginal variances exact; P(top-k) from the joint posterior of "
                     "the 12 items in doubt; rank intervals otherwise without residual "
                     "correlations)")
    capped = solver_description({"solver": "sparse", "marginal_variance_max_rel_error": 0.001,
                                 "items_in_doubt": 2341, "joint_draw_items": 500})
    assert "the 500 items nearest the boundary of the 2,341 in doubt" in capped
    weak = solver_description({"solver": "sparse", "marginal_variance_max_rel_error": 0.001,
                               "items_in_doubt": 2718, "joint_draw_items": 0})
    assert weak.endswith("without residual correlations, found weak among the 2,718 "
                         "items in doubt)")
    alone = solver_description({"solver": "sparse", "marginal_variance_max_rel_error": 0.001,
                                "items_in_doubt": 1, "joint_draw_items": 0})
    assert alone.endswith("P(top-k) without residual correlations)")

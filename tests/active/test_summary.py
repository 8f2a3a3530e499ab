"""Summary numbers of the offline top-k experiment (fairjudge.active._summary)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairjudge.active import TopkExperimentConfig, TopkSummary, summarize_topk_results
from fairjudge.active._summary import BIAS_MEASURES, FULL_DATA_BASELINES
from fairjudge.stats import mean_and_se, paired_t_test

CONFIG = TopkExperimentConfig(models=("naive", "bias-aware"), rules=("topk", "random"))


def _results(seed=0) -> dict:
    rng = np.random.default_rng(seed)
    budget = pd.DataFrame([
        {"oracle": o, "seed": s, "model": m, "rule": r, "budget": b,
         "recall": rng.integers(0, 6) / 5}
        for o in range(3) for s in range(2) for m in CONFIG.models for r in CONFIG.rules
        for b in (40, 20)])
    budget["budget"] = budget["budget"].astype("Int64")
    full = []
    for judge, n_items in (("biased", 30.0), ("unbiased", 30.0)):
        for o in range(4):
            for model in ("naive", "bias-aware", *FULL_DATA_BASELINES[1:]):
                extra = {}
                if model == "bias-aware":
                    extra = {"c_hat": rng.normal(2, 0.3), "kappa_hat": rng.normal(0.5, 0.1),
                             "corr_score_verbose": rng.normal(0, 0.05)}
                elif model == "naive":
                    extra = {"corr_score_verbose": rng.normal(0.6, 0.05)}
                for k in (3.0, 5.0):  # one fit, recorded once per k
                    full.append({"judge": judge, "n_items": n_items, "oracle": o,
                                 "model": model, "k": k, "recall": rng.integers(0, 6) / 5,
                                 **extra})
    spend = pd.DataFrame([{"model": "bias-aware", "rule": r, "distance": d,
                           "comparisons": int(rng.integers(0, 12))}
                          for r in ("random", "topk", "round-robin") for d in range(4)
                          for _ in range(3)])
    return {"budget": budget, "full": pd.DataFrame(full), "spend": spend}


@pytest.fixture(scope="module")
def results():
    return _results()


@pytest.fixture(scope="module")
def summary(results):
    return summarize_topk_results(results, CONFIG)


def test_summary_is_a_result_object(summary):
    assert isinstance(summary, TopkSummary) and summary.config is CONFIG
    with pytest.raises(AttributeError):
        summary.recall = None


def test_recall_cells_are_mean_and_se_of_their_runs(results, summary):
    budget = results["budget"]
    recall = summary.recall
    assert list(recall.columns) == ["model", "rule", "budget", "mean", "se", "n"]
    # Cells in the order the runs first show them (budget 40 was recorded before 20).
    assert recall[["model", "rule", "budget"]].values.tolist()[:2] == [
        ["naive", "topk", 40], ["naive", "topk", 20]]
    assert len(recall) == 2 * 2 * 2
    for row in recall.itertuples():
        runs = budget[(budget["model"] == row.model) & (budget["rule"] == row.rule)
                      & (budget["budget"] == row.budget)]["recall"]
        assert (row.mean, row.se) == mean_and_se(runs) and row.n == len(runs) == 6


def test_rule_tests_pair_runs_on_oracle_and_seed(results, summary):
    budget = results["budget"]
    tests = summary.rule_tests
    assert tests[["model", "comparison", "budget"]].values.tolist() == [
        [m, "topk vs random", b] for m in CONFIG.models for b in (20, 40)]
    row = tests.iloc[0]
    pick = budget[(budget["model"] == "naive") & (budget["budget"] == 20)]
    ref = pick[pick["rule"] == "topk"].set_index(["oracle", "seed"])["recall"]
    base = pick[pick["rule"] == "random"].set_index(["oracle", "seed"])["recall"]
    expected = paired_t_test(ref, base.loc[ref.index])
    assert (row["n_pairs"], row["mean_difference"], row["t"], row["p_value"]) == (
        expected.n, expected.mean_difference, expected.statistic, expected.p_value)


def test_full_data_cells_and_tests(results, summary):
    full = results["full"]
    cells = summary.full_data
    assert cells[["judge", "n_items", "k"]].drop_duplicates().values.tolist() == [
        ["biased", 30, 3], ["biased", 30, 5], ["unbiased", 30, 3], ["unbiased", 30, 5]]
    assert (cells["oracles"] == 4).all() and (cells["n"] == 4).all()
    row = cells.iloc[1]
    runs = full[(full["judge"] == row["judge"]) & (full["k"] == row["k"])
                & (full["model"] == row["model"])]["recall"]
    assert (row["mean"], row["se"]) == mean_and_se(runs)

    tests = summary.full_data_tests
    assert tests["comparison"].drop_duplicates().tolist() == [
        f"bias-aware - {b}" for b in FULL_DATA_BASELINES]
    first = tests.iloc[0]
    cell = full[(full["judge"] == "biased") & (full["k"] == 3.0)]
    expected = paired_t_test(cell[cell["model"] == "bias-aware"]["recall"].to_numpy(),
                             cell[cell["model"] == "naive"]["recall"].to_numpy())
    assert (first["ci_low"], first["ci_high"], first["p_value"], first["n_oracles"]) == (
        expected.interval.low, expected.interval.high, expected.p_value, 4)


def test_bias_estimates_count_each_fit_once(results, summary):
    full = results["full"]
    bias = summary.bias_estimates
    assert bias["measure"].tolist()[:4] == [m for m, _, _ in BIAS_MEASURES]
    assert (bias["n"] == 4).all()  # 4 oracles, although each fit is recorded for 2 k values
    got = bias.set_index(["judge", "measure"])
    fits = full[(full["model"] == "bias-aware") & (full["k"] == 3.0)
                & (full["judge"] == "biased")]
    assert got.loc[("biased", "c_hat"), "mean"] == mean_and_se(fits["c_hat"])[0]
    naive = full[(full["model"] == "naive") & (full["k"] == 3.0) & (full["judge"] == "biased")]
    assert got.loc[("biased", "corr_naive_verbose"), "se"] == mean_and_se(
        naive["corr_score_verbose"])[1]


def test_spend_is_the_unrounded_mean_per_distance(results, summary):
    spend = results["spend"]
    assert summary.spend.columns.tolist() == ["topk", "round-robin"]
    expected = spend[(spend["rule"] == "topk") & (spend["distance"] == 2)]["comparisons"].mean()
    assert summary.spend.loc[2, "topk"] == expected


def test_records_are_sorted_pandas_aggregates(results, summary):
    records = summary.recall_records
    assert list(records.columns) == ["model", "rule", "budget", "mean", "sem", "count",
                                     "recall"]
    # the shared Estimate shape: mean with a t interval over the runs of the cell
    first = records.iloc[0]
    assert first["recall"].estimate == first["mean"] and first["recall"].n == first["count"]
    assert first["recall"].ci_low <= first["mean"] <= first["recall"].ci_high
    assert records[["model", "rule", "budget"]].values.tolist() == sorted(
        records[["model", "rule", "budget"]].values.tolist())
    assert list(summary.full_data_records.columns) == ["judge", "n_items", "k", "model",
                                                       "mean", "sem", "count", "recall"]

"""Table 2 statistics of the offline top-k protocol: paired-bootstrap intervals on Δ, the
pooled Δ across judges, and the joint model against residualise-then-acquire."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge.active import TopkExperimentConfig, run_topk_experiment, summarize_topk_results
from fairjudge.active._summary import paired_delta_table


def _budget_rows():
    """Two judges x 3 oracles x 2 seeds at B = 20; Δ (bias-aware - naive) per oracle is
    judge A: 0.2, 0.4, 0.6 (both seeds alike), judge B: 0.0, 0.0, -0.2."""
    rows = []
    deltas = {"A": [0.2, 0.4, 0.6], "B": [0.0, 0.0, -0.2]}
    for judge, per_oracle in deltas.items():
        for o, d in enumerate(per_oracle):
            oracle = o if judge == "A" else o + 3
            for seed in range(2):
                base = 0.4 + 0.1 * seed
                rows.append({"judge": judge, "oracle": oracle, "seed": seed,
                             "model": "naive", "rule": "topk", "budget": 20, "recall": base})
                rows.append({"judge": judge, "oracle": oracle, "seed": seed,
                             "model": "bias-aware", "rule": "topk", "budget": 20,
                             "recall": base + d})
                rows.append({"judge": judge, "oracle": oracle, "seed": seed,
                             "model": "bias-aware", "rule": "random", "budget": 20,
                             "recall": 0.0})
    return pd.DataFrame(rows)


def _full_rows():
    rows = []
    for o, (naive, aware) in enumerate([(0.4, 0.8), (0.6, 0.8), (0.2, 0.8)]):
        for model, recall in (("naive", naive), ("bias-aware", aware)):
            rows.append({"judge": "A", "n_items": 30, "oracle": o, "model": model, "k": 5,
                         "recall": recall})
            rows.append({"judge": "A", "n_items": 30, "oracle": o, "model": model, "k": 3,
                         "recall": 0.0})
    return pd.DataFrame(rows)


def test_delta_per_judge_pooled_and_full_data():
    table = paired_delta_table(_budget_rows(), _full_rows(), k=5, n_boot=4000, rng=0)
    by = table.set_index(["judge", "setting"])
    a = by.loc[("A", "budget")]
    assert a["delta"] == pytest.approx(0.4) and a["n_oracles"] == 3 and a["n_pairs"] == 6
    assert a["budget"] == 20 and a["comparison"] == "bias-aware - naive"
    # p: paired t over the three oracles' mean recalls (the random-rule rows are ignored).
    expected_p = stats.ttest_rel([0.65, 0.85, 1.05], [0.45, 0.45, 0.45]).pvalue
    assert a["p_value"] == pytest.approx(expected_p)
    # The bootstrap resamples oracles: its interval lies within the oracle deltas' range.
    assert 0.2 - 1e-12 <= a["ci_low"] < 0.4 < a["ci_high"] <= 0.6 + 1e-12
    pooled = by.loc[("pooled", "budget")]
    assert pooled["delta"] == pytest.approx((0.2 + 0.4 + 0.6 + 0 + 0 - 0.2) / 6)
    assert pooled["n_oracles"] == 6 and pooled["n_pairs"] == 12
    assert -0.2 - 1e-12 <= pooled["ci_low"] < pooled["delta"] < pooled["ci_high"] <= 0.6
    full = by.loc[("A", "full data")]
    assert full["delta"] == pytest.approx(0.4) and full["n_oracles"] == 3
    assert pd.isna(full["budget"])
    assert full["p_value"] == pytest.approx(stats.ttest_rel([0.8] * 3, [0.4, 0.6, 0.2]).pvalue)
    assert full["difference"].estimate == pytest.approx(0.4)
    assert full["difference"].method == "paired bootstrap over oracles"


def test_delta_is_empty_without_the_baseline_model():
    table = paired_delta_table(_budget_rows(), _full_rows(), k=5, baseline="residualized")
    assert table.empty


def test_summary_reports_delta_and_joint_vs_residualized():
    config = TopkExperimentConfig(n_items=10, k=3, n_oracles=2, n_seeds=2, budgets=(20, 40),
                                  rules=("topk",), ablation_rules=(), ablation_budget=20,
                                  spend_budget=40, k_values=(3,), large_n_items=0,
                                  n_samples=100)
    results = run_topk_experiment(config)
    assert {"naive", "bias-aware", "residualized"} <= set(results["budget"]["model"])
    summary = summarize_topk_results(results, config)
    delta = summary.delta
    at40 = delta[(delta["judge"] == "biased") & (delta["budget"] == 40)].iloc[0]
    budget = results["budget"]
    ref = budget[(budget.model == "bias-aware") & (budget.rule == "topk") & (budget.budget == 40)]
    base = budget[(budget.model == "naive") & (budget.rule == "topk") & (budget.budget == 40)]
    assert at40["delta"] == pytest.approx(ref["recall"].mean() - base["recall"].mean())
    assert at40["n_pairs"] == 4 and at40["n_oracles"] == 2
    joint = summary.joint_vs_residualized
    assert set(joint["setting"]) == {"budget", "full data"}
    assert set(joint["comparison"]) == {"bias-aware - residualized"}
    assert np.isfinite(joint["delta"]).all()

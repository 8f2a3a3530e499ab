"""Tables, files and figures of the offline top-k experiment."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge.report._plots import (plot_estimates_vs_truth, plot_recall_vs_budget,
                                     plot_spend_by_distance)
from fairjudge.report._tables import (ablation_2x2, bias_estimates, format_tests,
                                      full_data_table, full_data_tests, paired_rule_tests,
                                      recall_by_budget, render, score_ablation,
                                      spend_by_distance)

BASELINE_RULES = ("global", "round-robin", "random")


def summarize_topk_experiment(results: dict, config) -> dict[str, pd.DataFrame]:
    """All summary tables of the protocol, keyed by a short name."""
    budget, full, spend = results["budget"], results["full"], results["spend"]
    tables = {}
    for model in config.models:
        tables[f"recall_{model}"] = recall_by_budget(budget, model, list(config.rules))
    baselines = [r for r in config.rules if r != "topk"]
    tests = pd.concat([paired_rule_tests(budget, model, "topk", baselines)
                       for model in config.models], ignore_index=True)
    tables["tests_raw"] = tests
    for model in config.models:
        sub = tests[tests["model"] == model] if len(tests) else tests
        if len(sub):
            tables[f"tests_{model}"] = format_tests(sub)
    tables["full_data"] = full_data_table(full)
    tables["full_data_tests"] = pd.concat(
        [full_data_tests(full, reference="bias-aware", baseline=b)
         for b in ("naive", "swap-majority", "residualized", "hierarchical")], ignore_index=True)
    tables["bias_estimates"] = bias_estimates(full)
    if {"naive", "bias-aware"} <= set(config.models) and {"round-robin", "topk"} <= set(
            config.rules):
        tables["ablation_2x2"] = ablation_2x2(budget, config.ablation_budget)
    score_rules = [r for r in ("topk", "global", "topk-no-variance", "topk-no-informativeness",
                               "entropy", "random")
                   if r in set(config.rules) | set(config.ablation_rules)]
    tables["score_ablation"] = score_ablation(budget, config.ablation_budget, score_rules)
    tables["spend"] = spend_by_distance(spend)
    return tables


TITLES = {
    "recall_bias-aware": "Top-k recall vs budget, bias-aware model (mean ± s.e. over oracles x seeds)",
    "recall_naive": "Top-k recall vs budget, naive model (mean ± s.e.)",
    "tests_bias-aware": "Paired t-tests, top-k-aware rule vs baselines (bias-aware model)",
    "tests_naive": "Paired t-tests, top-k-aware rule vs baselines (naive model)",
    "full_data": "Full-data recall (every ordered pair once) by model",
    "full_data_tests": "Full data: bias-aware minus naive recall (paired over oracles)",
    "bias_estimates": "Full-data bias estimates (truth: c* per unit, kappa*)",
    "ablation_2x2": "2 x 2 ablation: model x acquisition at the ablation budget (Table 4 left)",
    "score_ablation": "Acquisition-score ablation at the ablation budget (Fig. 5)",
    "spend": "Comparisons per item by distance to the true top-k boundary (Fig. 4)",
}


def render_topk_summary(tables: dict) -> str:
    """The summary tables as one plain-text report."""
    parts = []
    for key, title in TITLES.items():
        if key in tables and len(tables[key]):
            parts.append(render(tables[key], title))
    return "\n\n".join(parts)


def _finite(value):
    """JSON-safe copy: NaN and infinities become null (they are not valid JSON)."""
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_topk_report(results: dict, config, out_dir) -> tuple[str, list[Path]]:
    """Write CSV/JSON data, the text report and the PNG figures into ``out_dir``.

    Returns the rendered text and the list of files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("budget", "full", "spend", "estimates", "config"):
        path = out / f"{name}.csv"
        results[name].to_csv(path, index=name == "estimates")
        written.append(path)
    tables = summarize_topk_experiment(results, config)
    text = render_topk_summary(tables)
    (out / "summary.txt").write_text(text + "\n", encoding="utf-8")
    written.append(out / "summary.txt")
    summary = {
        "config": results["config"].iloc[0].to_dict(),
        "tests": tables["tests_raw"].to_dict(orient="records"),
        "full_data_tests": tables["full_data_tests"].to_dict(orient="records"),
        "recall": results["budget"].groupby(["model", "rule", "budget"])["recall"]
        .agg(["mean", "sem", "count"]).reset_index().to_dict(orient="records"),
        "full_data": results["full"].groupby(["judge", "n_items", "k", "model"])["recall"]
        .agg(["mean", "sem", "count"]).reset_index().to_dict(orient="records"),
    }
    (out / "summary.json").write_text(json.dumps(_finite(summary), indent=2) + "\n",
                                      encoding="utf-8")
    written.append(out / "summary.json")
    written.append(plot_recall_vs_budget(results["budget"], out / "fig3_recall_vs_budget.png"))
    written.append(plot_estimates_vs_truth(results["estimates"], config.k,
                                           out / "fig2_naive_vs_truth.png"))
    written.append(plot_spend_by_distance(tables["spend"], out / "fig4_spend_by_distance.png",
                                          budget=config.spend_budget))
    return text, written

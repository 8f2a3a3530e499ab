"""Tables, files and figures of the offline top-k experiment."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fairjudge._util._files import atomic_write
from fairjudge._util._json import dumps
from fairjudge.report._plots import (
    plot_estimates_vs_truth,
    plot_recall_vs_budget,
    plot_spend_by_distance,
)
from fairjudge.report._tables import (
    format_ablation_2x2,
    format_bias_estimates,
    format_full_data_table,
    format_full_data_tests,
    format_recall_table,
    format_score_ablation,
    format_spend,
    format_tests,
    render,
)

#: Acquisition-score variants of the score ablation (Fig. 5), in report order.
SCORE_ABLATION_RULES = ("topk", "global", "topk-no-variance", "topk-no-informativeness",
                        "entropy", "random")


def format_topk_summary(summary) -> dict[str, pd.DataFrame]:
    """All summary tables of the protocol, formatted, keyed by a short name.

    Parameters
    ----------
    summary : fairjudge.active.TopkSummary
        The numbers, from :func:`fairjudge.active.summarize_topk_results`.
    """
    config = summary.config
    tables = {}
    for model in config.models:
        tables[f"recall_{model}"] = format_recall_table(summary.recall, model,
                                                        list(config.rules))
    tests = summary.rule_tests
    for model in config.models:
        sub = tests[tests["model"] == model] if len(tests) else tests
        if len(sub):
            tables[f"tests_{model}"] = format_tests(sub)
    tables["full_data"] = format_full_data_table(summary.full_data)
    tables["full_data_tests"] = format_full_data_tests(summary.full_data_tests)
    tables["bias_estimates"] = format_bias_estimates(summary.bias_estimates)
    if {"naive", "bias-aware"} <= set(config.models) and {"round-robin", "topk"} <= set(
            config.rules):
        tables["ablation_2x2"] = format_ablation_2x2(summary.recall, config.ablation_budget)
    score_rules = [r for r in SCORE_ABLATION_RULES
                   if r in set(config.rules) | set(config.ablation_rules)]
    tables["score_ablation"] = format_score_ablation(summary.recall, config.ablation_budget,
                                                     score_rules)
    tables["spend"] = format_spend(summary.spend)
    return tables


TITLES = {
    "recall_bias-aware": "Top-k recall vs budget, bias-aware model (mean ± s.e. over oracles x "
                         "seeds)",
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


def write_topk_report(results: dict, config, out_dir, *,
                      summary) -> tuple[str, list[Path]]:
    """Write CSV/JSON data, the text report and the PNG figures into ``out_dir``.

    Parameters
    ----------
    results : dict of pandas.DataFrame
        The run tables of :func:`fairjudge.active.run_topk_experiment`, written as CSV.
    config : TopkExperimentConfig
        The settings of the run (the spend budget labels Fig. 4).
    out_dir : path
    summary : fairjudge.active.TopkSummary
        The numbers to report, from :func:`fairjudge.active.summarize_topk_results`.

    Returns
    -------
    text : str
        The rendered text report (also written to ``summary.txt``).
    written : list of pathlib.Path
        The files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in ("budget", "full", "spend", "estimates", "config"):
        path = out / f"{name}.csv"
        with atomic_write(path) as handle:
            results[name].to_csv(handle, index=name == "estimates")
        written.append(path)
    tables = format_topk_summary(summary)
    text = render_topk_summary(tables)
    with atomic_write(out / "summary.txt") as handle:
        handle.write(text + "\n")
    written.append(out / "summary.txt")
    report = {
        "config": results["config"].iloc[0].to_dict(),
        "tests": summary.rule_tests.to_dict(orient="records"),
        "full_data_tests": tables["full_data_tests"].to_dict(orient="records"),
        "recall": summary.recall_records.to_dict(orient="records"),
        "full_data": summary.full_data_records.to_dict(orient="records"),
    }
    with atomic_write(out / "summary.json") as handle:
        handle.write(dumps(report) + "\n")
    written.append(out / "summary.json")
    written.append(plot_recall_vs_budget(summary.recall, out / "fig3_recall_vs_budget.png"))
    written.append(plot_estimates_vs_truth(results["estimates"], config.k,
                                           out / "fig2_naive_vs_truth.png"))
    written.append(plot_spend_by_distance(tables["spend"], out / "fig4_spend_by_distance.png",
                                          budget=config.spend_budget))
    return text, written

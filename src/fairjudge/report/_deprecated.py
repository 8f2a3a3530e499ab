"""Deprecated report functions that computed their own statistics.

They keep their old signatures and results: each computes the numbers with
:mod:`fairjudge.active` (where the computation now lives) and formats them with the
``format_*`` function that replaces it. New code calls both halves itself.
"""

from __future__ import annotations

import warnings

import pandas as pd

from fairjudge.report._experiment import format_topk_summary
from fairjudge.report._tables import (
    format_ablation_2x2,
    format_full_data_table,
    format_full_data_tests,
    format_recall_table,
    format_score_ablation,
    format_spend,
)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"fairjudge.report.{old} is deprecated (report receives numbers and only "
                  f"formats them); use {new}", DeprecationWarning, stacklevel=3)


def _summary():
    # Imported on use: report receives numbers and does not depend on the workflows.
    from fairjudge.active import _summary

    return _summary


def recall_by_budget(budget: pd.DataFrame, model: str, rules=None) -> pd.DataFrame:
    _deprecated("recall_by_budget", "format_recall_table(summarize_topk_results(...).recall, "
                "model, rules)")
    return format_recall_table(_summary().summarize_recall(budget), model, rules)


def paired_rule_tests(budget: pd.DataFrame, model: str, reference: str,
                      baselines) -> pd.DataFrame:
    _deprecated("paired_rule_tests", "summarize_topk_results(...).rule_tests")
    return _summary().paired_rule_tests(budget, model, reference, baselines)


def full_data_table(full: pd.DataFrame) -> pd.DataFrame:
    _deprecated("full_data_table", "format_full_data_table(summarize_topk_results(...)"
                ".full_data)")
    return format_full_data_table(_summary().summarize_full_data(full))


def full_data_tests(full: pd.DataFrame, reference: str = "bias-aware",
                    baseline: str = "naive") -> pd.DataFrame:
    _deprecated("full_data_tests", "format_full_data_tests(summarize_topk_results(...)"
                ".full_data_tests)")
    return format_full_data_tests(_summary().paired_full_data_tests(full, reference, baseline))


def ablation_2x2(budget: pd.DataFrame, at_budget: int) -> pd.DataFrame:
    _deprecated("ablation_2x2", "format_ablation_2x2(summarize_topk_results(...).recall, "
                "at_budget)")
    return format_ablation_2x2(_summary().summarize_recall(budget), at_budget)


def score_ablation(budget: pd.DataFrame, at_budget: int, rules) -> pd.DataFrame:
    _deprecated("score_ablation", "format_score_ablation(summarize_topk_results(...).recall, "
                "at_budget, rules)")
    return format_score_ablation(_summary().summarize_recall(budget), at_budget, rules)


def spend_by_distance(spend: pd.DataFrame, model: str = "bias-aware",
                      rules=("topk", "round-robin")) -> pd.DataFrame:
    _deprecated("spend_by_distance", "format_spend(summarize_topk_results(...).spend)")
    return format_spend(_summary().mean_spend_by_distance(spend, model, rules))


def summarize_topk_experiment(results: dict, config) -> dict[str, pd.DataFrame]:
    _deprecated("summarize_topk_experiment",
                "format_topk_summary(summarize_topk_results(results, config))")
    summary = _summary().summarize_topk_results(results, config)
    tables = format_topk_summary(summary)
    return {"tests_raw": summary.rule_tests, **tables}

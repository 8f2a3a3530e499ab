"""Summary tables as text-ready DataFrames (rounding happens here and only here).

Every function here receives numbers already computed (by :mod:`fairjudge.active` or
:mod:`fairjudge.stats`) and only selects, rounds and lays them out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def split_reliability(bias: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A bias table (``fairjudge._api.bias_frame``) as (bias coefficients, the judges'
    ``log_reliability`` rows): the two are reported apart."""
    from fairjudge.models._reliability import LOG_RELIABILITY

    is_reliability = (bias["name"] == LOG_RELIABILITY).to_numpy(bool)
    return bias[~is_reliability], bias[is_reliability]


def format_count(n) -> str:
    """A count as an integer with thousands separators: ``2,147,210`` (never ``2.14721e+06``).
    A non-integral total (a sum of weights) keeps one decimal."""
    if n is None or not np.isfinite(n):
        return "n/a"
    if float(n) == round(float(n)):
        return f"{int(round(float(n))):,}"
    return f"{float(n):,.1f}"


def format_estimate(est, digits: int = 3) -> str:
    """``0.512 [0.431, 0.590] n=1,204``; an unavailable interval (too few units) prints
    ``[n/a]`` and a missing estimate ``n/a``."""
    if est is None or not np.isfinite(est.estimate):
        return "n/a"
    if np.isfinite(est.ci_low) and np.isfinite(est.ci_high):
        interval = f"[{est.ci_low:.{digits}f}, {est.ci_high:.{digits}f}]"
    else:
        interval = "[n/a]"
    return f"{est.estimate:.{digits}f} {interval} n={format_count(est.n)}"


def elo_interval(ranking) -> tuple[str, str, str]:
    """The leaderboard's Elo interval columns and what they are: Arena's bootstrap
    percentiles when the ranking was bootstrapped, else the Laplace interval."""
    if "elo_boot_low" in ranking.leaderboard.columns:
        rounds = ranking.diagnostics["bootstrap"]["rounds"]
        return ("elo_boot_low", "elo_boot_high",
                f"percentiles over {rounds:,} bootstrap refits on resampled verdicts")
    return "elo_ci_low", "elo_ci_high", "Laplace (normal approximation)"


def format_mean_se(mean: float, se: float, digits: int = 2) -> str:
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def format_p(p: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}"


def render(frame: pd.DataFrame, title: str | None = None) -> str:
    """Plain-text rendering of a small table, with an optional title line."""
    text = frame.to_string()
    return f"{title}\n{text}" if title else text


def _cells(recall: pd.DataFrame, key: list) -> dict:
    """``{(key values...): "mean ± se"}`` of a summary table with ``mean`` and ``se``."""
    return {tuple(row[:-2]): format_mean_se(row[-2], row[-1])
            for row in recall[key + ["mean", "se"]].itertuples(index=False)}


def format_recall_table(recall: pd.DataFrame, model: str, rules=None) -> pd.DataFrame:
    """Mean ± s.e. recall per rule (rows) and budget (columns) for one model.

    ``recall`` is :attr:`fairjudge.active.TopkSummary.recall`; ``rules`` default to the
    model's rules in the order they were run. A rule without runs at a budget gets ``""``.
    """
    data = recall[recall["model"] == model]
    rules = rules or list(dict.fromkeys(data["rule"]))
    budgets = sorted(data["budget"].unique())
    cells = _cells(data, ["rule", "budget"])
    table = pd.DataFrame(index=pd.Index(rules, name="rule"),
                         columns=[f"B={b}" for b in budgets], dtype=object)
    for rule in rules:
        for b in budgets:
            table.loc[rule, f"B={b}"] = cells.get((rule, b), "")
    return table


def format_tests(tests: pd.DataFrame) -> pd.DataFrame:
    """Paired rule tests (:attr:`fairjudge.active.TopkSummary.rule_tests`) of one model."""
    out = tests.copy()
    out["mean_difference"] = out["mean_difference"].map(lambda v: f"{v:+.3f}")
    out["t"] = out["t"].map(lambda v: f"{v:.2f}")
    out["p_value"] = out["p_value"].map(format_p)
    return out.set_index(["comparison", "budget"]).drop(columns=["model", "difference"],
                                                        errors="ignore")


def format_full_data_table(full_data: pd.DataFrame) -> pd.DataFrame:
    """Mean ± s.e. full-data recall per (judge, pool size, k) row and model column."""
    rows = []
    for (judge, n_items, k, oracles), group in full_data.groupby(
            ["judge", "n_items", "k", "oracles"], sort=False):
        row = {"judge": judge, "N": int(n_items), "k": int(k), "oracles": oracles}
        for r in group.itertuples(index=False):
            row[r.model] = format_mean_se(r.mean, r.se)
        rows.append(row)
    return pd.DataFrame(rows).set_index(["judge", "N", "k"])


def format_full_data_tests(tests: pd.DataFrame) -> pd.DataFrame:
    """Full-data paired tests (:attr:`fairjudge.active.TopkSummary.full_data_tests`)."""
    if tests.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "judge": tests["judge"], "N": tests["n_items"], "k": tests["k"],
        "comparison": tests["comparison"], "n_oracles": tests["n_oracles"],
        "mean_difference": [round(float(v), 3) for v in tests["mean_difference"]],
        "ci95": [f"[{low:+.2f}, {high:+.2f}]"
                 for low, high in zip(tests["ci_low"], tests["ci_high"])],
        "p_value": tests["p_value"].map(format_p)})


BIAS_COLUMNS = {
    "c_hat": "c_hat (per unit)",
    "kappa_hat": "kappa_hat",
    "corr_naive_verbose": "corr(naive, verbose)",
    "corr_bias_aware_verbose": "corr(bias-aware, verbose)",
}


def format_bias_estimates(bias: pd.DataFrame) -> pd.DataFrame:
    """Mean ± s.e. full-data bias estimates and score–verbosity correlations per judge."""
    rows = []
    for (judge, n_items), group in bias.groupby(["judge", "n_items"], sort=False):
        row = {"judge": judge, "N": int(n_items)}
        for r in group.itertuples(index=False):
            row[BIAS_COLUMNS[r.measure]] = format_mean_se(r.mean, r.se)
        rows.append(row)
    return pd.DataFrame(rows).set_index(["judge", "N"])


def format_ablation_2x2(recall: pd.DataFrame, at_budget: int) -> pd.DataFrame:
    """Model x acquisition (round-robin vs topk) mean recall at one budget (Table 4 left)."""
    cells = _cells(recall[recall["budget"] == at_budget], ["model", "rule"])
    table = pd.DataFrame(index=pd.Index(["naive", "bias-aware"], name="model"),
                         columns=["round-robin", "topk"], dtype=object)
    for model in table.index:
        for rule in table.columns:
            table.loc[model, rule] = cells.get((model, rule), "")
    return table


def format_score_ablation(recall: pd.DataFrame, at_budget: int, rules) -> pd.DataFrame:
    """Bias-aware recall of each acquisition-score variant at one budget (Fig. 5)."""
    cells = _cells(recall[(recall["budget"] == at_budget) & (recall["model"] == "bias-aware")],
                   ["rule"])
    rows = [{"rule": rule, "recall": cells[(rule,)]} for rule in rules if (rule,) in cells]
    return pd.DataFrame(rows, columns=["rule", "recall"]).set_index("rule")


def format_spend(spend: pd.DataFrame) -> pd.DataFrame:
    """Mean comparisons per item by distance to the boundary, to 2 decimals (Fig. 4)."""
    return spend.round(2)


def format_share(value) -> str:
    """A share as a percent, or n/a when there is none (None or NaN)."""
    return "n/a" if value is None or value != value else f"{value:.0%}"

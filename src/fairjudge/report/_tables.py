"""Summary tables (rounding happens here and only here)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge.stats._tests import mean_and_se, paired_t_test


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


def recall_by_budget(budget: pd.DataFrame, model: str, rules=None) -> pd.DataFrame:
    """Mean ± s.e. recall per rule (rows) and budget (columns) for one model."""
    data = budget[budget["model"] == model]
    rules = rules or list(dict.fromkeys(data["rule"]))
    budgets = sorted(data["budget"].unique())
    table = pd.DataFrame(index=pd.Index(rules, name="rule"),
                         columns=[f"B={b}" for b in budgets], dtype=object)
    for rule in rules:
        for b in budgets:
            values = data[(data["rule"] == rule) & (data["budget"] == b)]["recall"]
            table.loc[rule, f"B={b}"] = format_mean_se(*mean_and_se(values)) if len(values) else ""
    return table


def paired_rule_tests(budget: pd.DataFrame, model: str, reference: str,
                      baselines) -> pd.DataFrame:
    """Paired t-tests of ``reference`` minus each baseline rule, per budget.

    Pairs are (oracle, seed) runs, which replay the same oracle matrix.
    """
    data = budget[budget["model"] == model]
    rows = []
    for baseline in baselines:
        for b in sorted(data["budget"].unique()):
            ref = data[(data["rule"] == reference) & (data["budget"] == b)]
            base = data[(data["rule"] == baseline) & (data["budget"] == b)]
            joined = ref.merge(base, on=["oracle", "seed"], suffixes=("_ref", "_base"))
            if len(joined) < 2:
                continue
            test = paired_t_test(joined["recall_ref"], joined["recall_base"])
            rows.append({"model": model, "comparison": f"{reference} vs {baseline}",
                         "budget": int(b), "n_pairs": test.n,
                         "mean_difference": test.mean_difference, "t": test.statistic,
                         "p_value": test.p_value})
    return pd.DataFrame(rows)


def format_tests(tests: pd.DataFrame) -> pd.DataFrame:
    out = tests.copy()
    out["mean_difference"] = out["mean_difference"].map(lambda v: f"{v:+.3f}")
    out["t"] = out["t"].map(lambda v: f"{v:.2f}")
    out["p_value"] = out["p_value"].map(format_p)
    return out.set_index(["comparison", "budget"]).drop(columns="model")


def full_data_table(full: pd.DataFrame) -> pd.DataFrame:
    """Mean ± s.e. full-data recall per (judge, pool size, k) row and model column."""
    rows = []
    for (judge, n_items, k), group in full.groupby(["judge", "n_items", "k"], sort=False):
        row = {"judge": judge, "N": int(n_items), "k": int(k), "oracles": group["oracle"].nunique()}
        for model, sub in group.groupby("model", sort=False):
            row[model] = format_mean_se(*mean_and_se(sub["recall"]))
        rows.append(row)
    return pd.DataFrame(rows).set_index(["judge", "N", "k"])


def full_data_tests(full: pd.DataFrame, reference: str = "bias-aware",
                    baseline: str = "naive") -> pd.DataFrame:
    """Paired t-test of reference minus baseline full-data recall (pairs are oracles)."""
    rows = []
    for (judge, n_items, k), group in full.groupby(["judge", "n_items", "k"], sort=False):
        ref = group[group["model"] == reference].set_index("oracle")["recall"]
        base = group[group["model"] == baseline].set_index("oracle")["recall"]
        common = ref.index.intersection(base.index)
        if len(common) < 2:
            continue
        test = paired_t_test(ref[common], base[common])
        rows.append({"judge": judge, "N": int(n_items), "k": int(k),
                     "comparison": f"{reference} - {baseline}", "n_oracles": test.n,
                     "mean_difference": round(test.mean_difference, 3),
                     "ci95": f"[{test.interval.low:+.2f}, {test.interval.high:+.2f}]",
                     "p_value": format_p(test.p_value)})
    return pd.DataFrame(rows)


def ablation_2x2(budget: pd.DataFrame, at_budget: int) -> pd.DataFrame:
    """Model x acquisition (round-robin vs topk) mean recall at one budget (Table 4 left)."""
    data = budget[(budget["budget"] == at_budget) & budget["rule"].isin(["round-robin", "topk"])]
    table = pd.DataFrame(index=pd.Index(["naive", "bias-aware"], name="model"),
                         columns=["round-robin", "topk"], dtype=object)
    for model in table.index:
        for rule in table.columns:
            values = data[(data["model"] == model) & (data["rule"] == rule)]["recall"]
            table.loc[model, rule] = format_mean_se(*mean_and_se(values)) if len(values) else ""
    return table


def score_ablation(budget: pd.DataFrame, at_budget: int, rules) -> pd.DataFrame:
    """Bias-aware recall of each acquisition-score variant at one budget (Fig. 5)."""
    data = budget[(budget["budget"] == at_budget) & (budget["model"] == "bias-aware")]
    rows = []
    for rule in rules:
        values = data[data["rule"] == rule]["recall"]
        if len(values):
            mean, se = mean_and_se(values)
            rows.append({"rule": rule, "recall": format_mean_se(mean, se)})
    return pd.DataFrame(rows, columns=["rule", "recall"]).set_index("rule")


def spend_by_distance(spend: pd.DataFrame, model: str = "bias-aware",
                      rules=("topk", "round-robin")) -> pd.DataFrame:
    """Mean comparisons per item by distance to the true top-k boundary (Fig. 4)."""
    data = spend[(spend["model"] == model) & spend["rule"].isin(rules)]
    table = data.groupby(["distance", "rule"])["comparisons"].mean().unstack("rule")
    return table[[r for r in rules if r in table.columns]].round(2)


def bias_estimates(full: pd.DataFrame) -> pd.DataFrame:
    """Mean full-data bias estimates and score–verbosity correlations per judge."""
    data = full[(full["model"] == "bias-aware")].drop_duplicates(["judge", "n_items", "oracle"])
    naive = full[(full["model"] == "naive")].drop_duplicates(["judge", "n_items", "oracle"])
    rows = []
    for (judge, n_items), group in data.groupby(["judge", "n_items"], sort=False):
        nv = naive[(naive["judge"] == judge) & (naive["n_items"] == n_items)]
        rows.append({"judge": judge, "N": int(n_items),
                     "c_hat (per unit)": format_mean_se(*mean_and_se(group["c_hat"])),
                     "kappa_hat": format_mean_se(*mean_and_se(group["kappa_hat"])),
                     "corr(naive, verbose)": format_mean_se(*mean_and_se(
                         nv["corr_score_verbose"])),
                     "corr(bias-aware, verbose)": format_mean_se(*mean_and_se(
                         group["corr_score_verbose"]))})
    return pd.DataFrame(rows).set_index(["judge", "N"])

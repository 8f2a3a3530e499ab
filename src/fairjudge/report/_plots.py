"""PNG figures (matplotlib, non-interactive backend): the top-k experiment's files, and the
figures of the audit and comparison reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge._util._files import atomic_write


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path) -> Path:
    """Lay out, write atomically (format from the suffix) and close a figure."""
    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_write(path, "wb") as handle:
            fig.savefig(handle, format=path.suffix.lstrip(".").lower() or "png", dpi=120)
    finally:
        plt.close(fig)
    return path


def plot_recall_vs_budget(recall: pd.DataFrame, path, *, title: str = "") -> Path:
    """Top-k recall vs budget, mean ± s.e., one line per (model, rule) (Fig. 3).

    ``recall`` is :attr:`fairjudge.active.TopkSummary.recall` (``model``, ``rule``,
    ``budget``, ``mean``, ``se``).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (model, rule), group in recall.groupby(["model", "rule"], sort=False):
        group = group.sort_values("budget", kind="stable")
        b = group["budget"].to_numpy(dtype=np.int64)
        mean, se = group["mean"].to_numpy(dtype=float), group["se"].to_numpy(dtype=float)
        style = "-" if model == "bias-aware" else "--"
        ax.plot(b, mean, style, marker="o", ms=3, label=f"{rule} ({model})")
        ax.fill_between(b, mean - se, mean + se, alpha=0.15)
    ax.set_xlabel("comparison budget B")
    ax.set_ylabel("top-k recall")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(title or "Top-k recall vs budget (mean ± s.e.)", fontsize=10)
    return _save(plt, fig, path)


def plot_estimates_vs_truth(estimates: pd.DataFrame, k: int, path) -> Path:
    """Naive and bias-aware score vs true quality, verbose items marked (Fig. 2)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.8), sharex=True)
    verbose = estimates["verbose"].to_numpy() > 0.5
    for ax, model in zip(axes, ("naive", "bias-aware")):
        score = estimates[model].to_numpy()
        ax.scatter(estimates["quality"][~verbose], score[~verbose], s=18, label="terse")
        ax.scatter(estimates["quality"][verbose], score[verbose], s=18, marker="s",
                   label="verbose")
        cut = np.sort(score)[::-1][k - 1]
        ax.axhline(cut - 1e-9, ls=":", c="grey", lw=1, label=f"estimated top-{k} cut")
        true_cut = np.sort(estimates["quality"].to_numpy())[::-1][k - 1]
        ax.axvline(true_cut - 1e-9, ls="--", c="k", lw=1, label=f"true top-{k} cut")
        ax.set_xlabel("true quality θ")
        ax.set_ylabel(f"{model} estimate")
        ax.set_title(f"{model} model (full data)", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return _save(plt, fig, path)


def plot_spend_by_distance(table: pd.DataFrame, path, *, budget: int) -> Path:
    """Mean comparisons per item by distance to the top-k boundary, per rule (Fig. 4)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    width = 0.8 / max(len(table.columns), 1)
    for n, rule in enumerate(table.columns):
        ax.bar(table.index + (n - (len(table.columns) - 1) / 2) * width, table[rule],
               width=width, label=rule)
    ax.set_xlabel("distance of the item's true rank to the top-k boundary")
    ax.set_ylabel(f"comparisons per item (B={budget})")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return _save(plt, fig, path)


def plot_score_ablation(recall: pd.DataFrame, path, *, budget: int, rules) -> Path:
    """Bias-aware top-k recall of each acquisition-score variant at one budget, mean ± s.e.
    bars, in ``rules`` order (Fig. 5). ``recall`` is
    :attr:`fairjudge.active.TopkSummary.recall`; rules without a row at ``budget`` are left
    out."""
    plt = _pyplot()
    rows = recall[(recall["model"] == "bias-aware") & (recall["budget"] == budget)]
    rows = rows.set_index("rule").reindex([r for r in rules if r in set(rows["rule"])])
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    position = np.arange(len(rows))
    ax.bar(position, rows["mean"].to_numpy(dtype=float),
           yerr=rows["se"].to_numpy(dtype=float), capsize=4,
           color=["C0" if rule == "topk" else "C7" for rule in rows.index])
    ax.set_xticks(position, rows.index, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("top-k recall (bias-aware)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(f"Acquisition-score ablation at B={budget} (mean ± s.e.)", fontsize=10)
    return _save(plt, fig, path)


def plot_cost_frontier(frontier: pd.DataFrame, path) -> Path:
    """Top-k recall against money, one line per (judge, model), money on a log axis, ± s.e.
    bands (Fig. 7). ``frontier`` is :func:`fairjudge.active.cost_frontier`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (judge, model), group in frontier.groupby(["judge", "model"], sort=False):
        money = group["money"].to_numpy(dtype=float)
        mean, se = group["recall"].to_numpy(dtype=float), group["se"].to_numpy(dtype=float)
        line, = ax.plot(money, mean, "-" if model == "bias-aware" else "--", marker="o",
                        ms=3, label=f"{judge} ({model})")
        ax.fill_between(money, mean - np.nan_to_num(se), mean + np.nan_to_num(se),
                        alpha=0.12, color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("money spent (per-call price x verdicts)")
    ax.set_ylabel("top-k recall")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Cost-quality frontier (mean ± s.e. over oracles)", fontsize=10)
    return _save(plt, fig, path)


def plot_competence_gain(panel: pd.DataFrame, path, *, rho: float, p_value: float) -> Path:
    """Each judge at its naive recall (competence, x) and verbosity coefficient ĉ (y), the
    marker area growing with the bias-aware gain Δ (Fig. 8). ``panel`` is
    :func:`fairjudge.active.judge_panel`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    gain = panel["delta"].to_numpy(dtype=float)
    ax.scatter(panel["naive_recall"], panel["c_hat"], s=30 + 600 * np.clip(gain, 0, None),
               alpha=0.6, edgecolors="k")
    for _, row in panel.iterrows():
        ax.annotate(f"{row['judge']} (Δ {row['delta']:+.2f})",
                    (row["naive_recall"], row["c_hat"]), fontsize=6,
                    xytext=(4, 3), textcoords="offset points")
    ax.axhline(0, c="grey", lw=0.8)
    ax.set_xlabel("naive top-k recall (competence)")
    ax.set_ylabel("verbosity coefficient ĉ")
    ax.set_xlim(-0.02, 1.08)
    ax.grid(alpha=0.3)
    ax.set_title(f"Where bias-aware modelling helps: Spearman ρ(competence, Δ) = {rho:+.2f} "
                 f"(p = {p_value:.2g}, n = {len(panel)})", fontsize=9)
    return _save(plt, fig, path)


def consistency_gap_plot(curves: dict):
    """Position consistency vs quality gap, one line per judge with interval bars."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for judge, table in curves.items():
        mid = (table["gap_low"] + table["gap_high"]) / 2
        ax.errorbar(mid, table["estimate"], yerr=[table["estimate"] - table["ci_low"],
                                                  table["ci_high"] - table["estimate"]],
                    marker="o", capsize=3, label=judge)
    ax.set_xlabel("quality gap between the two answers")
    ax.set_ylabel("position consistency")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def pareto_plot(table: pd.DataFrame, front: list):
    """Agreement vs cost per evaluation, the Pareto front highlighted (Appendix H, Fig. 4)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    costs = table["cost_per_eval"].to_numpy(dtype=float)
    ax.errorbar(costs, table["agreement"],
                yerr=[table["agreement"] - table["agreement_ci_low"],
                      table["agreement_ci_high"] - table["agreement"]], fmt="o", capsize=3)
    for row in table.itertuples():
        ax.annotate(row.name, (row.cost_per_eval, row.agreement), fontsize=7,
                    xytext=(4, 4), textcoords="offset points",
                    weight="bold" if row.name in front else "normal")
    on = table[table["name"].isin(front)].sort_values("cost_per_eval")
    ax.plot(on["cost_per_eval"], on["agreement"], "--", lw=1)
    ax.set_xlabel("cost per evaluation ($)")
    ax.set_ylabel("agreement with gold")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig

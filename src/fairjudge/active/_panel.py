"""Across judges: where bias-aware modelling helps (Fig. 8) and what recall costs (Fig. 7)
[bias-aware-active-topk §6, "Q3: where does the method help?" and the cost-quality frontier].

Both read the run tables of :func:`fairjudge.active.run_topk_experiment` over oracles of
several judges (recorded or simulated): ``full`` for the per-judge full-data fits and
``budget`` for the budgeted runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active._summary import own_pools

#: Columns of :func:`judge_panel`.
PANEL_COLUMNS = ("judge", "n_oracles", "c_hat", "kappa_hat", "naive_recall",
                 "bias_aware_recall", "delta")


def judge_panel(full: pd.DataFrame, *, k: int) -> pd.DataFrame:
    """One row per judge: its full-data fits at ``k``, averaged over its oracles (Table 1).

    Parameters
    ----------
    full : pandas.DataFrame
        Full-data fits: ``judge``, ``n_items``, ``oracle``, ``model``, ``k``, ``recall`` and,
        on ``bias-aware`` rows, ``c_hat`` and ``kappa_hat`` (logits per unit of the
        covariate as given, e.g. per step of a 0/1 indicator; and for the first slot).
    k : int

    Returns
    -------
    pandas.DataFrame
        :data:`PANEL_COLUMNS`, sorted by ``c_hat`` (largest first) as the paper's Table 1:
        ``naive_recall`` is the judge's raw competence, ``delta`` the bias-aware gain
        (bias-aware minus naive recall, paired by oracle).
    """
    need = {"judge", "oracle", "model", "k", "recall"}
    if not need <= set(full.columns):
        raise FairjudgeInputError("`full` must have columns " + ", ".join(sorted(need)))
    fits = full[full["k"] == k]
    if "n_items" in fits.columns:
        fits = own_pools(fits)
    naive = fits[fits["model"] == "naive"].set_index(["judge", "oracle"])
    aware = fits[fits["model"] == "bias-aware"].set_index(["judge", "oracle"])
    joined = aware[["recall", "c_hat", "kappa_hat"]].join(
        naive[["recall"]].rename(columns={"recall": "recall_naive"}), how="inner")
    if joined.empty:
        raise FairjudgeInputError(f"`full` has no oracle fitted by both the naive and the "
                                  f"bias-aware model at k={k}")
    rows = []
    for judge, part in joined.groupby(level="judge", sort=False):
        rows.append({"judge": judge, "n_oracles": len(part),
                     "c_hat": float(part["c_hat"].mean()),
                     "kappa_hat": float(part["kappa_hat"].mean()),
                     "naive_recall": float(part["recall_naive"].mean()),
                     "bias_aware_recall": float(part["recall"].mean()),
                     "delta": float((part["recall"] - part["recall_naive"]).mean())})
    return (pd.DataFrame(rows, columns=PANEL_COLUMNS)
            .sort_values("c_hat", ascending=False, kind="stable").reset_index(drop=True))


@dataclass(frozen=True)
class CompetenceGain:
    """Spearman rank correlations across judges (Fig. 8).

    Attributes
    ----------
    rho_gain, p_gain : float
        Between a judge's naive recall (its competence) and its bias-aware gain Δ, with the
        two-sided p-value (paper: ρ = -0.88, p < 1e-4, n = 16).
    rho_bias, p_bias : float
        Between naive recall and the verbosity coefficient ĉ (paper: ρ = -0.38, p = 0.17).
    n_judges : int
    """

    rho_gain: float
    p_gain: float
    rho_bias: float
    p_bias: float
    n_judges: int


def competence_gain(panel: pd.DataFrame) -> CompetenceGain:
    """Spearman correlations of competence with the gain and with the bias, across judges.

    ``panel`` is :func:`judge_panel`. The p-values are scipy's (the t approximation, exact
    enough from about 10 judges). A correlation is NaN when either side is constant across
    judges (e.g. every judge has Δ = 0).
    """
    from scipy import stats

    if len(panel) < 3:
        raise FairjudgeInputError(f"a rank correlation across judges needs at least 3 "
                                  f"judges; the panel has {len(panel)}")

    def spearman(x, y):
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            return float("nan"), float("nan")
        result = stats.spearmanr(x, y)
        return float(result.statistic), float(result.pvalue)

    competence = panel["naive_recall"].to_numpy(dtype=float)
    rho_gain, p_gain = spearman(competence, panel["delta"].to_numpy(dtype=float))
    rho_bias, p_bias = spearman(competence, panel["c_hat"].to_numpy(dtype=float))
    return CompetenceGain(rho_gain, p_gain, rho_bias, p_bias, len(panel))


def cost_frontier(budget: pd.DataFrame, cost_per_call: dict, *, rule: str = "topk",
                  models=("bias-aware", "naive")) -> pd.DataFrame:
    """Recall against money, per judge and model (Fig. 7).

    Parameters
    ----------
    budget : pandas.DataFrame
        Budgeted runs: ``judge``, ``oracle``, ``seed``, ``model``, ``rule``, ``budget``,
        ``recall``.
    cost_per_call : dict of str -> float
        Money per verdict of each judge (e.g. dollars from list prices and the prompt's
        tokens); every judge of ``budget`` needs one.
    rule : str
        Acquisition rule whose runs are read.
    models : sequence of str

    Returns
    -------
    pandas.DataFrame
        ``judge``, ``model``, ``budget`` (verdicts), ``money`` (= budget x cost per call),
        ``recall`` (mean over oracles x seeds), ``se`` (standard error over oracles, the
        independent unit) and ``n_oracles``; sorted by judge, model, money.
    """
    runs = budget[(budget["rule"] == rule) & budget["model"].isin(list(models))]
    if runs.empty:
        raise FairjudgeInputError(f"`budget` has no run of rule {rule!r} under "
                                  f"{', '.join(models)}")
    missing = [j for j in dict.fromkeys(runs["judge"]) if j not in cost_per_call]
    if missing:
        raise FairjudgeInputError(f"no cost per call for judge {missing[0]!r}; give one for "
                                  "every judge")
    bad = {j: c for j, c in cost_per_call.items() if not (np.isfinite(c) and c > 0)}
    if bad:
        judge, cost = next(iter(bad.items()))
        raise FairjudgeInputError(f"cost per call of {judge!r} must be positive; got {cost!r}")
    per_oracle = (runs.groupby(["judge", "model", "budget", "oracle"], sort=False)["recall"]
                  .mean().reset_index())
    rows = []
    for (judge, model, b), part in per_oracle.groupby(["judge", "model", "budget"], sort=False):
        values = part["recall"].to_numpy(dtype=float)
        se = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else np.nan
        rows.append({"judge": judge, "model": model, "budget": int(b),
                     "money": float(b) * float(cost_per_call[judge]),
                     "recall": float(values.mean()), "se": se, "n_oracles": int(values.size)})
    return (pd.DataFrame(rows).sort_values(["judge", "model", "money"], kind="stable")
            .reset_index(drop=True))


def money_to_reach(frontier: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per judge and model, the least money whose mean recall reaches ``target``.

    Read off the measured budgets of :func:`cost_frontier` (no interpolation); ``money`` is
    NaN when no measured budget reaches the target.
    """
    rows = []
    for (judge, model), part in frontier.groupby(["judge", "model"], sort=False):
        reached = part[part["recall"] >= target]
        rows.append({"judge": judge, "model": model, "target": target,
                     "money": float(reached["money"].min()) if len(reached) else np.nan,
                     "budget": int(reached["budget"].min()) if len(reached) else pd.NA})
    return pd.DataFrame(rows)

"""Position metrics of a judge from verdicts in both orders [position-bias-swap].

Verdicts are fairjudge verdict tables (``item_a`` shown first). Each comparison unit is an
unordered pair of items (within a judge, and within a ``question_id`` when present).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge.stats._bootstrap import Estimate, bootstrap_mean


def _unit_keys(verdicts: pd.DataFrame) -> pd.DataFrame:
    lo = np.where(verdicts["item_a"] < verdicts["item_b"], verdicts["item_a"], verdicts["item_b"])
    hi = np.where(verdicts["item_a"] < verdicts["item_b"], verdicts["item_b"], verdicts["item_a"])
    judge = verdicts["judge"] if "judge" in verdicts.columns else "judge"
    question = verdicts["question_id"] if "question_id" in verdicts.columns else ""
    winner = verdicts["winner"].astype("string").fillna("").to_numpy(dtype=object)
    winner_item = np.where(winner == "a", verdicts["item_a"],
                           np.where(winner == "b", verdicts["item_b"],
                                    np.where(winner == "tie", "=tie", "=invalid")))
    return pd.DataFrame({"judge": judge, "question": question, "lo": lo, "hi": hi,
                         "shown_lo_first": verdicts["item_a"].to_numpy() == lo,
                         "choice": winner_item}, index=verdicts.index)


def position_consistency(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                         rng=0) -> Estimate:
    """Share of pairs whose verdicts in the two presentation orders name the same winner.

    A pair counts when it was judged in both orders (the first verdict of each order is
    used); it is consistent when both name the same item, or both say tie. An invalid
    output in either order makes the pair inconsistent (the judge gave no usable answer).
    The interval is a percentile bootstrap over pairs [position-bias-swap, "position
    consistency"].
    """
    units = _unit_keys(verdicts)
    first = units.drop_duplicates(["judge", "question", "lo", "hi", "shown_lo_first"])
    both = first.groupby(["judge", "question", "lo", "hi"])["choice"].agg(["count", "nunique"])
    both = both[both["count"] == 2]
    choices = first.set_index(["judge", "question", "lo", "hi"])["choice"]
    invalid = choices.eq("=invalid").groupby(level=[0, 1, 2, 3]).any()
    consistent = (both["nunique"] == 1) & ~invalid.reindex(both.index).fillna(False)
    return bootstrap_mean(consistent.to_numpy(dtype=float), level=level, n_boot=n_boot, rng=rng)


def first_position_rate(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                        rng=0) -> Estimate:
    """Share of verdicts that prefer the first-shown answer (preference fairness).

    Ties count in the denominator (a tie favours neither slot); invalid outputs are
    excluded. 0.5 is a fair judge; the interval is a bootstrap over verdicts
    [position-bias-swap, "preference fairness"].
    """
    valid = verdicts[verdicts["winner"].isin(["a", "b", "tie"]).fillna(False).to_numpy(bool)]
    return bootstrap_mean((valid["winner"] == "a").to_numpy(dtype=float), level=level,
                          n_boot=n_boot, rng=rng)


def gold_accuracy(verdicts: pd.DataFrame, gold: pd.DataFrame, *, level: float = 0.95,
                  n_boot: int = 2000, rng=0) -> Estimate:
    """Share of verdicts that name the gold winner (ties scored by exact label match).

    ``gold`` has one row per pair (``item_a``, ``item_b``, ``winner`` in its own frame);
    each verdict is matched to its pair whatever the order shown. An invalid output is
    wrong. With both orders judged this is the mean of the two orders' accuracies (LLMBar's
    ``correct_average``). The bootstrap resamples verdicts.

    Raises
    ------
    ValueError
        If a verdict's pair has no gold label.
    """
    g = gold.copy()
    g["lo"] = np.minimum(g["item_a"], g["item_b"])
    g["hi"] = np.maximum(g["item_a"], g["item_b"])
    g["gold_choice"] = np.where(g["winner"] == "a", g["item_a"],
                                np.where(g["winner"] == "b", g["item_b"], "=tie"))
    units = _unit_keys(verdicts)
    merged = units.merge(g[["lo", "hi", "gold_choice"]].drop_duplicates(["lo", "hi"]),
                         on=["lo", "hi"], how="left")
    missing = merged["gold_choice"].isna().to_numpy()
    if missing.any():
        row = units.iloc[int(np.flatnonzero(missing)[0])]
        raise ValueError(f"no gold label for the pair ({row['lo']!r}, {row['hi']!r})")
    correct = (merged["choice"] == merged["gold_choice"]).to_numpy(dtype=float)
    return bootstrap_mean(correct, level=level, n_boot=n_boot, rng=rng)

"""Position metrics of a judge from verdicts in both orders [position-bias-swap].

Verdicts are fairjudge verdict tables (``item_a`` shown first). Each comparison unit is a
pair (its ``pair_id``, or without that column the unordered pair of items within
``question_id``), within a judge; see :func:`fairjudge.data.verdict_pairs`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import verdict_pairs
from fairjudge.stats._bootstrap import bootstrap_mean, bootstrap_rate
from fairjudge.stats._estimate import Estimate


def _unit_keys(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per verdict: its judge, its pair (:func:`fairjudge.data.verdict_pairs`), the pair's
    own two items, whether it was shown in the pair's own order, and its choice in the
    pair's own frame (``own_a``, ``own_b``, ``=tie`` or ``=invalid``). Nothing depends on
    how the item ids are spelled."""
    pairs = verdict_pairs(verdicts)
    judge = (verdicts["judge"].astype(str).to_numpy() if "judge" in verdicts.columns
             else np.full(len(verdicts), "judge", dtype=object))
    winner = verdicts["winner"].astype("string").fillna("").to_numpy(dtype=object)
    first_won = np.where(pairs.own_order, "own_a", "own_b")
    second_won = np.where(pairs.own_order, "own_b", "own_a")
    choice = np.where(winner == "a", first_won,
                      np.where(winner == "b", second_won,
                               np.where(winner == "tie", "=tie", "=invalid")))
    sample = (verdicts["sample"].to_numpy() if "sample" in verdicts.columns
              else np.zeros(len(verdicts), dtype=np.int64))
    return pd.DataFrame({"judge": judge, "pair": pairs.code, "own_a": pairs.own_a,
                         "own_b": pairs.own_b, "own_order": pairs.own_order,
                         "choice": choice, "sample": sample}, index=verdicts.index)


def _first_of_each_order(units: pd.DataFrame) -> pd.DataFrame:
    """Of :func:`_unit_keys` rows, each pair's first verdict in each order: its lowest
    ``sample`` (repeated calls), wherever its row is in the table; without repeats, the
    first row of that order."""
    return units.sort_values(["judge", "pair", "own_order", "sample"], kind="stable") \
        .drop_duplicates(["judge", "pair", "own_order"])


def pair_clusters(verdicts: pd.DataFrame) -> np.ndarray:
    """A label per verdict naming its pair (within judge): the unit of every bootstrap,
    since the two orders (and repeated samples) of one pair are not independent."""
    units = _unit_keys(verdicts)
    return (units["judge"].astype(str) + "\x1f" + units["pair"].astype(str)).to_numpy()


def position_consistency(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                         rng=0) -> Estimate:
    """Share of pairs whose verdicts in the two presentation orders name the same winner.

    A pair counts when it was judged in both orders (the first verdict of each order is
    used); it is consistent when both name the same item, or both say tie. An invalid
    output in either order makes the pair inconsistent (the judge gave no usable answer).
    The interval is a percentile bootstrap over pairs [position-bias-swap, "position
    consistency"].
    """
    consistent = pair_consistency(verdicts)["consistent"]
    return bootstrap_rate(consistent.to_numpy(dtype=float), level=level, n_boot=n_boot, rng=rng)


def first_position_rate(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                        rng=0) -> Estimate:
    """Share of decisive verdicts (``a`` or ``b``) that pick the first-shown answer.

    0.5 is a judge without a slot preference. Ties and invalid outputs are left out: a tie
    favours neither slot, and counting it as "not first" would make a judge that ties
    often and otherwise always picks the first slot read as fair (:func:`tie_rate` reports
    ties beside it). The interval is a bootstrap over pairs (the two orders of a pair are
    resampled together; ``n`` counts pairs) [position-bias-swap, the share of first-slot
    wins].
    """
    decisive = verdicts[verdicts["winner"].isin(["a", "b"]).fillna(False).to_numpy(bool)]
    return bootstrap_rate((decisive["winner"] == "a").to_numpy(dtype=float),
                          clusters=pair_clusters(decisive), level=level, n_boot=n_boot,
                          rng=rng)


def tie_rate(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
             rng=0) -> Estimate:
    """Share of valid verdicts (``a``, ``b`` or ``tie``) that are ties, with a bootstrap
    interval over pairs; the companion of :func:`first_position_rate`."""
    valid = verdicts[verdicts["winner"].isin(["a", "b", "tie"]).fillna(False).to_numpy(bool)]
    return bootstrap_rate((valid["winner"] == "tie").to_numpy(dtype=float),
                          clusters=pair_clusters(valid), level=level, n_boot=n_boot, rng=rng)


def repetition_stability(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                         rng=0) -> Estimate:
    """Share of repeated identical calls (same pair, same order) that got the same verdict.

    Groups are verdicts of one judge on one pair shown in the same order (repeated calls
    carry their ``sample`` index); a group with at least two verdicts is stable when all
    agree (invalid outputs count as a verdict of their own). Without repeats the estimate is
    NaN with ``n = 0`` [position-bias-swap, "repetition stability"].
    """
    units = _unit_keys(verdicts)
    groups = units.groupby(["judge", "pair", "own_order"])["choice"]
    sizes = groups.size()
    stable = (groups.nunique() == 1)[sizes >= 2]
    return bootstrap_rate(stable.to_numpy(dtype=float), level=level, n_boot=n_boot, rng=rng)


#: Choice pairs (slot chosen in one order, slot chosen in the other) that Shi et al. count as
#: primacy-preferred (the first slot, or the first slot and a tie) and recency-preferred.
_PRIMACY = frozenset({("a", "a"), ("a", "tie"), ("tie", "a")})
_RECENCY = frozenset({("b", "b"), ("b", "tie"), ("tie", "b")})


def _slot_pairs(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per pair judged in both orders (first sample of each order): ``judge``, ``pair`` and
    the slot each order's verdict chose (``own``: shown in the pair's own order, ``swapped``:
    in the other), each ``a`` (first slot), ``b`` (second), ``tie`` or ``invalid``."""
    units = _unit_keys(verdicts)
    slot = verdicts["winner"].astype("string").fillna("invalid").to_numpy(dtype=object)
    units = units.assign(slot=np.where(np.isin(slot, ["a", "b", "tie"]), slot, "invalid"))
    first = _first_of_each_order(units)
    wide = first.pivot(index=["judge", "pair"], columns="own_order", values="slot")
    if not {True, False} <= set(wide.columns):
        return pd.DataFrame({"judge": [], "pair": [], "own": [], "swapped": []})
    wide = wide.dropna()  # pairs judged in one order only
    return pd.DataFrame({"judge": wide.index.get_level_values("judge"),
                         "pair": wide.index.get_level_values("pair"),
                         "own": wide[True].to_numpy(dtype=object),
                         "swapped": wide[False].to_numpy(dtype=object)})


def preference_fairness(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                        rng=0) -> Estimate:
    """Preference fairness (PF) of Shi et al.: the judge's net lean to the last slot, in [-1, 1].

    Each pair judged in both orders gives a *choice pair* in the frame of the slots shown
    (``a`` first, ``b`` second, ``tie``): it is primacy-preferred for (a, a), (a, tie),
    (tie, a), recency-preferred for (b, b), (b, tie), (tie, b), and consistent otherwise
    ((a, b), (b, a), (tie, tie)); a pair with an invalid output is neither. With ``rc`` and
    ``pc`` the recency- and primacy-preferred counts over ``n`` pairs judged in both orders,
    Shi et al. define

    ``PF_raw = rc * rc / (rc + pc) - pc * pc / (rc + pc)``  (= ``rc - pc``),
    ``PF = (PF_raw - S_min) / (S_max - S_min) * 2 - 1`` with ``S_min = -n``, ``S_max = n``,

    so ``PF = (rc - pc) / n``: -1 always prefers the first slot, +1 always the last, 0 is
    fair. ``n`` counts every pair judged in both orders, invalid outputs included, as the
    authors' code does. Unlike :func:`first_position_rate` (share of decisive verdicts that
    pick the first slot) it counts pairs, and a pair whose two verdicts name the same answer
    adds nothing whatever its slots, so a judge that is right in both orders reads 0.

    The paper computes PF per (judge, candidate model, task) and averages; this is the
    pooled value over all of one judge's pairs. The interval is a percentile bootstrap over
    pairs (PF is the mean of per-pair scores +1, -1, 0).

    Returns
    -------
    Estimate
        ``n`` counts pairs; NaN with ``n = 0`` when no pair was judged in both orders.

    References
    ----------
    Shi et al., "Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge",
    arXiv 2406.07791, §3 (Preference Fairness); the authors' code
    (Slimshilin/Position-Bias-Analyzer, ``consistency_preference_calculation.py``) fixes
    ``S_min = -n``, ``S_max = n``. [position-bias-swap, "preference fairness"]

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"item_a": ["x", "y", "u", "w"], "item_b": ["y", "x", "w", "u"],
    ...                   "winner": ["a", "a", "a", "b"], "pair_id": [1, 1, 2, 2]})
    >>> preference_fairness(v, n_boot=10).estimate  # pair 1 primacy, pair 2 consistent
    -0.5
    """
    pairs = _slot_pairs(verdicts)
    choice = list(zip(pairs["own"], pairs["swapped"]))
    score = np.array([1.0 if c in _RECENCY else -1.0 if c in _PRIMACY else 0.0
                      for c in choice])
    if not score.size:
        return Estimate.missing(level=level, method="percentile bootstrap")
    return bootstrap_mean(score, level=level, n_boot=n_boot, rng=rng)


def pair_consistency(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per pair judged in both orders: ``judge``, ``pair_id``, ``item_a`` and ``item_b``
    (the pair's own items) and ``consistent`` (same winner in both orders, from sample 0 of
    each order -- or the first verdict of the order without a ``sample`` column; an invalid
    output is inconsistent)."""
    units = _unit_keys(verdicts)
    keys = verdict_pairs(verdicts).keys
    first = _first_of_each_order(units)
    grouped = first.groupby(["judge", "pair"])
    table = pd.DataFrame({"count": grouped["choice"].size(),
                          "nunique": grouped["choice"].nunique(),
                          "invalid": grouped["choice"].agg(lambda c: (c == "=invalid").any()),
                          "item_a": grouped["own_a"].first(),
                          "item_b": grouped["own_b"].first()})
    table = table[table["count"] == 2]
    table["consistent"] = (table["nunique"] == 1) & ~table["invalid"]
    table = table.reset_index()
    table["pair_id"] = [keys[c] for c in table["pair"]]
    return table[["judge", "pair_id", "item_a", "item_b", "consistent"]]


def consistency_by_gap(verdicts: pd.DataFrame, quality, *, bins=4, level: float = 0.95,
                       n_boot: int = 2000, rng=0) -> pd.DataFrame:
    """Position consistency as a function of the quality gap between the two answers.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Verdicts in both orders.
    quality : pandas.Series
        Item id -> quality score (ground truth or human rating).
    bins : int or sequence
        Quantile bins of ``|quality_a - quality_b|`` (an int) or explicit bin edges.

    Returns
    -------
    pandas.DataFrame
        One row per bin: ``gap_low``, ``gap_high``, ``estimate``, ``ci_low``, ``ci_high``,
        ``n``. The study behind [position-bias-swap] finds consistency lowest for close pairs.
    """
    pairs = pair_consistency(verdicts)
    q = pd.Series(quality)
    q.index = q.index.astype(str)
    missing = ~pairs["item_a"].isin(q.index) | ~pairs["item_b"].isin(q.index)
    if missing.any():
        raise FairjudgeInputError(f"`quality` has no score for item "
                                  f"{pairs.loc[missing, 'item_a'].iloc[0]!r} or its partner")
    gap = (q.reindex(pairs["item_a"]).to_numpy() - q.reindex(pairs["item_b"]).to_numpy())
    pairs["gap"] = np.abs(gap.astype(float))
    if isinstance(bins, (int, np.integer)):
        edges = np.unique(np.quantile(pairs["gap"], np.linspace(0, 1, bins + 1)))
    else:
        edges = np.asarray(bins, dtype=float)
    labels = np.clip(np.searchsorted(edges, pairs["gap"], side="right") - 1, 0,
                     len(edges) - 2)
    rows = []
    for b in range(len(edges) - 1):
        values = pairs.loc[labels == b, "consistent"].to_numpy(dtype=float)
        if values.size:
            est = bootstrap_mean(values, level=level, n_boot=n_boot, rng=rng)
            rows.append({"gap_low": float(edges[b]), "gap_high": float(edges[b + 1]),
                         **est.as_dict()})
    return pd.DataFrame(rows)


def gold_accuracy(verdicts: pd.DataFrame, gold: pd.DataFrame, *, level: float = 0.95,
                  n_boot: int = 2000, rng=0) -> Estimate:
    """Share of verdicts that name the gold winner (ties scored by exact label match).

    ``gold`` has one row per pair (``item_a``, ``item_b``, ``winner`` in its own frame);
    each verdict is matched to its pair whatever the order shown. An invalid output is
    wrong. With both orders judged this is the mean of the two orders' accuracies (LLMBar's
    ``correct_average``). The bootstrap resamples pairs, both orders together; ``n`` counts
    pairs.

    Raises
    ------
    FairjudgeInputError
        If a verdict's pair has no gold label (naming the verdict's file and line).
    """
    from fairjudge.audit._gold import gold_choice

    truth = gold_choice(verdicts, gold)
    winner = verdicts["winner"].astype("string").fillna("").to_numpy(dtype=object)
    correct = (winner == truth.to_numpy(dtype=object)).astype(float)
    return bootstrap_rate(correct, clusters=pair_clusters(verdicts), level=level,
                          n_boot=n_boot, rng=rng)

"""Calibration of a judge's P(first-shown wins) for its position prior [position-bias-swap,
"Beyond the swap: calibration frameworks"].

Model (stated once, used by every function here). For a decisive verdict the judge's
probability that the first-shown answer wins, ``p = p_a / (p_a + p_b)`` (``p_a``, ``p_b``:
the verdict table's probability columns, in the frame of the slots shown), follows

    logit p(first = i, second = j) = s_ij + b,    s_ji = -s_ij,

where ``s_ij`` is the content preference of ``i`` over ``j`` and ``b`` the judge's position
prior: log-odds added to whichever answer is seen first, independent of content (``b > 0``
favours the first slot). The two orders of one pair then give
``(logit p_ij + logit p_ji) / 2 = b`` and ``(logit p_ij - logit p_ji) / 2 = s_ij``, so the
prior is identified from swapped pairs without labels, and the calibrated probability
``sigmoid(logit p - b)`` -- the odds divided by ``exp(b)`` -- is order-invariant:
``p_cal(i, j) = 1 - p_cal(j, i)``.

This is the idea CalibraEval (arXiv 2410.15393) and contextual calibration (Zhao et al.,
ICML 2021) share: estimate the prior the prompt format puts on a label without reference to
the content and divide it out. CalibraEval fits a non-parametric order-preserving map to the
observed distribution; fairjudge keeps the one-parameter logit shift, which is what the
both-orders identity above determines without gold and what a swap-tested sample
(:func:`fairjudge.audit.swap_test_plan`) can estimate for a single-order run. Assumptions:
one constant ``b`` per judge (not per task or quality gap; Shi et al. find the bias larger
for close pairs, which a constant shift does not model), noise in the logits symmetric
around zero, and ties left aside (``p_tie`` is kept, the decisive mass is recalibrated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._position import _first_of_each_order, _unit_keys
from fairjudge.stats._bootstrap import bootstrap_mean
from fairjudge.stats._estimate import Estimate

#: Probabilities are clipped to [EPS, 1 - EPS] before the logit, so a judge certain of its
#: label (p = 1 after rounding) still has a finite log-odds.
EPS = 1e-6
PROBABILITY_COLUMNS = ("p_a", "p_b")
#: A probability this close to 0 or 1 is saturated: its log-odds say more about rounding and
#: the clip than about the judge, so :func:`position_prior` leaves its pair out.
SATURATED = 1e-4


@dataclass(frozen=True)
class PositionCalibration:
    """A judge's position prior and its calibrated probabilities.

    Attributes
    ----------
    judge : str
    bias : Estimate
        The position prior ``b`` in logits (positive: first slot favoured), with a
        percentile bootstrap interval over the pairs judged in both orders (``n`` pairs).
        When given by the caller, its interval is NaN and ``method`` is ``"given"``.
    probabilities : pandas.DataFrame
        Indexed like the judge's verdicts: ``p_first`` (the judge's
        ``p_a / (p_a + p_b)``), ``p_first_calibrated`` (``sigmoid(logit p_first - b)``) and
        ``p_a_calibrated``, ``p_b_calibrated`` (the decisive mass ``p_a + p_b`` split by the
        calibrated probability, so ``p_tie`` is unchanged). NaN where the verdict has no
        probabilities.
    """

    judge: str
    bias: Estimate
    probabilities: pd.DataFrame

    @property
    def prior_first(self) -> float:
        """P(first-shown wins) the prior alone implies for two equal answers:
        ``sigmoid(b)``."""
        return float(special.expit(self.bias.estimate))

    def to_dict(self) -> dict:
        return {"judge": self.judge, "bias": self.bias.as_dict(),
                "prior_first": self.prior_first}


def has_probabilities(verdicts: pd.DataFrame) -> bool:
    """Whether the table carries ``p_a`` and ``p_b`` with at least one finite pair."""
    if not set(PROBABILITY_COLUMNS) <= set(verdicts.columns):
        return False
    p = verdicts[list(PROBABILITY_COLUMNS)].apply(pd.to_numeric, errors="coerce")
    return bool(np.isfinite(p.to_numpy(dtype=float)).all(axis=1).any())


def _p_first(verdicts: pd.DataFrame) -> np.ndarray:
    """``p_a / (p_a + p_b)`` per verdict (NaN without both); rejects values outside [0, 1]."""
    missing = [c for c in PROBABILITY_COLUMNS if c not in verdicts.columns]
    if missing:
        raise FairjudgeInputError(
            f"{verdicts.attrs.get('source', 'verdicts')} has no {', '.join(missing)} column: "
            "position calibration needs the judge's label probabilities (judge with "
            "log-probabilities on, e.g. `--logprobs` and the `letter` template)")
    p = verdicts[list(PROBABILITY_COLUMNS)].apply(pd.to_numeric, errors="coerce").to_numpy(
        dtype=float)
    bad = np.isfinite(p) & ((p < 0) | (p > 1))
    if bad.any():
        row, col = np.argwhere(bad)[0]
        where = (f"{verdicts.attrs.get('source', 'verdicts')} "
                 f"{verdicts.attrs.get('location', 'row')} {verdicts.index[row]}")
        raise FairjudgeInputError(f"{where}: field `{PROBABILITY_COLUMNS[col]}` must be a "
                                  f"probability in [0, 1]; got {float(p[row, col]):g}")
    total = p[:, 0] + p[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        first = np.where(total > 0, p[:, 0] / total, np.nan)
    return first


def _logit(p: np.ndarray) -> np.ndarray:
    return special.logit(np.clip(p, EPS, 1 - EPS))


def position_prior(verdicts: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                   rng=0) -> Estimate:
    """The position prior ``b`` (logits) of one judge from the pairs it judged in both orders.

    ``b_hat`` is the mean over pairs of ``(logit p_ij + logit p_ji) / 2`` (first sample of
    each order; pairs without probabilities in both orders are skipped), which equals ``b``
    exactly when the module's model holds without noise. The interval is a percentile
    bootstrap over pairs.

    Pairs where either order's probability is saturated (within :data:`SATURATED` of 0 or
    1) are left out: their log-odds are the clipping constant, not the judge's, so a judge
    certain of both verdicts would otherwise set ``b_hat`` to whatever the clip is (a pair
    certain of the first slot in both orders adds ``logit(1 - EPS)``, about 13.8). Such a
    judge's probabilities carry no measurable prior; ``n`` counts the pairs used.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        One judge's verdicts with ``p_a`` and ``p_b`` columns.

    Returns
    -------
    Estimate
        NaN with ``n = 0`` when no pair has probabilities in both orders.

    Raises
    ------
    FairjudgeInputError
        Without the probability columns, or with a value outside [0, 1].

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"], "winner": ["a", "a"],
    ...                   "p_a": [0.9, 0.6], "p_b": [0.1, 0.4]})
    >>> round(position_prior(v, n_boot=10).estimate, 4)  # (logit 0.9 + logit 0.6) / 2
    1.3013
    """
    if "judge" in verdicts.columns and verdicts["judge"].astype(str).nunique() > 1:
        raise FairjudgeInputError("`verdicts` hold several judges; estimate each judge's "
                                  "prior on its own verdicts (see calibrate_position)")
    logit = _logit(_p_first(verdicts))
    units = _unit_keys(verdicts).assign(logit=logit)
    first = _first_of_each_order(units[np.isfinite(units["logit"])])
    wide = first.pivot(index="pair", columns="own_order", values="logit")
    if not {True, False} <= set(wide.columns):
        return Estimate.missing(level=level, method="percentile bootstrap")
    wide = wide.dropna()
    bound = special.logit(1 - SATURATED)
    wide = wide[(wide[True].abs() < bound) & (wide[False].abs() < bound)]
    half_sums = ((wide[True] + wide[False]) / 2).to_numpy(dtype=float)
    if not half_sums.size:
        return Estimate.missing(level=level, method="percentile bootstrap")
    return bootstrap_mean(half_sums, level=level, n_boot=n_boot, rng=rng)


def calibrate_position(verdicts: pd.DataFrame, *, bias: float | None = None,
                       level: float = 0.95, n_boot: int = 2000,
                       rng=0) -> dict[str, PositionCalibration]:
    """Remove the position prior from every verdict's P(first-shown wins), per judge.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Validated verdicts with ``p_a``, ``p_b`` (and optionally ``p_tie``) columns.
    bias : float, optional
        The prior ``b`` in logits, e.g. from a swap-tested sample, applied to every judge;
        default: each judge's :func:`position_prior` from its own pairs in both orders.
    level, n_boot, rng
        The interval of the estimated prior.

    Returns
    -------
    dict of str -> PositionCalibration

    Raises
    ------
    FairjudgeInputError
        Without the probability columns; when a judge has no pair with probabilities in
        both orders and no ``bias`` is given (the prior cannot be identified).

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"], "winner": ["a", "a"],
    ...                   "p_a": [0.9, 0.6], "p_b": [0.1, 0.4]})
    >>> cal = calibrate_position(v, n_boot=10)["judge"]
    >>> cal.probabilities["p_first_calibrated"].round(4).tolist()  # sums to 1: order-free
    [0.7101, 0.2899]
    """
    if bias is not None and not np.isfinite(bias):
        raise FairjudgeInputError(f"`bias` must be a finite number of logits; got {bias!r}")
    judges = (verdicts["judge"].astype(str) if "judge" in verdicts.columns
              else pd.Series("judge", index=verdicts.index))
    out = {}
    for judge in sorted(judges.unique()):
        v = verdicts[(judges == judge).to_numpy()]
        if bias is None:
            prior = position_prior(v.drop(columns="judge", errors="ignore"), level=level,
                                   n_boot=n_boot, rng=rng)
            if prior.n == 0:
                raise FairjudgeInputError(
                    f"judge {judge!r} has no pair with p_a/p_b in both orders, so its position "
                    "prior cannot be estimated; judge a sample in both orders or pass `bias`")
        else:
            prior = Estimate(float(bias), np.nan, np.nan, 0, level, "given")
        p_first = _p_first(v)
        calibrated = special.expit(_logit(p_first) - prior.estimate)
        calibrated = np.where(np.isfinite(p_first), calibrated, np.nan)
        p = v[list(PROBABILITY_COLUMNS)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
        decisive = p[:, 0] + p[:, 1]
        table = pd.DataFrame({"p_first": p_first, "p_first_calibrated": calibrated,
                              "p_a_calibrated": decisive * calibrated,
                              "p_b_calibrated": decisive * (1 - calibrated)}, index=v.index)
        out[judge] = PositionCalibration(judge, prior, table)
    return out

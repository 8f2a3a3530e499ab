"""Correlation coefficients with p-values and Fisher-z confidence intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats._estimate import Estimate
from fairjudge.stats._intervals import Interval

#: Smallest n each method accepts (the Fisher-z standard errors divide by n-3 or n-4).
_MIN_N = {"pearson": 4, "spearman": 4, "kendall": 5}


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its test and interval.

    Attributes
    ----------
    method : str
        ``"pearson"``, ``"spearman"`` or ``"kendall"``.
    statistic : float
        The coefficient (Pearson's r, Spearman's rho, Kendall's tau-b).
    p_value : float
        Two-sided p-value of no association, from :mod:`scipy.stats`.
    n : int
        Number of pairs.
    interval : Interval or None
        Fisher-z confidence interval on the coefficient.
    """

    method: str
    statistic: float
    p_value: float
    n: int
    interval: Interval | None

    def as_estimate(self) -> Estimate:
        """The coefficient and its Fisher-z interval in the shared result shape."""
        if self.interval is None:
            return Estimate(self.statistic, float("nan"), float("nan"), self.n,
                            method=f"{self.method} (no interval)")
        return Estimate(self.statistic, self.interval.low, self.interval.high, self.n,
                        self.interval.level, f"fisher-z ({self.method})")

    def as_dict(self) -> dict:
        """The shared estimate fields plus the coefficient's ``p_value``."""
        return {**self.as_estimate().as_dict(), "p_value": float(self.p_value)}


def _fisher_interval(r: float, std_error: float, level: float) -> Interval:
    z = float(stats.norm.ppf(0.5 + level / 2))
    with np.errstate(divide="ignore"):
        center = float(np.arctanh(r))
    return Interval(float(np.tanh(center - z * std_error)), float(np.tanh(center + z * std_error)),
                    level)


def correlation(x, y, *, method: str = "spearman", level: float = 0.95) -> Correlation:
    """Correlation between paired measurements, with a p-value and a Fisher-z interval.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired finite measurements (e.g. a bias score and an agreement rate per judge).
    method : {"spearman", "pearson", "kendall"}
        The coefficient.
    level : float
        Confidence level of the interval.

    Returns
    -------
    Correlation
        ``statistic`` and ``p_value`` from :func:`scipy.stats.pearsonr`,
        :func:`scipy.stats.spearmanr` or :func:`scipy.stats.kendalltau` (tau-b), and the
        interval ``tanh(atanh(r) ± z_{(1+level)/2} se)`` with

        - Pearson: ``se = 1 / sqrt(n - 3)`` (Fisher 1921; scipy's own interval);
        - Spearman: ``se = sqrt((1 + r^2 / 2) / (n - 3))`` (Bonett & Wright 2000);
        - Kendall: ``se = sqrt(0.437 / (n - 4))`` (Fieller, Hartley & Pearson 1957).

    Raises
    ------
    ValueError
        If ``method`` is unknown, ``level`` is outside (0, 1), the inputs are not 1-d of
        equal length, contain NaN/inf, are shorter than 4 pairs (5 for Kendall), or either
        is constant (the coefficient is undefined).

    Notes
    -----
    A coefficient of exactly ±1 gives the degenerate interval [±1, ±1].

    References
    ----------
    Bonett, D. G., & Wright, T. A. (2000). Sample size requirements for estimating Pearson,
    Kendall and Spearman correlations. Psychometrika 65(1), 23-28.
    Fieller, E. C., Hartley, H. O., & Pearson, E. S. (1957). Tests for rank correlation
    coefficients. I. Biometrika 44(3/4), 470-481.

    Examples
    --------
    >>> r = correlation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], method="spearman")
    >>> round(r.statistic, 2), r.n
    (0.8, 5)
    """
    if method not in _MIN_N:
        raise FairjudgeInputError(f"`method` must be one of {sorted(_MIN_N)}; got {method!r}")
    if isinstance(level, bool) or not isinstance(level, Real) or not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level!r}")
    try:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise FairjudgeInputError("`x` and `y` must be numeric") from None
    if x.ndim != 1 or y.ndim != 1 or x.size != y.size:
        raise FairjudgeInputError(
            f"`x` and `y` must be 1-d of equal length; got shapes {x.shape} and "
            f"{y.shape}")
    n = x.size
    if n < _MIN_N[method]:
        raise FairjudgeInputError(
            f"`x` and `y` need at least {_MIN_N[method]} pairs for a {method} "
            f"interval; got {n}")
    for name, values in (("x", x), ("y", y)):
        if not np.all(np.isfinite(values)):
            raise FairjudgeInputError(f"`{name}` must be finite (drop pairs with missing values)")
        if np.all(values == values[0]):
            raise FairjudgeInputError(f"`{name}` is constant, so its correlation is undefined")
    if method == "pearson":
        result = stats.pearsonr(x, y)
        r = float(result.statistic)
        std_error = 1 / math.sqrt(n - 3)
    elif method == "spearman":
        result = stats.spearmanr(x, y)
        r = float(result.statistic)
        std_error = math.sqrt((1 + r * r / 2) / (n - 3))
    else:
        result = stats.kendalltau(x, y)
        r = float(result.statistic)
        std_error = math.sqrt(0.437 / (n - 4))
    r = min(1.0, max(-1.0, r))
    return Correlation(method, r, float(result.pvalue), int(n),
                       _fisher_interval(r, std_error, float(level)))

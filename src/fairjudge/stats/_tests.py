"""Paired comparisons of per-run results."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats._estimate import Estimate
from fairjudge.stats._intervals import Interval


@dataclass(frozen=True)
class PairedTTest:
    """Result of a paired t-test of ``x - y``."""

    mean_difference: float
    std_error: float
    statistic: float
    p_value: float
    n: int
    interval: Interval

    def as_estimate(self) -> Estimate:
        """The mean difference with its t interval, in the shared result shape."""
        return Estimate(self.mean_difference, self.interval.low, self.interval.high, self.n,
                        self.interval.level, "paired t-test")


def paired_t_test(x, y, *, level: float = 0.95, alternative: str = "two-sided") -> PairedTTest:
    """Paired t-test of the mean of ``x - y`` against zero.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired measurements (e.g. recall of two rules on the same oracle and seed).
    level : float
        Confidence level of the interval on the mean difference.
    alternative : {"two-sided", "greater", "less"}
        Alternative hypothesis about ``mean(x - y)``.

    Notes
    -----
    When every difference is identical the test is undefined; the p-value is then 1 if the
    difference is zero and 0 otherwise (the direction is certain), and the statistic is
    ±inf or 0.

    Examples
    --------
    >>> r = paired_t_test([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 3.0])
    >>> round(r.mean_difference, 3), round(r.statistic, 4)
    (0.75, 5.1962)
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise FairjudgeInputError(f"`x` and `y` must be 1-d of equal length; got {x.shape} and "
                                  f"{y.shape}")
    if x.size < 2:
        raise FairjudgeInputError(f"a paired t-test needs at least 2 pairs; got {x.size}")
    d = x - y
    n = d.size
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(n))
    # Identical differences up to rounding (0.1 + 0.2 - 0.3 ...): the test is undefined.
    if np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):
        se = 0.0
    if se == 0.0:
        statistic = 0.0 if mean == 0 else float(np.sign(mean) * np.inf)
        if alternative == "two-sided":
            p = 1.0 if mean == 0 else 0.0
        elif alternative == "greater":
            p = 1.0 if mean <= 0 else 0.0
        else:
            p = 1.0 if mean >= 0 else 0.0
        return PairedTTest(mean, 0.0, statistic, p, n, Interval(mean, mean, level))
    result = stats.ttest_rel(x, y, alternative=alternative)
    tq = stats.t.ppf(0.5 + level / 2, n - 1)
    return PairedTTest(mean, se, float(result.statistic), float(result.pvalue), n,
                       Interval(mean - tq * se, mean + tq * se, level))


def mean_and_se(values) -> tuple[float, float]:
    """Mean and its standard error (``std(ddof=1)/sqrt(n)``; 0 for a single value)."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return float("nan"), float("nan")
    se = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else 0.0
    return float(values.mean()), se

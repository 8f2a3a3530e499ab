"""McNemar's test for paired correctness, Holm's step-down adjustment and McNemar's MDE.

Follows [debiasing-strategies-study App. D]: each instance is scored correct/wrong under a
baseline and under another strategy (exact-label matches, ties included), and McNemar's test
operates on the discordant cells of that 2x2 table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy import optimize, stats

from fairjudge._util._warnings import FairjudgeInputError


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on the discordant pairs of a paired 2x2 table.

    Attributes
    ----------
    b : int
        Instances the baseline got right and the other configuration got wrong.
    c : int
        Instances the baseline got wrong and the other configuration got right.
    statistic : float
        Chi-square statistic (1 degree of freedom), continuity-corrected if ``corrected``.
    p_value : float
        Upper tail of chi2(1) at ``statistic``.
    exact_p_value : float
        Two-sided exact binomial p-value of ``min(b, c)`` out of ``b + c`` at 1/2.
    n : int
        Paired instances (``b + c`` when built from counts).
    corrected : bool
        Whether the continuity correction was applied.
    """

    b: int
    c: int
    statistic: float
    p_value: float
    exact_p_value: float
    n: int
    corrected: bool

    def as_dict(self) -> dict:
        return {"b": self.b, "c": self.c, "statistic": self.statistic, "p_value": self.p_value,
                "exact_p_value": self.exact_p_value, "n": self.n}


def _check_count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) \
            or value != int(value) or value < 0:
        raise FairjudgeInputError(f"`{name}` must be a non-negative integer count; got {value!r}")
    return int(value)


def _check_binary(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise FairjudgeInputError(f"`{name}` must be 1-d; got shape {array.shape}")
    try:
        as_float = array.astype(float)
    except (TypeError, ValueError):
        raise FairjudgeInputError(f"`{name}` must contain only 0/1 (or booleans)") from None
    if not np.all((as_float == 0) | (as_float == 1)):
        raise FairjudgeInputError(f"`{name}` must contain only 0/1 (or booleans); score a missing "
                                  "verdict as 0")
    return as_float.astype(bool)


def _mcnemar_core(b: int, c: int, n: int, correction: bool) -> McNemarResult:
    discordant = b + c
    if discordant == 0:
        return McNemarResult(b, c, 0.0, 1.0, 1.0, n, bool(correction))
    gap = abs(b - c)
    numerator = max(gap - 1, 0) ** 2 if correction else gap ** 2
    statistic = numerator / discordant
    p_value = float(stats.chi2.sf(statistic, 1))
    exact = float(stats.binomtest(min(b, c), discordant, 0.5).pvalue)
    return McNemarResult(b, c, float(statistic), p_value, min(exact, 1.0), n, bool(correction))


def mcnemar(correct_baseline, correct_other, *, correction: bool = True) -> McNemarResult:
    """McNemar's test of equal accuracy for two configurations on the same instances.

    Parameters
    ----------
    correct_baseline, correct_other : array_like of {0, 1} or bool, shape (n,)
        Per-instance correctness of the baseline and of the other configuration.
    correction : bool
        Apply the continuity correction (the debiasing study does).

    Returns
    -------
    McNemarResult
        ``b`` = baseline right & other wrong, ``c`` = baseline wrong & other right (Table 4
        of the study), ``statistic = (|b - c| - 1)^2 / (b + c)`` (``(b - c)^2 / (b + c)``
        without correction) with its chi2(1) p-value, and the exact binomial p-value.
        With no discordant pairs the statistic is 0 and both p-values are 1.

    Raises
    ------
    ValueError
        If an input is not 1-d, the lengths differ, or a value is not 0/1.

    Notes
    -----
    The corrected numerator is ``max(|b - c| - 1, 0)^2``, so ``b = c`` gives 0 rather than
    a positive statistic from over-correction, as R's ``mcnemar.test`` does (statsmodels'
    ``mcnemar`` gives ``1 / (b + c)`` there; all agree whenever ``b != c``).
    [debiasing-strategies-study App. D]

    Examples
    --------
    >>> r = mcnemar([1, 1, 1, 0, 0, 1], [0, 1, 0, 1, 0, 1], correction=False)
    >>> r.b, r.c, round(r.statistic, 4)
    (2, 1, 0.3333)
    """
    baseline = _check_binary(correct_baseline, "correct_baseline")
    other = _check_binary(correct_other, "correct_other")
    if baseline.size != other.size:
        raise FairjudgeInputError(
            f"`correct_baseline` and `correct_other` must have equal length; got "
            f"{baseline.size} and {other.size}")
    b = int(np.sum(baseline & ~other))
    c = int(np.sum(~baseline & other))
    return _mcnemar_core(b, c, int(baseline.size), correction)


def mcnemar_from_counts(b, c, *, correction: bool = True) -> McNemarResult:
    """McNemar's test from the discordant counts ``b`` and ``c``.

    Parameters
    ----------
    b : int
        Instances the baseline got right and the other configuration got wrong.
    c : int
        Instances the baseline got wrong and the other configuration got right.
    correction : bool
        Apply the continuity correction.

    Returns
    -------
    McNemarResult
        As :func:`mcnemar`, with ``n = b + c`` (the concordant count is unknown here).

    Raises
    ------
    ValueError
        If ``b`` or ``c`` is not a non-negative integer.

    Examples
    --------
    Claude Sonnet 4, B0 vs. S8 in Table 4 of the debiasing study:

    >>> r = mcnemar_from_counts(23, 69)
    >>> round(r.statistic, 2), r.p_value < 1e-4
    (22.01, True)
    """
    b = _check_count(b, "b")
    c = _check_count(c, "c")
    return _mcnemar_core(b, c, b + c, correction)


def holm_bonferroni(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order.

    Parameters
    ----------
    p_values : array_like, shape (m,)
        Unadjusted p-values in [0, 1] (an empty input gives an empty result).

    Returns
    -------
    numpy.ndarray, shape (m,)
        With ``p_(1) <= ... <= p_(m)`` sorted, the adjusted value of ``p_(i)`` is
        ``min(1, max_{j <= i} (m - j + 1) p_(j))``: monotone in the raw p-values and capped
        at 1. Reject at family-wise level ``alpha`` where the adjusted p-value is ``<= alpha``.

    Raises
    ------
    ValueError
        If ``p_values`` is not 1-d or has a value outside [0, 1] (or NaN).

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J.
    Statist. 6(2), 65-70. [debiasing-strategies-study §4.2, App. D]

    Examples
    --------
    >>> holm_bonferroni([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise FairjudgeInputError(f"`p_values` must be 1-d; got shape {p.shape}")
    if not np.all((p >= 0) & (p <= 1)):
        raise FairjudgeInputError("`p_values` must all be between 0 and 1 (no NaN)")
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted


def _mcnemar_power(delta: float, n: int, p_discordant: float, z_alpha: float) -> float:
    spread = p_discordant - delta * delta
    numerator = math.sqrt(n) * delta - z_alpha * math.sqrt(p_discordant)
    if spread <= 0:  # every discordant pair in one direction: the test cannot miss
        return 1.0 if numerator > 0 else 0.0
    return float(stats.norm.cdf(numerator / math.sqrt(spread)))


def mcnemar_mde(n, p_discordant, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum accuracy difference McNemar's test detects with the given power.

    Parameters
    ----------
    n : int
        Paired instances (e.g. 400 on MT-Bench).
    p_discordant : float
        Expected share of instances on which the two configurations disagree in correctness,
        ``psi = p_10 + p_01``, in (0, 1].
    alpha : float
        Two-sided significance level.
    power : float
        Required power, between ``alpha / 2`` and 1.

    Returns
    -------
    float
        The smallest ``delta = p_01 - p_10`` (the accuracy gain ``p_c - p_b`` as a proportion;
        multiply by 100 for percentage points) with power at least ``power``.

    Raises
    ------
    ValueError
        If an argument is out of range, or no difference up to ``p_discordant`` (all
        discordant pairs in one direction) reaches ``power``; increase ``n`` then.

    Notes
    -----
    Uses the normal-approximation power of the (uncorrected) McNemar test for paired
    proportions [Connor 1987; Lachin 1992]:

    ``power(delta) = Phi((sqrt(n) delta - z_{1-alpha/2} sqrt(psi)) / sqrt(psi - delta^2))``,

    equivalently ``n = (z_{1-alpha/2} sqrt(psi) + z_power sqrt(psi - delta^2))^2 / delta^2``,
    and solves ``power(delta) = power`` for ``delta`` in ``(0, psi]`` with
    :func:`scipy.optimize.brentq`. The far tail (significance in the wrong direction) is
    ignored, as in Connor's formula. Power increases with ``delta`` whenever
    ``psi z^2 < n``, which holds for all but a handful of pairs.

    At the debiasing study's ``n = 400``, 40-50 expected discordant pairs
    (``psi = 0.10``-``0.125``) give an MDE of 4.4-4.9 pp, the "approximately 4 to 5 pp"
    of [debiasing-strategies-study App. D].

    References
    ----------
    Connor, R. J. (1987). Sample size for testing differences in proportions for the
    paired-sample design. Biometrics 43(1), 207-211.
    Lachin, J. M. (1992). Power and sample size evaluation for the McNemar test with
    application to matched case-control studies. Statist. Med. 11(9), 1239-1251.

    Examples
    --------
    >>> round(mcnemar_mde(400, 45 / 400), 4)
    0.0468
    """
    if isinstance(n, bool) or not isinstance(n, Real) or not math.isfinite(n) \
            or n != int(n) or n < 1:
        raise FairjudgeInputError("`n` must be a positive integer number of paired instances; got "
                                  f"{n!r}")
    n = int(n)
    if isinstance(p_discordant, bool) or not isinstance(p_discordant, Real) \
            or not 0 < p_discordant <= 1:
        raise FairjudgeInputError(f"`p_discordant` must be in (0, 1]; got {p_discordant!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha < 1:
        raise FairjudgeInputError(f"`alpha` must be between 0 and 1; got {alpha!r}")
    if isinstance(power, bool) or not isinstance(power, Real) or not alpha / 2 < power < 1:
        raise FairjudgeInputError(f"`power` must be between alpha/2={alpha / 2} and 1; got "
                                  f"{power!r}")
    psi = float(p_discordant)
    z_alpha = float(stats.norm.ppf(1 - alpha / 2))
    if _mcnemar_power(psi, n, psi, z_alpha) < power:
        raise FairjudgeInputError(
            f"no accuracy difference up to p_discordant={psi} reaches power {power} "
            f"with n={n} paired instances; increase `n`")

    def shortfall(delta: float) -> float:
        return _mcnemar_power(delta, n, psi, z_alpha) - power

    # shortfall(0) = alpha/2 - power < 0 and shortfall(psi) >= 0 bracket the root.
    return float(optimize.brentq(shortfall, 0.0, psi, xtol=1e-14, rtol=1e-14))

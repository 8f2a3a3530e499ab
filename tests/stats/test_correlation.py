"""Correlations against hand computations and scipy.

The coefficients are recomputed here from their definitions (Pearson's formula, Pearson on
average ranks, tau-b by counting pairs); p-values and Pearson's Fisher interval are scipy's;
the Spearman and Kendall intervals are their closed forms.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge.stats import Interval
from fairjudge.stats._correlation import Correlation, correlation

RNG = np.random.default_rng(8)
X = RNG.normal(size=40)
Y = 0.5 * X + RNG.normal(size=40)
# Tied data (e.g. agreement rates on a coarse grid) exercise average ranks and tau-b.
XT = np.round(X * 2) / 2
YT = np.round(Y * 2) / 2


def _pearson(x, y):
    dx, dy = x - x.mean(), y - y.mean()
    return float(np.sum(dx * dy) / math.sqrt(np.sum(dx ** 2) * np.sum(dy ** 2)))


def _tau_b(x, y):
    concordant = discordant = tied_x = tied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if sx == 0 and sy == 0:
            continue
        if sx == 0:
            tied_x += 1
        elif sy == 0:
            tied_y += 1
        elif sx == sy:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / math.sqrt((concordant + discordant + tied_x)
                                                 * (concordant + discordant + tied_y))


def _fisher(r, se, level):
    z = stats.norm.ppf(0.5 + level / 2)
    return math.tanh(math.atanh(r) - z * se), math.tanh(math.atanh(r) + z * se)


@pytest.mark.parametrize("x, y", [(X, Y), (XT, YT)], ids=["continuous", "ties"])
def test_pearson(x, y):
    result = correlation(x, y, method="pearson", level=0.9)
    assert isinstance(result, Correlation) and isinstance(result.interval, Interval)
    assert (result.method, result.n) == ("pearson", 40)
    r = _pearson(x, y)
    assert result.statistic == pytest.approx(r, abs=1e-12)
    t = r * math.sqrt(38 / (1 - r * r))
    assert result.p_value == pytest.approx(2 * stats.t.sf(abs(t), 38), rel=1e-9)
    scipy_ci = stats.pearsonr(x, y).confidence_interval(confidence_level=0.9)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (scipy_ci.low, scipy_ci.high), abs=1e-12)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        _fisher(r, 1 / math.sqrt(37), 0.9), abs=1e-12)
    assert result.interval.level == 0.9


@pytest.mark.parametrize("x, y", [(X, Y), (XT, YT)], ids=["continuous", "ties"])
def test_spearman(x, y):
    result = correlation(x, y)  # the default method
    assert result.method == "spearman"
    rho = _pearson(pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy())
    assert result.statistic == pytest.approx(rho, abs=1e-12)
    assert result.p_value == pytest.approx(stats.spearmanr(x, y).pvalue, rel=1e-9)
    bonett_wright = math.sqrt((1 + rho ** 2 / 2) / 37)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        _fisher(rho, bonett_wright, 0.95), abs=1e-12)


@pytest.mark.parametrize("x, y", [(X, Y), (XT, YT)], ids=["continuous", "ties"])
def test_kendall(x, y):
    result = correlation(x, y, method="kendall")
    tau = _tau_b(x, y)
    assert result.statistic == pytest.approx(tau, abs=1e-12)
    assert result.p_value == pytest.approx(stats.kendalltau(x, y).pvalue, rel=1e-9)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        _fisher(tau, math.sqrt(0.437 / 36), 0.95), abs=1e-12)


def test_worked_example():
    # r = 0.8 on 5 ranks: Fisher interval with se = sqrt((1 + 0.32) / 2) for Spearman.
    result = correlation([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert result.statistic == pytest.approx(0.8)
    half = 1.959963984540054 * math.sqrt(1.32 / 2)
    assert result.interval.low == pytest.approx(math.tanh(math.atanh(0.8) - half))
    assert result.interval.high == pytest.approx(math.tanh(math.atanh(0.8) + half))


def test_perfect_correlation_has_a_degenerate_interval():
    result = correlation([1, 2, 3, 4, 5], [10, 20, 30, 40, 50], method="pearson")
    assert result.statistic == pytest.approx(1.0)
    assert (result.interval.low, result.interval.high) == pytest.approx((1.0, 1.0))
    result = correlation([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], method="kendall")
    assert (result.statistic, result.interval.low, result.interval.high) == pytest.approx(
        (-1.0, -1.0, -1.0))


def test_argument_errors():
    with pytest.raises(ValueError, match="`method` must be one of"):
        correlation(X, Y, method="distance")
    with pytest.raises(ValueError, match="`level` must be between 0 and 1"):
        correlation(X, Y, level=0)
    with pytest.raises(ValueError, match="`x` and `y` must be 1-d of equal length"):
        correlation(X, Y[:-1])
    with pytest.raises(ValueError, match="`x` and `y` must be numeric"):
        correlation(["a", "b", "c", "d"], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="need at least 4 pairs for a pearson interval"):
        correlation([1, 2, 3], [1, 3, 2], method="pearson")
    with pytest.raises(ValueError, match="need at least 5 pairs for a kendall interval"):
        correlation([1, 2, 3, 4], [1, 3, 2, 4], method="kendall")
    with pytest.raises(ValueError, match="`y` must be finite"):
        correlation([1, 2, 3, 4], [1, np.nan, 2, 4])
    with pytest.raises(ValueError, match="`x` is constant"):
        correlation([1, 1, 1, 1], [1, 2, 3, 4])

"""Paired t-test and mean/s.e. against closed forms."""

import numpy as np
import pytest
from scipy import stats

from fairjudge.stats import mean_and_se, normal_interval, paired_t_test


def test_paired_t_matches_the_closed_form():
    x = np.array([0.8, 0.6, 0.9, 0.7, 1.0])
    y = np.array([0.6, 0.6, 0.7, 0.4, 0.8])
    d = x - y
    t = d.mean() / (d.std(ddof=1) / np.sqrt(5))
    result = paired_t_test(x, y)
    assert result.statistic == pytest.approx(t)
    assert result.p_value == pytest.approx(2 * stats.t.sf(abs(t), 4))
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (d.mean() - half, d.mean() + half))


def test_constant_differences_have_a_certain_direction():
    assert paired_t_test([1.0, 1.0, 1.0], [0.5, 0.5, 0.5]).p_value == 0.0
    assert paired_t_test([1.0, 1.0], [1.0, 1.0]).p_value == 1.0


def test_one_sided_alternative():
    result = paired_t_test([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 3.0], alternative="greater")
    assert result.p_value == pytest.approx(stats.ttest_rel([1, 2, 3, 4], [0.5, 1, 2.5, 3],
                                                           alternative="greater").pvalue)


def test_argument_errors():
    with pytest.raises(ValueError, match="at least 2 pairs"):
        paired_t_test([1.0], [0.0])
    with pytest.raises(ValueError, match="equal length"):
        paired_t_test([1.0, 2.0], [0.0])
    with pytest.raises(ValueError, match="`level` must be between 0 and 1"):
        normal_interval(0.0, 1.0, 1.5)


def test_mean_and_se():
    assert mean_and_se([1.0, 2.0, 3.0]) == pytest.approx((2.0, 1 / np.sqrt(3)))
    assert mean_and_se([4.0]) == (4.0, 0.0)

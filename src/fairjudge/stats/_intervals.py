"""Interval results shared by every estimator."""

from __future__ import annotations

from dataclasses import dataclass

from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError


@dataclass(frozen=True)
class Interval:
    """A two-sided interval ``[low, high]`` at confidence (or credibility) ``level``."""

    low: float
    high: float
    level: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def normal_interval(estimate: float, std_error: float, level: float = 0.95) -> Interval:
    """``estimate ± z_{(1+level)/2} · std_error`` (a Laplace/Wald interval).

    Examples
    --------
    >>> round(normal_interval(0.0, 1.0, 0.95).high, 4)
    1.96
    """
    if not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level}")
    z = float(stats.norm.ppf(0.5 + level / 2))
    return Interval(float(estimate - z * std_error), float(estimate + z * std_error), level)

"""The one result shape for a number with uncertainty, used by every package."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a two-sided interval, the units behind it, and how it was made.

    Attributes
    ----------
    estimate : float
        The point estimate (NaN when the data allow none).
    ci_low, ci_high : float
        Interval bounds at ``level`` (NaN when unavailable).
    n : int
        Independent units behind the estimate (pairs, instances, verdicts, clusters).
    level : float
        Confidence (or credibility) level of the interval.
    method : str
        How the interval was computed, e.g. ``"percentile bootstrap"``, ``"cluster
        bootstrap"``, ``"wilson"``, ``"laplace"``, ``"wald"``.

    ``as_dict`` is the one serialisation used by every ``--json`` output.
    """

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    level: float = 0.95
    method: str = ""

    def as_dict(self) -> dict:
        """``{estimate, ci_low, ci_high, level, n, method}``, JSON-ready (NaN stays NaN)."""
        return {"estimate": float(self.estimate), "ci_low": float(self.ci_low),
                "ci_high": float(self.ci_high), "level": float(self.level), "n": int(self.n),
                "method": self.method}

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in ``[ci_low, ci_high]``."""
        return self.ci_low <= value <= self.ci_high

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    @classmethod
    def normal(cls, estimate: float, std_error: float, *, n: int, level: float = 0.95,
               method: str = "wald") -> "Estimate":
        """``estimate ± z_{(1+level)/2} · std_error`` (a Wald or Laplace interval).

        Examples
        --------
        >>> e = Estimate.normal(0.0, 1.0, n=10, method="laplace")
        >>> round(e.ci_high, 4), e.method
        (1.96, 'laplace')
        """
        if not 0 < level < 1:
            raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level}")
        z = float(stats.norm.ppf(0.5 + level / 2))
        se = float(std_error)
        if not math.isfinite(se):
            return cls(float(estimate), math.nan, math.nan, int(n), level, method)
        return cls(float(estimate), float(estimate) - z * se, float(estimate) + z * se, int(n),
                   level, method)

    @classmethod
    def missing(cls, *, level: float = 0.95, method: str = "") -> "Estimate":
        """No estimate: NaN everywhere and ``n = 0``."""
        return cls(math.nan, math.nan, math.nan, 0, level, method)

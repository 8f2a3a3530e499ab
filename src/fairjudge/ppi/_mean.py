"""Prediction-powered inference for a mean [Angelopoulos et al., "Prediction-powered
inference", Science 2023; PPI++: Angelopoulos, Duchi and Zrnic, arXiv:2311.01453].

A judge's preference is a cheap prediction of what a human would say; a few hundred human
labels on a random subset make the estimate of the humans' mean valid whatever the judge's
bias. With n labelled records (human label Y_i, judge prediction f_i) and N unlabelled ones
(prediction f~_j), the PPI++ estimator and its variance are

    theta(lambda) = mean(Y) + lambda (mean(f~) - mean(f))
    var(lambda)   = Var(Y - lambda f) / n + lambda^2 Var(f~) / N

lambda = 1 is PPI, lambda = 0 the humans alone. Power tuning takes the lambda that
minimises the variance, lambda* = Cov(Y, f) / ((1 + n / N) Var(f)), with Var(f) over the
predictions of all n + N records, clipped to [0, 1]. The conventions are
``ppi_py.ppi_mean_ci``'s: Var(f) in lambda* divides by count - 1, Cov(Y, f) and the
interval's variances by the count. The interval is the normal one,
estimate ± z sqrt(var).

Assumptions: the labelled records are a uniformly random subset of all records (labels
missing completely at random), the labels and predictions have finite variance, n is
large enough for the normal approximation (a few dozen). Nothing is assumed about the
judge: a biased or noisy judge only makes the interval wider (lambda* shrinks toward 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered estimate of a mean.

    Attributes
    ----------
    estimate, ci_low, ci_high, std_error : float
    power : float
        lambda: 0 for the humans alone, 1 for plain PPI.
    n_labelled, n_unlabelled : int
    level : float
    """

    estimate: float
    ci_low: float
    ci_high: float
    std_error: float
    power: float
    n_labelled: int
    n_unlabelled: int
    level: float

    def as_dict(self) -> dict:
        return {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "std_error": self.std_error, "lambda": self.power,
                "n_labelled": self.n_labelled, "n_unlabelled": self.n_unlabelled,
                "level": self.level}


def _vector(values, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise FairjudgeInputError(f"`{name}` must be numbers") from None
    if array.ndim != 1 or not np.all(np.isfinite(array)):
        raise FairjudgeInputError(f"`{name}` must be a 1-d array of finite numbers; got "
                                  f"shape {array.shape}")
    return array


def ppi_mean(labels, predictions, unlabelled_predictions, *, level: float = 0.95,
             power=None) -> PPIEstimate:
    """PPI++ estimate and interval of the mean of ``labels`` (module docstring).

    Parameters
    ----------
    labels : array_like, shape (n,)
        Human labels of the labelled records (e.g. 1 = the model's answer won, 0.5 tie).
    predictions : array_like, shape (n,)
        The judge's predictions for the same records.
    unlabelled_predictions : array_like, shape (N,)
        The judge's predictions for the records without a human label.
    level : float
    power : float, optional
        A fixed lambda in [0, 1]; default the variance-minimising one.

    Returns
    -------
    PPIEstimate

    Raises
    ------
    FairjudgeInputError
        For mismatched or non-finite inputs, fewer than 2 labelled records, no unlabelled
        one, or a level or lambda outside its range.

    Examples
    --------
    >>> est = ppi_mean([1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 1, 1, 0], power=1.0)
    >>> round(est.estimate, 4)
    0.9167
    """
    y = _vector(labels, "labels")
    f = _vector(predictions, "predictions")
    f_unlabelled = _vector(unlabelled_predictions, "unlabelled_predictions")
    if y.shape != f.shape:
        raise FairjudgeInputError(f"`labels` and `predictions` must pair up; got {y.size} "
                                  f"and {f.size}")
    if y.size < 2 or f_unlabelled.size < 1:
        raise FairjudgeInputError(f"prediction-powered inference needs at least 2 labelled "
                                  f"and 1 unlabelled record; got {y.size} and "
                                  f"{f_unlabelled.size}")
    if not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level}")
    n, big_n = y.size, f_unlabelled.size
    if power is None:
        spread = np.var(np.concatenate([f, f_unlabelled]), ddof=1)
        covariance = np.mean((y - y.mean()) * (f - f.mean()))
        power = 0.0 if spread == 0 else float(np.clip(covariance / ((1 + n / big_n) * spread),
                                                      0.0, 1.0))
    elif not 0 <= power <= 1:
        raise FairjudgeInputError(f"`power` (lambda) must be in [0, 1]; got {power}")
    estimate = float(y.mean() + power * (f_unlabelled.mean() - f.mean()))
    variance = np.var(y - power * f) / n + power ** 2 * np.var(f_unlabelled) / big_n
    se = float(np.sqrt(variance))
    z = float(stats.norm.ppf(0.5 + level / 2))
    return PPIEstimate(estimate, estimate - z * se, estimate + z * se, se, float(power), n,
                       big_n, level)

"""Prediction-powered Bradley–Terry scores: the humans' ranking from a judge's predictions
on every pair and human labels on a random few [PPI++, Angelopoulos, Duchi and Zrnic,
arXiv:2311.01453, §4 (M-estimation), the logistic case of ``ppi_py``].

The estimand is the Bradley–Terry scores the humans' preferences define over the
population of compared pairs: the minimiser of the expected loss
``l(theta; a, b, y) = softplus(theta_a - theta_b) - y (theta_a - theta_b)`` (``y`` the
human's credit to ``a``: 1, 0, or 1/2 for a tie). That is logistic regression without an
intercept on the design ``e_a - e_b``. With ``n`` labelled pairs (label ``y_j``, the
judge's prediction ``f_j`` of the human's credit) and ``N`` unlabelled ones (prediction
``f~_i``), the PPI++ estimate minimises

    lambda/N sum_i l(theta; f~_i) + 1/n sum_j [l(theta; y_j) - lambda l(theta; f_j)]

(lambda = 1: PPI; lambda = 0: the labels alone). Its covariance is the sandwich
``H^-1 (n/N Cov(lambda g~) + Cov(g - lambda g^)) H^-1 / n`` with ``g``, ``g^``, ``g~`` the
per-pair gradients at the labels, at the predictions of the labelled pairs and at the
predictions of the unlabelled ones, and ``H`` the Hessian over all ``n + N`` pairs (over
the ``n`` labelled ones at lambda = 0); power
tuning picks the lambda that minimises its trace (clipped to [0, 1]). The conventions --
which Hessian, which covariances divide by count - 1 -- are ``ppi_py``'s
(``ppi_logistic_ci``), so with a reference item's score fixed at 0 the two agree.

The scores' origin is not identified (only differences are): it is fixed at mean zero by
a penalty on the mean alone, which leaves every difference, and its variance, unchanged.
A Gaussian prior ``theta ~ N(0, 1/prior_precision)`` (on the scale of counts, as in every
fairjudge Bradley–Terry model) keeps the scores finite where the labels alone would
separate an item (one that lost every labelled comparison) -- without it the rectified
loss can be unbounded below; it enters the estimating equation and the Hessian of the
sandwich. Its pull, ``prior_precision / (n + N)`` against an information of order
``p (1 - p)`` per pair, is negligible with hundreds of pairs; ``prior_precision=0`` is
``ppi_py``'s unpenalised estimator.

Assumptions: the labelled pairs are a uniformly random subset of the compared pairs
(labels missing completely at random); the predictions are fixed functions of data other
than the labels (e.g. a Bradley–Terry fit of the judge's verdicts, bias terms removed);
enough pairs for the normal approximation. Nothing is assumed about the judge.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse
from scipy.special import expit

from fairjudge._util._warnings import FairjudgeInputError

# Scores this far apart (logits) mean the loss is running off to minus infinity.
_DIVERGED = 40.0


@dataclass(frozen=True)
class PPIScores:
    """Prediction-powered Bradley–Terry scores.

    Attributes
    ----------
    scores : ndarray, shape (N_items,)
        The humans' scores (logits, mean zero).
    covariance : ndarray, shape (N_items, N_items)
        Sandwich covariance of ``scores`` (of every difference; the mean is fixed).
    power : float
        lambda: 0 for the labels alone, 1 for plain PPI.
    n_labelled, n_unlabelled : int
    converged : bool
    n_iter : int
        Newton steps of the final fit.
    """

    scores: np.ndarray
    covariance: np.ndarray
    power: float
    n_labelled: int
    n_unlabelled: int
    converged: bool
    n_iter: int = 0


def ppi_bradley_terry(labelled_pairs, labels, predictions, unlabelled_pairs,
                      unlabelled_predictions, *, n_items: int, power=None,
                      prior_precision: float = 1.0, tol: float = 1e-8,
                      max_iter: int = 100) -> PPIScores:
    """PPI++ Bradley–Terry scores and their covariance (module docstring).

    Parameters
    ----------
    labelled_pairs : array_like of int, shape (n, 2)
        ``[a, b]`` item indices of each human-labelled pair.
    labels : array_like, shape (n,)
        The humans' credit to ``a``: 1, 0, 1/2 (a tie), or the mean over annotators.
    predictions : array_like, shape (n,)
        The judge's prediction of that credit, in [0, 1].
    unlabelled_pairs : array_like of int, shape (N, 2)
    unlabelled_predictions : array_like, shape (N,)
    n_items : int
    power : float, optional
        lambda in [0, 1]; default: power tuning (lowered, if need be, until the loss has a
        minimiser; see ``_Data.fit``).
    prior_precision : float
        ``>= 0``; the prior on the scores (module docstring).

    Returns
    -------
    PPIScores
    """
    lab = _pairs(labelled_pairs, "labelled_pairs", n_items)
    unl = _pairs(unlabelled_pairs, "unlabelled_pairs", n_items)
    y = _unit(labels, "labels", len(lab))
    f = _unit(predictions, "predictions", len(lab))
    f_unl = _unit(unlabelled_predictions, "unlabelled_predictions", len(unl))
    if len(lab) < 2 or len(unl) < 2:
        raise FairjudgeInputError(f"PPI needs at least 2 labelled and 2 unlabelled pairs; got "
                                  f"{len(lab)} and {len(unl)}")
    if power is not None and not 0 <= power <= 1:
        raise FairjudgeInputError(f"`power` must be in [0, 1]; got {power!r}")
    if not (np.isfinite(prior_precision) and prior_precision >= 0):
        raise FairjudgeInputError(f"`prior_precision` must be >= 0; got {prior_precision!r}")
    data = _Data(lab, y, f, unl, f_unl, n_items, prior_precision)
    if power is not None:
        theta, converged = data.fit(float(power), tol, max_iter)
        if theta is None:
            raise FairjudgeInputError(_unbounded(power))
        return PPIScores(theta, data.sandwich(theta, float(power)), float(power), len(lab),
                         len(unl), converged, data.n_iter)
    # Power tuning, as ppi_py: the gradients at the lambda = 1 estimate give lambda*. Where
    # the loss has no minimiser at some lambda (below), start from the labels alone and
    # halve lambda* until it has one.
    theta, _ = data.fit(1.0, tol, max_iter)
    if theta is None:
        theta, _ = data.fit(0.0, tol, max_iter)
        if theta is None:
            raise FairjudgeInputError(_unbounded(0))
    lam = data.tuned_power(theta)
    while True:
        theta, converged = data.fit(lam, tol, max_iter)
        if theta is not None:
            return PPIScores(theta, data.sandwich(theta, lam), lam, len(lab), len(unl),
                             converged, data.n_iter)
        lam = 0.0 if lam < 1e-3 else lam / 2


def _unbounded(power) -> str:
    return (f"the prediction-powered loss has no minimiser at power {power:g}: "
            + ("the pairs do not connect every item, or the labels alone separate some "
               "(give more labels)" if power == 0 else
               "confident predictions that disagree with the labels outweigh them (give a "
               "smaller power, or none to have it tuned)"))


class _Data:
    def __init__(self, lab, y, f, unl, f_unl, n_items, prior_precision):
        self.n, self.big_n, self.items = len(lab), len(unl), n_items
        self.lab, self.unl = lab, unl
        self.n_iter = 0
        self.y, self.f, self.f_unl = y, f, f_unl
        self.u_lab = _design(lab, n_items)
        self.u_unl = _design(unl, n_items)
        # The prior on the mean-loss scale, plus a penalty on the mean of the scores alone
        # (which the likelihood leaves free; with a prior it is zero anyway).
        self.penalty = (np.full((n_items, n_items), 1.0 / n_items)
                        + prior_precision / (self.n + self.big_n) * np.eye(n_items))

    def fit(self, lam: float, tol: float, max_iter: int):
        """Minimise the rectified loss by damped Newton steps: (theta, converged), or
        (None, False) where it has no minimiser. It is convex for lambda in [0, 1] but may
        be unbounded below: the labelled pairs' correction ``-(y - lambda f) eta`` is
        linear, and the softplus terms grow only as ``min(f~, 1 - f~) |eta|`` when the
        predictions are confident."""
        design = sparse.vstack([self.u_unl, self.u_lab]).tocsr()
        # Per pair: weight of softplus(eta) and coefficient of -eta.
        weight = np.concatenate([np.full(self.big_n, lam / self.big_n),
                                 np.full(self.n, (1.0 - lam) / self.n)])
        linear = np.concatenate([lam * self.f_unl / self.big_n,
                                 (self.y - lam * self.f) / self.n])
        theta = np.zeros(self.items)

        def value(t):
            eta = design @ t
            return float(weight @ np.logaddexp(0.0, eta) - linear @ eta
                         + 0.5 * t @ self.penalty @ t)

        current = value(theta)
        for iteration in range(1, max_iter + 1):
            self.n_iter = iteration
            eta = design @ theta
            p = expit(eta)
            grad = design.T @ (weight * p - linear) + self.penalty @ theta
            hess = (design.T @ design.multiply((weight * p * (1 - p))[:, None])).toarray()
            hess += self.penalty
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", linalg.LinAlgWarning)
                    step = linalg.solve(hess, grad, assume_a="pos")
            except (linalg.LinAlgError, linalg.LinAlgWarning):
                return None, False
            if np.max(np.abs(theta)) > _DIVERGED:
                return None, False
            # Converged: a step below `tol`, or one that changes the loss only at rounding
            # level (ill-conditioned problems, e.g. many components, stall just above tol).
            if np.max(np.abs(step)) < tol or abs(float(grad @ step)) < 1e-15 * max(
                    1.0, abs(current)):
                return theta - step, True
            t = 1.0
            while value(theta - t * step) > current - 0.25 * t * float(grad @ step) \
                    and t > 1e-10:
                t *= 0.5
            theta = theta - t * step
            current = value(theta)
        return (None, False) if np.max(np.abs(theta)) > _DIVERGED else (theta, False)

    def _gradients(self, theta, lam: float = 1.0):
        p_lab = expit(self.u_lab @ theta)
        p_unl = expit(self.u_unl @ theta)
        grads = sparse.diags(p_lab - self.y) @ self.u_lab
        grads_hat = sparse.diags(p_lab - self.f) @ self.u_lab
        grads_unl = sparse.diags(p_unl - self.f_unl) @ self.u_unl
        hess = self.u_lab.T @ sparse.diags(p_lab * (1 - p_lab)) @ self.u_lab
        if lam == 0:  # the labels alone: their own Hessian
            hess = hess.toarray() / self.n
        else:
            hess = (hess + self.u_unl.T @ sparse.diags(p_unl * (1 - p_unl)) @ self.u_unl
                    ).toarray() / (self.n + self.big_n)
        inv_hessian = np.linalg.inv(hess + self.penalty)
        return grads.tocsr(), grads_hat.tocsr(), grads_unl.tocsr(), inv_hessian

    def tuned_power(self, theta) -> float:
        grads, grads_hat, grads_unl, inv_h = self._gradients(theta)
        # (1/n) sum (g - mean g)(g^ - mean g^)', without densifying the rows
        cross = (grads.T @ grads_hat).toarray() / self.n - np.outer(
            grads.mean(axis=0).A1, grads_hat.mean(axis=0).A1)
        cov_grads = cross + cross.T
        var_hat = _covariance(sparse.vstack([grads_hat, grads_unl]).tocsr())
        num = np.trace(inv_h @ cov_grads @ inv_h)
        den = 2 * (1 + self.n / self.big_n) * np.trace(inv_h @ var_hat @ inv_h)
        return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0

    def sandwich(self, theta, lam: float) -> np.ndarray:
        grads, grads_hat, grads_unl, inv_h = self._gradients(theta, lam)
        var_unl = lam ** 2 * _covariance(grads_unl)
        var = _covariance((grads - lam * grads_hat).tocsr())
        cov = inv_h @ (self.n / self.big_n * var_unl + var) @ inv_h / self.n
        return (cov + cov.T) / 2


def _covariance(rows) -> np.ndarray:
    """``np.cov(rows.T)`` (divisor count - 1) of a sparse (m, d) matrix, dense (d, d)."""
    m = rows.shape[0]
    mean = rows.mean(axis=0).A1
    second = (rows.T @ rows).toarray()
    return (second - m * np.outer(mean, mean)) / (m - 1)


def _design(pairs: np.ndarray, n_items: int):
    rows = np.arange(len(pairs))
    return sparse.csr_matrix((np.concatenate([np.ones(len(pairs)), -np.ones(len(pairs))]),
                              (np.concatenate([rows, rows]),
                               np.concatenate([pairs[:, 0], pairs[:, 1]]))),
                             shape=(len(pairs), n_items))


def _pairs(values, name: str, n_items: int) -> np.ndarray:
    pairs = np.asarray(values)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
        raise FairjudgeInputError(f"`{name}` must be an (m, 2) array of item indices; got "
                                  f"shape {pairs.shape}")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n_items
                       or (pairs[:, 0] == pairs[:, 1]).any()):
        raise FairjudgeInputError(f"`{name}` must pair two different items among {n_items}")
    return pairs.astype(np.int64)


def _unit(values, name: str, size: int) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.shape != (size,) or not np.all((array >= 0) & (array <= 1)):
        raise FairjudgeInputError(f"`{name}` must hold {size} numbers in [0, 1]; got shape "
                                  f"{array.shape}")
    return array

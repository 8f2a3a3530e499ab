"""Logistic regression by Newton's method, with an optional ridge penalty, and CV predictions.

Used to model a judge's preference (or correctness) from pair features; ``y`` may be a
fractional preference such as 0.5 for an order-averaged tie.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pandas as pd
from scipy import linalg, optimize, special, stats

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError


@dataclass(frozen=True)
class LogisticFit:
    """A fitted (possibly ridge-penalised) logistic regression.

    Attributes
    ----------
    names : tuple of str
        Parameter names; ``"Intercept"`` first when the intercept was fitted, then one per
        column of ``X``.
    coef : numpy.ndarray, shape (k,)
        Coefficients on the log-odds scale, aligned with ``names`` (intercept included).
    std_error : numpy.ndarray, shape (k,)
        Square roots of the diagonal of ``covariance``.
    covariance : numpy.ndarray, shape (k, k)
        Inverse of the penalised observed information (negative Hessian of the penalised
        log-likelihood) at the optimum; with ``l2 > 0`` this is the Laplace (posterior)
        covariance under a N(0, 1/l2) prior on the non-intercept coefficients.
    intercept : float
        The intercept (0.0 when not fitted); equal to ``coef[0]`` when fitted.
    l2 : float or numpy.ndarray
        The ridge penalty used.
    converged : bool
        Whether Newton's method met its tolerance.
    n_iter : int
        Newton iterations taken.
    fit_intercept : bool
        Whether ``coef[0]`` is an intercept (and ``predict_proba`` expects ``k - 1`` columns).
    """

    names: tuple
    coef: np.ndarray
    std_error: np.ndarray
    covariance: np.ndarray
    intercept: float
    l2: float
    converged: bool
    n_iter: int
    fit_intercept: bool = True

    def predict_proba(self, X) -> np.ndarray:
        """Predicted probability ``P(y = 1)`` for each row of ``X``.

        Parameters
        ----------
        X : array_like, shape (m, p)
            Features in the same columns as at fit time (without an intercept column).

        Returns
        -------
        numpy.ndarray, shape (m,)
        """
        X = np.asarray(X, dtype=float)
        p = self.coef.size - int(self.fit_intercept)
        if X.ndim != 2 or X.shape[1] != p:
            raise FairjudgeInputError(f"`X` must have shape (m, {p}); got {X.shape}")
        slopes = self.coef[1:] if self.fit_intercept else self.coef
        return special.expit(self.intercept + X @ slopes)

    def to_frame(self) -> pd.DataFrame:
        """One row per parameter: ``name``, ``coef``, ``std_error``, ``z``, ``p_value``.

        ``z = coef / std_error`` and ``p_value`` is its two-sided normal tail (a Wald test;
        with ``l2 > 0`` these describe the penalised fit, not an unbiased test).
        """
        with np.errstate(divide="ignore", invalid="ignore"):
            z = self.coef / self.std_error
        return pd.DataFrame({"name": list(self.names), "coef": self.coef,
                             "std_error": self.std_error, "z": z,
                             "p_value": 2 * stats.norm.sf(np.abs(z))})


# ----------------------------------------------------------------------------- validation

def _check_design(X, names) -> tuple[np.ndarray, list[str]]:
    if names is None and isinstance(X, pd.DataFrame):
        names = [str(c) for c in X.columns]
    try:
        X = np.asarray(X, dtype=float)
    except (TypeError, ValueError):
        raise FairjudgeInputError("`X` must be numeric") from None
    if X.ndim != 2:
        raise FairjudgeInputError("`X` must be 2-d with one row per observation; got shape "
                                  f"{X.shape}")
    if X.shape[0] == 0:
        raise FairjudgeInputError("`X` must have at least one row")
    if not np.all(np.isfinite(X)):
        raise FairjudgeInputError("`X` must be finite (no NaN or inf)")
    if names is None:
        names = [f"x{j}" for j in range(X.shape[1])]
    names = [str(name) for name in names]
    if len(names) != X.shape[1]:
        raise FairjudgeInputError(
            f"`names` must have one entry per column of X ({X.shape[1]}); got "
            f"{len(names)}")
    return X, names


def _check_response(y, n: int) -> np.ndarray:
    try:
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise FairjudgeInputError("`y` must be numeric, in [0, 1]") from None
    if y.shape != (n,):
        raise FairjudgeInputError(f"`y` must have shape ({n},) to match X; got {y.shape}")
    if not np.all((y >= 0) & (y <= 1)):
        raise FairjudgeInputError("`y` must be in [0, 1] (fractions such as 0.5 allowed; no NaN)")
    return y


def _check_l2(l2, p: int):
    """A float, or with one penalty per column of X an array of shape (p,)."""
    if np.ndim(l2) == 1 and not isinstance(l2, str):
        values = np.asarray(l2, dtype=float)
        if values.shape != (p,) or not np.all(np.isfinite(values) & (values >= 0)):
            raise FairjudgeInputError(f"`l2` given per column must be {p} finite numbers >= 0 "
                                      f"(one per column of X); got {l2!r}")
        return values
    if isinstance(l2, bool) or not isinstance(l2, Real) or not math.isfinite(l2) or l2 < 0:
        raise FairjudgeInputError(f"`l2` must be a finite number >= 0; got {l2!r}")
    return float(l2)


def _check_positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise FairjudgeInputError(f"`{name}` must be a positive integer; got {value!r}")
    return int(value)


def _separating_direction(Z: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """A direction ``v`` with ``(2y - 1) Z v >= 0`` (``= 0`` where ``0 < y < 1``), some ``> 0``.

    Such a ``v`` exists iff the unpenalised maximum-likelihood estimate is infinite
    (complete or quasi-complete separation; Albert & Anderson 1984).
    """
    positive, negative = y == 1, y == 0
    middle = ~(positive | negative)
    signed = np.concatenate([Z[positive], -Z[negative]])
    if signed.shape[0] == 0:
        return None
    # linprog minimises: maximise the total margin subject to every margin >= 0.
    result = optimize.linprog(
        -signed.sum(axis=0), A_ub=-signed, b_ub=np.zeros(signed.shape[0]),
        A_eq=Z[middle] if middle.any() else None,
        b_eq=np.zeros(int(middle.sum())) if middle.any() else None,
        bounds=[(-1, 1)] * Z.shape[1], method="highs")
    if result.status != 0:
        return None
    v = result.x
    scale = np.abs(Z).max() * np.abs(v).sum()
    if scale == 0:
        return None
    margins = signed @ v
    equalities = Z[middle] @ v
    feasible = margins.min() >= -1e-9 * scale and (
        equalities.size == 0 or np.abs(equalities).max() <= 1e-9 * scale)
    return v if feasible and margins.max() > 1e-6 * scale else None


# ----------------------------------------------------------------------------- fitting

def _objective(beta, Z, y, w, penalty, offset=0.0):
    eta = Z @ beta + offset
    # log(1 + e^eta) = max(eta, 0) + log1p(e^-|eta|): stable, and several times faster than
    # np.logaddexp on the hundreds of thousands of rows of an aggregated pair table.
    softplus = np.log1p(np.exp(-np.abs(eta)))
    softplus += np.maximum(eta, 0.0)
    return float(np.dot(w, y * eta - softplus) - 0.5 * np.sum(penalty * beta ** 2))


def _newton(Z, y, w, penalty, beta, max_iter, tol, offset=0.0):
    """Maximise the penalised log-likelihood; return ``(beta, hessian, converged, n_iter)``."""
    value = _objective(beta, Z, y, w, penalty, offset)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        mu = special.expit(Z @ beta + offset)
        gradient = Z.T @ (w * (y - mu)) - penalty * beta
        information = (Z * (w * mu * (1 - mu))[:, None]).T @ Z + np.diag(penalty)
        try:
            step = linalg.solve(information, gradient, assume_a="pos")
        except (linalg.LinAlgError, ValueError):
            step = linalg.lstsq(information, gradient)[0]
        # Step halving guards against overshooting far from the optimum; the slack absorbs
        # rounding once the objective has converged to machine precision.
        t = 1.0
        while True:
            candidate = beta + t * step
            new_value = _objective(candidate, Z, y, w, penalty, offset)
            if new_value >= value - 1e-12 * (1 + abs(value)) or t < 1e-8:
                break
            t /= 2
        beta, value = candidate, new_value
        if np.max(np.abs(t * step)) <= tol * max(1.0, np.max(np.abs(beta))):
            converged = True
            break
    mu = special.expit(Z @ beta + offset)
    information = (Z * (w * mu * (1 - mu))[:, None]).T @ Z + np.diag(penalty)
    return beta, information, converged, n_iter


def logistic_regression(X, y, *, l2: float = 0.0, weights=None, fit_intercept: bool = True,
                        names=None, offset=None, max_iter: int = 100,
                        tol: float = 1e-10) -> LogisticFit:
    """Logistic regression by Newton's method with an optional ridge penalty.

    Maximises ``sum_i w_i [y_i eta_i - log(1 + exp(eta_i))] - (l2 / 2) ||coef||^2`` with
    ``eta_i = intercept + x_i . coef + offset_i``; the intercept is not penalised.

    Parameters
    ----------
    X : array_like or pandas.DataFrame, shape (n, p)
        Features, without an intercept column (see ``fit_intercept``).
    y : array_like, shape (n,)
        Responses in [0, 1]; fractions (e.g. 0.5 for an order-averaged tie) are allowed and
        act as a mix of a success and a failure.
    l2 : float or array_like of shape (p,)
        Ridge penalty on the non-intercept coefficients (``l2 = 1 / C`` in scikit-learn),
        or one penalty per column of ``X`` (a N(0, 1/l2_k) prior on each).
    weights : array_like, shape (n,), optional
        Non-negative case weights (frequency weights); default all 1.
    fit_intercept : bool
        Prepend an unpenalised intercept named ``"Intercept"``.
    names : sequence of str, optional
        Column names; default the DataFrame's columns or ``x0, x1, ...``.
    offset : array_like, shape (n,), optional
        A known part of each log-odds, added with coefficient 1 (default 0).
    max_iter : int
        Maximum Newton iterations.
    tol : float
        Stop when no coefficient moves more than ``tol * max(1, max|coef|)``.

    Returns
    -------
    LogisticFit
        Coefficients with standard errors from the inverse penalised Hessian.

    Raises
    ------
    ValueError
        If the shapes disagree; ``X`` is not finite; ``y`` is outside [0, 1]; ``weights`` are
        negative or all zero; ``l2 < 0``; with ``l2 = 0``, the columns are linearly dependent
        or the data are separable (the estimate would be infinite: use ``l2 > 0``); with an
        intercept, ``y`` has a single class.

    Warns
    -----
    ConvergenceWarning
        If Newton's method stops after ``max_iter`` iterations without meeting ``tol``.

    Examples
    --------
    >>> fit = logistic_regression([[0.0], [1.0], [2.0], [3.0]], [0, 1, 0, 1])
    >>> fit.names, round(float(fit.coef[1]), 4)
    (('Intercept', 'x0'), 0.9082)
    """
    X, feature_names = _check_design(X, names)
    n = X.shape[0]
    y = _check_response(y, n)
    l2 = _check_l2(l2, X.shape[1])
    if offset is None:
        offset = np.zeros(n)
    else:
        offset = np.asarray(offset, dtype=float)
        if offset.shape != (n,) or not np.all(np.isfinite(offset)):
            raise FairjudgeInputError(f"`offset` must be {n} finite numbers (one per row of "
                                      f"X); got shape {offset.shape}")
    max_iter = _check_positive_int(max_iter, "max_iter")
    if isinstance(tol, bool) or not isinstance(tol, Real) or not tol > 0:
        raise FairjudgeInputError(f"`tol` must be a positive number; got {tol!r}")
    if weights is None:
        w = np.ones(n)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (n,):
            raise FairjudgeInputError(f"`weights` must have shape ({n},) to match X; got {w.shape}")
        if not np.all(np.isfinite(w) & (w >= 0)) or not np.any(w > 0):
            raise FairjudgeInputError("`weights` must be finite and >= 0, with at least one > 0")
    Z = np.column_stack([np.ones(n), X]) if fit_intercept else X
    all_names = (["Intercept"] if fit_intercept else []) + feature_names
    if len(set(all_names)) != len(all_names):
        raise FairjudgeInputError(
            f"`names` must be unique (and not 'Intercept' with an intercept); "
            f"got {feature_names}")
    penalty = np.concatenate([[0.0] if fit_intercept else [],
                              np.broadcast_to(l2, (X.shape[1],))])
    used = w > 0
    y_mean = float(np.average(y, weights=w))
    if fit_intercept and y_mean in (0.0, 1.0):
        raise FairjudgeInputError(f"`y` is {int(y_mean)} for every observation, so the unpenalised "
                                  "intercept would be infinite; fit needs both outcomes")
    free = penalty == 0  # unpenalised columns: no prior keeps their estimates finite
    if free[int(fit_intercept):].any():
        Z_free = Z[used][:, free]
        if np.linalg.matrix_rank(Z_free) < Z_free.shape[1]:
            raise FairjudgeInputError("unpenalised columns of `X` (with the intercept, if "
                                      "fitted) are linearly dependent, so the coefficients are "
                                      "not identified; drop a column or use l2 > 0")
        direction = _separating_direction(Z_free, y[used])
        if direction is not None:
            free_names = [name for name, f in zip(all_names, free) if f]
            involved = [name for name, v in zip(free_names, direction) if abs(v) > 1e-9]
            raise FairjudgeInputError("the data are separable (a combination of "
                                      f"{', '.join(involved)} predicts y perfectly), so the "
                                      "maximum-"
                                      "likelihood coefficients are infinite; use l2 > 0")
    beta = np.zeros(Z.shape[1])
    if fit_intercept:
        beta[0] = special.logit(min(max(y_mean, 1e-6), 1 - 1e-6))
    beta, information, converged, n_iter = _newton(Z, y, w, penalty, beta, max_iter, tol,
                                                   offset)
    if not converged:
        warnings.warn(f"logistic_regression did not converge in {n_iter} Newton iterations; "
                      "raise `max_iter`, loosen `tol`, or use a larger `l2`",
                      ConvergenceWarning, stacklevel=2)
    covariance = linalg.inv(information)
    covariance = (covariance + covariance.T) / 2
    std_error = np.sqrt(np.clip(np.diag(covariance), 0, None))
    return LogisticFit(tuple(all_names), beta, std_error, covariance,
                       float(beta[0]) if fit_intercept else 0.0, l2, bool(converged),
                       int(n_iter), bool(fit_intercept))


# ----------------------------------------------------------------------------- cross-validation

def _fold_labels(y: np.ndarray, n_folds: int, stratify: bool, rng) -> np.ndarray:
    n = y.size
    folds = np.empty(n, dtype=np.int64)
    if stratify:
        start = 0
        for value in np.unique(y):
            members = rng.permutation(np.flatnonzero(y == value))
            # Continue the round-robin across classes so fold sizes differ by at most one.
            folds[members] = (start + np.arange(members.size)) % n_folds
            start += members.size
    else:
        folds[rng.permutation(n)] = np.arange(n) % n_folds
    return folds


def cross_validated_predictions(X, y, *, l2: float = 1.0, n_folds: int = 5, rng=0,
                                stratify: bool = True, fit_intercept: bool = True
                                ) -> np.ndarray:
    """Out-of-fold predicted probabilities from a ridge logistic regression.

    Parameters
    ----------
    X : array_like, shape (n, p)
        Features, without an intercept column (an unpenalised intercept is fitted unless
        ``fit_intercept`` is False).
    y : array_like, shape (n,)
        Responses in [0, 1].
    l2 : float or array_like of shape (p,)
        Ridge penalty on the standardised coefficients.
    n_folds : int
        Number of folds, between 2 and n.
    rng : seed or numpy.random.Generator
        Seeds the fold assignment.
    stratify : bool
        When ``y`` is binary, deal each class round-robin over the folds so every fold has
        the overall class balance. Ignored for fractional ``y``.
    fit_intercept : bool
        False for a model through the origin, ``P(y = 1) = sigmoid(x . beta)``: for
        features that change sign with the outcome's frame (differences between the two
        sides of a pair), where an intercept would only learn the frame. Features are then
        scaled but not centred.

    Returns
    -------
    numpy.ndarray, shape (n,)
        For every row, ``P(y = 1)`` from the model fitted on the other folds.

    Raises
    ------
    ValueError
        If the shapes or ranges are invalid, or a training fold has a single binary class.

    Notes
    -----
    Inside each training fold every column is centred and scaled to unit standard deviation
    (``ddof=0``) using that fold's rows only; the held-out rows get the same transform. The
    penalty therefore treats all features alike whatever their units, and no statistic of
    a held-out row enters its own prediction. Constant columns are centred only.

    Examples
    --------
    >>> X = [[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]
    >>> p = cross_validated_predictions(X, [0, 0, 1, 0, 1, 1], n_folds=3, rng=0)
    >>> p.shape, bool(((p > 0) & (p < 1)).all())
    ((6,), True)
    """
    X, _ = _check_design(X, None)
    n = X.shape[0]
    y = _check_response(y, n)
    l2 = _check_l2(l2, X.shape[1])
    if isinstance(n_folds, bool) or not isinstance(n_folds, Integral) or not 2 <= n_folds <= n:
        raise FairjudgeInputError(f"`n_folds` must be an integer between 2 and n={n}; got "
                                  f"{n_folds!r}")
    binary = bool(np.all((y == 0) | (y == 1)))
    folds = _fold_labels(y, int(n_folds), stratify and binary, as_generator(rng))
    predictions = np.empty(n)
    for k in range(int(n_folds)):
        test = folds == k
        train = ~test
        y_train = y[train]
        if binary and np.unique(y_train).size < 2:
            raise FairjudgeInputError(
                f"`y`: training fold {k} holds only class {y_train[0]:g}, so its "
                "intercept would be infinite; use fewer `n_folds` or more "
                "data of "
                "the rare class")
        mean = X[train].mean(axis=0) if fit_intercept else np.zeros(X.shape[1])
        scale = X[train].std(axis=0) if fit_intercept else np.sqrt(
            np.mean(X[train] ** 2, axis=0))
        scale[scale == 0] = 1.0
        fit = logistic_regression((X[train] - mean) / scale, y_train, l2=l2,
                                  fit_intercept=fit_intercept)
        predictions[test] = fit.predict_proba((X[test] - mean) / scale)
    return predictions

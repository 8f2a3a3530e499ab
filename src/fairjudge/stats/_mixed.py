"""Mixed-effects logistic regression with one random intercept per group.

The debiasing study's primary analysis [debiasing-strategies-study §4.2, App. D, Table 5]:
``judge_correct ~ C(strategy, Treatment('B0_naive')) + (1 | instance_id)``, fitted by maximum
likelihood with the random intercept integrated out by adaptive Gauss-Hermite quadrature.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import pandas as pd
from scipy import linalg, optimize, special, stats

from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError
from fairjudge.stats._logistic import _check_design, _newton, _separating_direction

#: Bounds on log(sigma) during optimisation; a fit that runs into the lower one is the
#: sigma = 0 boundary (see Notes of mixed_logistic_regression).
_LOG_SIGMA_BOUNDS = (math.log(1e-6), math.log(1e3))
#: Gauss-Hermite nodes for the population-averaged probabilities behind ``prob_difference``.
_MARGINAL_NODES = 100


@dataclass(frozen=True)
class MixedLogitFit:
    """A fitted random-intercept logistic regression.

    Attributes
    ----------
    names : tuple of str
        One name per column of the design matrix.
    coef : numpy.ndarray, shape (p,)
        Fixed effects on the log-odds scale (conditional on the group's intercept).
    std_error : numpy.ndarray, shape (p,)
        From the inverse observed information (numerical Hessian of the log-likelihood).
    z : numpy.ndarray, shape (p,)
        Wald statistics ``coef / std_error``.
    p_value : numpy.ndarray, shape (p,)
        Two-sided normal p-values of ``z``.
    sigma : float
        Standard deviation of the group intercepts (0.0 at the boundary).
    sigma_std_error : float
        Delta-method standard error ``sigma * se(log sigma)``; NaN when ``sigma`` is 0.
    log_likelihood : float
        Maximised marginal log-likelihood.
    n_obs : int
        Observations.
    n_groups : int
        Groups (e.g. instances).
    converged : bool
        Whether the optimiser met its tolerance at a proper maximum.
    prob_difference : numpy.ndarray, shape (p,)
        Average marginal effect of each term on the probability scale (see
        :func:`mixed_logistic_regression`); NaN for a constant (intercept) column.
    """

    names: tuple
    coef: np.ndarray
    std_error: np.ndarray
    z: np.ndarray
    p_value: np.ndarray
    sigma: float
    sigma_std_error: float
    log_likelihood: float
    n_obs: int
    n_groups: int
    converged: bool
    prob_difference: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """One row per fixed effect: ``name, coef, std_error, z, p_value, prob_difference``.

        ``prob_difference`` is the average marginal effect on ``P(y = 1)`` with the random
        intercept integrated out (the study's "linear-probability units").
        """
        return pd.DataFrame({"name": list(self.names), "coef": self.coef,
                             "std_error": self.std_error, "z": self.z,
                             "p_value": self.p_value, "prob_difference": self.prob_difference})


# ----------------------------------------------------------------------------- likelihood

class _GroupedData:
    """Observations sorted by group, with the bookkeeping for per-group sums."""

    def __init__(self, y: np.ndarray, X: np.ndarray, codes: np.ndarray, n_groups: int):
        order = np.argsort(codes, kind="stable")
        self.y = y[order]
        self.X = X[order]
        self.group = codes[order]
        self.starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
        self.n_groups = n_groups

    def group_sum(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts, axis=0)


def _modes(data: _GroupedData, eta: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Mode and curvature scale of each group's integrand in its random intercept.

    Maximises ``h_j(u) = sum_i log p(y_ij | eta_ij + u) - u^2 / (2 sigma^2)`` (strictly
    concave) by Newton's method safeguarded with bisection; returns ``u_hat`` and
    ``s_hat = (-h_j''(u_hat))^(-1/2)``.
    """
    precision = 1.0 / (sigma * sigma)
    sizes = np.diff(np.r_[data.starts, data.y.size])
    # h'(u) <= n_j - u / sigma^2 and >= -n_j - u / sigma^2, so the root lies in +-n_j sigma^2.
    low = -sizes * sigma * sigma
    high = sizes * sigma * sigma
    u = np.zeros(data.n_groups)
    for _ in range(200):
        mu = special.expit(eta + u[data.group])
        slope = data.group_sum(data.y - mu) - u * precision
        curvature = data.group_sum(mu * (1 - mu)) + precision
        low = np.where(slope > 0, u, low)
        high = np.where(slope < 0, u, high)
        candidate = u + slope / curvature
        outside = (candidate <= low) | (candidate >= high)
        candidate = np.where(outside, (low + high) / 2, candidate)
        step = candidate - u
        u = candidate
        if np.all(np.abs(step) <= 1e-13 * np.maximum(sigma, np.abs(u))):
            break
    mu = special.expit(eta + u[data.group])
    curvature = data.group_sum(mu * (1 - mu)) + precision
    return u, 1.0 / np.sqrt(curvature)


def _log_likelihood(theta: np.ndarray, data: _GroupedData, nodes: np.ndarray,
                    log_weights: np.ndarray, gradient: bool = True):
    """Adaptive Gauss-Hermite marginal log-likelihood at ``theta = (beta, log sigma)``.

    With ``u_jk = u_hat_j + sqrt(2) s_hat_j t_k``,
    ``L_j ~= sum_k w_k exp(t_k^2) sqrt(2) s_hat_j N(u_jk; 0, sigma^2) prod_i p(y_ij | u_jk)``.
    The gradient holds ``u_hat`` and ``s_hat`` fixed: the exact integral does not depend on
    the centring, so this is the gradient up to the (negligible) quadrature error.
    """
    p = data.X.shape[1]
    beta, log_sigma = theta[:p], theta[p]
    sigma = math.exp(log_sigma)
    eta = data.X @ beta
    u_hat, s_hat = _modes(data, eta, sigma)
    u = u_hat[:, None] + math.sqrt(2) * s_hat[:, None] * nodes[None, :]      # (G, K)
    linear = eta[:, None] + u[data.group]                                     # (n, K)
    per_obs = data.y[:, None] * linear - np.logaddexp(0.0, linear)
    a = (log_weights[None, :] + nodes[None, :] ** 2 + np.log(math.sqrt(2) * s_hat)[:, None]
         - 0.5 * math.log(2 * math.pi) - log_sigma - u * u / (2 * sigma * sigma)
         + data.group_sum(per_obs))
    log_l = special.logsumexp(a, axis=1)
    value = float(log_l.sum())
    if not gradient:
        return value
    posterior = np.exp(a - log_l[:, None])                                    # (G, K)
    residual = (data.y[:, None] - special.expit(linear)) * posterior[data.group]
    grad_beta = data.X.T @ residual.sum(axis=1)
    grad_log_sigma = float(np.sum(posterior * (u * u / (sigma * sigma) - 1.0)))
    return value, np.r_[grad_beta, grad_log_sigma]


def _numerical_hessian(theta: np.ndarray, gradient_of) -> np.ndarray:
    """Central differences of an analytic gradient, symmetrised."""
    k = theta.size
    hessian = np.empty((k, k))
    for j in range(k):
        h = 1e-5 * max(1.0, abs(theta[j]))
        up, down = theta.copy(), theta.copy()
        up[j] += h
        down[j] -= h
        hessian[:, j] = (gradient_of(up) - gradient_of(down)) / (2 * h)
    return (hessian + hessian.T) / 2


# ----------------------------------------------------------------------------- marginal effects

def _marginal_probability(eta: np.ndarray, sigma: float) -> np.ndarray:
    """``E_u[expit(eta + u)]`` for ``u ~ N(0, sigma^2)`` (population-averaged probability)."""
    if sigma == 0:
        return special.expit(eta)
    t, w = np.polynomial.hermite.hermgauss(_MARGINAL_NODES)
    return special.expit(eta[:, None] + math.sqrt(2) * sigma * t[None, :]) @ w / math.sqrt(math.pi)


def _marginal_density(eta: np.ndarray, sigma: float) -> np.ndarray:
    """``E_u[expit'(eta + u)]``: the population-averaged slope of the probability."""
    if sigma == 0:
        mu = special.expit(eta)
        return mu * (1 - mu)
    t, w = np.polynomial.hermite.hermgauss(_MARGINAL_NODES)
    mu = special.expit(eta[:, None] + math.sqrt(2) * sigma * t[None, :])
    return (mu * (1 - mu)) @ w / math.sqrt(math.pi)


def _prob_difference(X: np.ndarray, beta: np.ndarray, sigma: float,
                     factor: tuple[int, ...] = ()) -> np.ndarray:
    effects = np.full(X.shape[1], np.nan)
    for k in range(X.shape[1]):
        column = X[:, k]
        if np.all(column == column[0]):
            continue
        if np.all((column == 0) | (column == 1)):
            off = X.copy()
            if k in factor:  # levels of one factor are exclusive: compare level k with the base
                off[:, list(factor)] = 0.0
            else:
                off[:, k] = 0.0
            on = off.copy()
            on[:, k] = 1.0
            effects[k] = float(np.mean(_marginal_probability(on @ beta, sigma)
                                       - _marginal_probability(off @ beta, sigma)))
        else:
            effects[k] = float(beta[k] * np.mean(_marginal_density(X @ beta, sigma)))
    return effects


# ----------------------------------------------------------------------------- fitting

def _check_binary(values, name: str, n: int | None = None) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise FairjudgeInputError(f"`{name}` must contain only 0/1 (or booleans)") from None
    if array.ndim != 1 or (n is not None and array.size != n):
        expected = f"({n},)" if n is not None else "(n,)"
        raise FairjudgeInputError(f"`{name}` must have shape {expected}; got {array.shape}")
    if not np.all((array == 0) | (array == 1)):
        raise FairjudgeInputError(
            f"`{name}` must contain only 0/1 (or booleans); score a missing verdict "
            "as 0")
    return array


def _group_codes(groups, n: int, name: str) -> tuple[np.ndarray, int]:
    values = pd.Series(np.asarray(groups, dtype=object)) if np.ndim(groups) == 1 else None
    if values is None or values.size != n:
        raise FairjudgeInputError(f"`{name}` must have shape ({n},); got {np.shape(groups)}")
    if values.isna().any():
        raise FairjudgeInputError(f"`{name}` must not contain missing labels")
    codes, uniques = pd.factorize(values, sort=False)
    if uniques.size < 2:
        raise FairjudgeInputError(f"`{name}` must contain at least 2 groups; got {uniques.size}")
    return codes.astype(np.int64), int(uniques.size)


def _fit(y: np.ndarray, X: np.ndarray, codes: np.ndarray, n_groups: int, names: list[str],
         n_quadrature: int, max_iter: int, factor: tuple[int, ...] = ()) -> MixedLogitFit:
    n, p = X.shape
    if np.linalg.matrix_rank(X) < p:
        raise FairjudgeInputError(
            "columns of `X` are linearly dependent, so the fixed effects are not "
            "identified; drop a column")
    direction = _separating_direction(X, y)
    if direction is not None:
        involved = [name for name, v in zip(names, direction) if abs(v) > 1e-9]
        raise FairjudgeInputError("the data are separable (a combination of "
                                  f"{', '.join(involved)} predicts the outcome perfectly), so the "
                                  "maximum-likelihood fixed effects are infinite; drop or merge "
                                  "those "
                                  "terms")
    data = _GroupedData(y, X, codes, n_groups)
    nodes, weights = np.polynomial.hermite.hermgauss(n_quadrature)
    log_weights = np.log(weights)

    # Ordinary logistic regression is both the starting point and the sigma = 0 boundary fit.
    ones = np.ones(n)
    beta0, information0, converged0, _ = _newton(X, y, ones, np.zeros(p), np.zeros(p),
                                                 100, 1e-12)
    eta0 = X @ beta0
    boundary_ll = float(np.sum(y * eta0 - np.logaddexp(0.0, eta0)))

    def negative(theta):
        value, grad = _log_likelihood(theta, data, nodes, log_weights)
        return -value, -grad

    def gradient_of(theta):
        return _log_likelihood(theta, data, nodes, log_weights)[1]

    theta = np.r_[beta0, 0.0]
    result = optimize.minimize(negative, theta, jac=True, method="L-BFGS-B",
                               bounds=[(None, None)] * p + [_LOG_SIGMA_BOUNDS],
                               options={"maxiter": max_iter, "ftol": 1e-15, "gtol": 1e-10})
    theta = result.x
    at_lower = theta[p] <= _LOG_SIGMA_BOUNDS[0] + 1e-6
    interior_ll = -float(result.fun)

    if at_lower or boundary_ll >= interior_ll:
        # The likelihood is maximised at sigma = 0, where the model is an ordinary logistic
        # regression; log(sigma) has no finite optimum, so report the boundary exactly.
        beta, sigma, log_likelihood = beta0, 0.0, boundary_ll
        covariance = linalg.inv(information0)
        sigma_std_error = float("nan")
        converged = bool(converged0)
    else:
        # Polish with Newton steps on the numerical Hessian: L-BFGS-B stops on a relative
        # decrease of the objective, short of the precision the standard errors deserve.
        value, grad = _log_likelihood(theta, data, nodes, log_weights)
        hessian = _numerical_hessian(theta, gradient_of)
        converged = False
        for _ in range(20):
            try:
                step = linalg.solve(-hessian, grad, assume_a="pos")
            except (linalg.LinAlgError, ValueError):
                break
            t = 1.0
            while t > 1e-6:
                candidate = theta + t * step
                candidate[p] = min(candidate[p], _LOG_SIGMA_BOUNDS[1])
                new_value, new_grad = _log_likelihood(candidate, data, nodes, log_weights)
                if new_value >= value - 1e-10 * (1 + abs(value)):
                    break
                t /= 2
            else:
                break
            theta, value, grad = candidate, new_value, new_grad
            hessian = _numerical_hessian(theta, gradient_of)
            if np.max(np.abs(t * step)) <= 1e-9 * max(1.0, np.max(np.abs(theta))):
                converged = True
                break
        beta, log_likelihood = theta[:p], value
        sigma = math.exp(theta[p])
        eigenvalues = np.linalg.eigvalsh(-hessian)
        at_upper = theta[p] >= _LOG_SIGMA_BOUNDS[1] - 1e-6
        converged = converged and bool(eigenvalues.min() > 0) and not at_upper
        try:
            full = linalg.inv(-hessian)
        except (linalg.LinAlgError, ValueError):
            full = np.full_like(hessian, np.nan)
        covariance = full[:p, :p]
        sigma_std_error = float(sigma * math.sqrt(full[p, p])) if full[p, p] >= 0 \
            else float("nan")
    if not converged:
        warnings.warn("mixed_logistic_regression did not reach a proper maximum (the optimiser "
                      f"stopped: {result.message}); raise `max_iter` or `n_quadrature`, or check "
                      "for groups whose outcomes are all equal under a very large sigma",
                      ConvergenceWarning, stacklevel=3)
    std_error = np.sqrt(np.clip(np.diag(covariance), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero s.e. gives no z
        z = np.where(std_error > 0, beta / std_error, np.nan)
    p_value = 2 * stats.norm.sf(np.abs(z))
    return MixedLogitFit(tuple(names), np.asarray(beta, dtype=float), std_error, z, p_value,
                         float(sigma), sigma_std_error, float(log_likelihood), int(n),
                         int(n_groups), bool(converged), _prob_difference(X, beta, sigma, factor))


def mixed_logistic_regression(y, X, groups, *, names=None, n_quadrature: int = 25,
                              max_iter: int = 200) -> MixedLogitFit:
    """Random-intercept logistic regression by maximum likelihood.

    Fits ``y_ij ~ Bernoulli(expit(x_ij . beta + u_j))`` with ``u_j ~ N(0, sigma^2)``
    independent across groups ``j``, integrating each ``u_j`` out by adaptive Gauss-Hermite
    quadrature.

    Parameters
    ----------
    y : array_like of {0, 1} or bool, shape (n,)
        Binary outcomes (e.g. whether the judge agreed with the gold label).
    X : array_like or pandas.DataFrame, shape (n, p)
        Fixed-effect design. **No intercept is added**: include a column of ones if one is
        wanted (:func:`strategy_effects` does).
    groups : array_like, shape (n,)
        Group label per observation (e.g. the instance id); at least 2 groups.
    names : sequence of str, optional
        Column names; default the DataFrame's columns or ``x0, x1, ...``.
    n_quadrature : int
        Gauss-Hermite nodes per group, centred at each group's mode and scaled by its
        curvature (adaptive). The error falls fast with the nodes but grows with ``sigma``
        when groups are small, because a group's integrand then has a prior-like tail: on
        30 groups of 4 observations, 25 nodes are off by ~1e-13 in the log-likelihood at
        ``sigma = 1``, ~1e-8 at ``sigma = 2`` and ~1e-6 at ``sigma = 3`` (100 nodes: ~1e-13).
        Raise it when ``sigma`` comes out large.
    max_iter : int
        Iteration limit of the L-BFGS-B stage.

    Returns
    -------
    MixedLogitFit
        Fixed effects with Wald tests, ``sigma`` and the average marginal effects.

    Raises
    ------
    ValueError
        If ``y`` is not 0/1; the shapes disagree; ``X`` is not finite or its columns are
        linearly dependent; ``groups`` has missing labels or fewer than 2 groups; the data
        are separable (infinite fixed effects); or ``n_quadrature`` / ``max_iter`` is not a
        positive integer.

    Warns
    -----
    ConvergenceWarning
        If the optimiser does not reach a maximum with a negative-definite Hessian.

    Notes
    -----
    The log-likelihood is maximised over ``(beta, log sigma)`` with L-BFGS-B and an analytic
    gradient, then polished by Newton steps on a central-difference Hessian of that
    gradient. Standard errors come from the inverse of that observed information;
    ``sigma_std_error`` is the delta-method ``sigma * se(log sigma)``.

    If the likelihood is largest at ``sigma = 0`` (no detectable between-group variation,
    e.g. under-dispersed groups), the fit is reported on that boundary: ``sigma = 0.0``,
    ``sigma_std_error = NaN``, and ``coef`` / ``std_error`` are those of the ordinary
    logistic regression of ``y`` on ``X``, which is the model at ``sigma = 0``.

    ``prob_difference[k]`` is the average marginal effect of term ``k`` on the
    population-averaged probability ``P(x) = E_u[expit(x . beta + u)]``, u ~ N(0, sigma^2)
    (the study's "linear-probability units"), averaged over the ``n`` rows of ``X``:

    - a 0/1 column: ``mean_i [P(x_i with x_ik = 1) - P(x_i with x_ik = 0)]``, the other
      columns as observed (in :func:`strategy_effects`, the other strategy indicators are
      also set to 0, so it is ``P(strategy k) - P(baseline)``);
    - any other non-constant column: ``mean_i dP(x_i)/dx_ik = beta_k mean_i E_u[expit'(.)]``;
    - a constant column (the intercept): NaN.

    For a one-hot coded factor passed here directly, the first rule switches on a level
    while another level's indicator may stay on; :func:`strategy_effects` knows the factor
    and compares each level with the baseline instead.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> groups = np.repeat(np.arange(50), 4)
    >>> x = np.tile([0.0, 1.0, 0.0, 1.0], 50)
    >>> u = rng.normal(0, 1, 50)[groups]
    >>> y = rng.random(200) < 1 / (1 + np.exp(-(0.2 + 0.8 * x + u)))
    >>> fit = mixed_logistic_regression(y, np.column_stack([np.ones(200), x]), groups,
    ...                                 names=["Intercept", "x"])
    >>> fit.names, fit.n_groups, fit.converged
    (('Intercept', 'x'), 50, True)
    """
    X, names = _check_design(X, names)
    n = X.shape[0]
    y = _check_binary(y, "y", n)
    codes, n_groups = _group_codes(groups, n, "groups")
    for value, name in ((n_quadrature, "n_quadrature"), (max_iter, "max_iter")):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise FairjudgeInputError(f"`{name}` must be a positive integer; got {value!r}")
    if len(set(names)) != len(names):
        raise FairjudgeInputError(f"`names` must be unique; got {names}")
    return _fit(y, X, codes, n_groups, names, int(n_quadrature), int(max_iter))


def strategy_effects(correct, strategy, instance, *, baseline,
                     n_quadrature: int = 25) -> MixedLogitFit:
    """Effect of each strategy on judge correctness, with an instance random intercept.

    Fits ``correct ~ C(strategy, Treatment(baseline)) + (1 | instance)``
    [debiasing-strategies-study App. D, Table 5] with :func:`mixed_logistic_regression`.

    Parameters
    ----------
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the judge's verdict matched the gold label (exact-label scoring).
    strategy : array_like, shape (n,)
        Debiasing strategy of each observation.
    instance : array_like, shape (n,)
        Instance (question/pair) id of each observation; at least 2 instances.
    baseline : object
        The reference strategy (e.g. ``"B0_naive"``); must occur in ``strategy``.
    n_quadrature : int
        Gauss-Hermite nodes per instance (see :func:`mixed_logistic_regression`).

    Returns
    -------
    MixedLogitFit
        ``names`` are ``"Intercept"`` (log-odds of a correct baseline verdict for a typical
        instance) followed by one indicator per other strategy, named by the strategy, in
        sorted order. ``prob_difference`` of a strategy is ``P(correct | strategy) -
        P(correct | baseline)`` averaged over instances.

    Raises
    ------
    ValueError
        If ``correct`` is not 0/1, the lengths differ, ``strategy`` has missing values,
        ``baseline`` does not occur in ``strategy``, ``instance`` has fewer than 2 instances,
        a strategy is always (or never) correct, making its effect infinite, or
        ``n_quadrature`` is not a positive integer.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> instance = np.repeat(np.arange(60), 3)
    >>> strategy = np.tile(["B0", "S1", "S8"], 60)
    >>> logit = rng.normal(0.3, 1, 60)[instance] + 0.6 * (strategy == "S8")
    >>> correct = rng.random(180) < 1 / (1 + np.exp(-logit))
    >>> fit = strategy_effects(correct, strategy, instance, baseline="B0")
    >>> fit.names
    ('Intercept', 'S1', 'S8')
    """
    correct = _check_binary(correct, "correct")
    n = correct.size
    if isinstance(n_quadrature, bool) or not isinstance(n_quadrature, Integral) \
            or n_quadrature < 1:
        raise FairjudgeInputError(
            f"`n_quadrature` must be a positive integer; got {n_quadrature!r}")
    if np.ndim(strategy) != 1 or np.size(strategy) != n:
        raise FairjudgeInputError(f"`strategy` must have shape ({n},) to match `correct`; got "
                                  f"{np.shape(strategy)}")
    labels = pd.Series(np.asarray(strategy, dtype=object))
    if labels.isna().any():
        raise FairjudgeInputError("`strategy` must not contain missing values")
    levels = sorted(set(labels), key=str)
    if baseline not in set(labels):
        raise FairjudgeInputError(
            f"`baseline` must be one of the strategies {[str(v) for v in levels]}; "
            f"got {baseline!r}")
    codes, n_groups = _group_codes(instance, n, "instance")
    others = [level for level in levels if level != baseline]
    X = np.column_stack([np.ones(n)] + [(labels == level).to_numpy(float) for level in others])
    names = ["Intercept"] + [str(level) for level in others]
    if len(set(names)) != len(names):
        raise FairjudgeInputError(f"`strategy` levels must have distinct names; got {names[1:]}")
    return _fit(correct, X, codes, n_groups, names, int(n_quadrature), 200,
                factor=tuple(range(1, len(others) + 1)))

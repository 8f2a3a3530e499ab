"""The two-stage win-rate GLM of length-controlled AlpacaEval and HUB-J (the papers'
estimator; ``estimator="two-stage"``).

Model [hubj-bias-discovery §3.4, App. F.1; Dubois et al. 2024]: the preference ``y`` of
unit m (a judge in HUB-J, a candidate model in AlpacaEval) for its candidate over the
reference on query x is

    y ~ Bernoulli(sigma(theta_m + phi_m * tanh(delta) + psi_m * gamma_x)),

with ``delta`` the differential of the controlled factor (candidate minus reference: words,
characters, a bias intensity), ``gamma_x`` a query effect shared by every unit and
``psi_m`` each unit's weight on it. Soft preferences (0.5 for a tie, annotator averages in
between) enter the likelihood as fractional responses.

Stage I fits every unit jointly with ``psi = 1`` and the anchor ``gamma_{x0} = 0``, then
centres the query effects; Stage II refits each unit on ``[1, tanh(delta), gamma_hat]`` by
maximum likelihood. The controlled win rate is the mean prediction at ``delta = 0``:
``BC_m = mean_x sigma(theta_m + psi_m gamma_x)``. With a single unit the query effect
cannot be told from noise and is dropped (Stage II is ``[1, tanh(delta)]``). By default
(:func:`fairjudge.winrate.win_rates`, ``cross_fit=True``) each unit's query effects come
from the other units' preferences only; the paper's Stage I uses its own too (see there
for what that changes).

Assumptions and choices the papers leave open, stated here:

- Stage I puts a weak N(0, 1/``query_prior_precision``) prior on each gamma (default
  precision 0.1, sd 3.2 logits): a query every unit wins (or loses) would otherwise have an
  infinite effect. The prior also fixes the level the paper's anchor fixes. AlpacaEval
  instead uses query difficulties precomputed on its own leaderboard, which are not
  available offline.
- Intervals are model-based: the delta method on the Stage II covariance, widened by the
  Stage I uncertainty of the query effects (two-step M-estimation, :func:`fit_unit`). The
  paper's "valid standard errors from the per-judge logistic regression" hold the query
  effects fixed. The raw win rate's interval is AlpacaEval's (mean and standard error of
  the preferences).
- theta is identified relative to the centred query effects: it is theta + psi * (mean
  query effect) of the generating model.
- What the two stages cannot fix: the plug-in query effects are noisy, and a logistic
  model is not collapsible over noise in a covariate, so phi (and psi) come out
  attenuated when few units share a query, and more queries do not help (the query
  effects are incidental parameters). Measured over simulated data sets of 4 units
  (`tests/winrate`): phi is 0.09 logits low and its 95% interval covers 93.5% with 100
  queries, 91% with 300. Integrating the likelihood over the Stage I posterior of each
  query effect (a probit approximation, or exact quadrature given the other units)
  over-corrected phi by 0.11-0.28 logits. :mod:`fairjudge.winrate._marginal` fits the
  same model with the query effects integrated out of a joint likelihood instead, which
  is consistent; :func:`fairjudge.winrate.win_rates` uses it by default up to 50 units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats import logistic_regression


@dataclass(frozen=True)
class QueryEffects:
    """Stage I: centred query effects ``gamma`` (shape ``(n_queries,)``), the anchor query's
    index (-1 when the prior fixes the level instead), whether the optimiser converged, the
    covariance of the centred ``gamma`` (:class:`QueryCovariance`: the inverse Hessian of
    the penalised likelihood, a Laplace approximation of their posterior, kept in blocks;
    None when it is singular or not finite), and the prior precision used."""

    gamma: np.ndarray
    anchor: int
    converged: bool
    covariance: QueryCovariance | None = None
    precision: float = float("nan")


@dataclass(frozen=True)
class _Blocks:
    """Stage I's Hessian in blocks: ``units`` (theta and phi, ``(2U, 2U)``), ``cross``
    (``(2U, Q)``) and the diagonal ``queries`` block (``(Q,)``) of the free query
    effects. The query block is diagonal, so Newton steps and the query effects'
    covariance go through the Schur complement of size 2U instead of a dense solve of
    size 2U + Q."""

    units: np.ndarray
    cross: np.ndarray
    queries: np.ndarray

    def _schur(self) -> np.ndarray:
        return self.units - (self.cross / self.queries) @ self.cross.T

    def solve(self, grad: np.ndarray) -> np.ndarray:
        """``H^-1 grad``."""
        k = len(self.units)
        g_units, g_queries = grad[:k], grad[k:]
        x_units = np.linalg.solve(self._schur(), g_units - self.cross @ (g_queries
                                                                          / self.queries))
        return np.concatenate([x_units, (g_queries - self.cross.T @ x_units) / self.queries])


@dataclass(frozen=True)
class QueryCovariance:
    """The covariance V of the centred query effects, C H^-1_gamma C (C = I - 11'/Q), in
    the blocks of Stage I's Hessian: O(units x queries) numbers instead of Q^2. Its
    quadratic forms M V M' are all Stage II needs.

    Attributes
    ----------
    blocks : _Blocks
        The Hessian at the optimum (free query effects).
    anchored : bool
        gamma_0 is fixed at 0 (the paper's anchor): it has no variance.
    n_queries : int
    """

    blocks: _Blocks
    anchored: bool
    n_queries: int

    def quadratic(self, gradients) -> np.ndarray:
        """``M V M'`` for per-query gradients ``M`` of shape ``(k, n_queries)``; shape
        ``(k, k)``."""
        m = np.atleast_2d(np.asarray(gradients, float))
        m = m - m.mean(axis=1, keepdims=True)  # M C: the effects are centred
        if self.anchored:
            m = m[:, 1:]
        b = self.blocks
        scaled = m / b.queries  # M D^-1
        cross = scaled @ b.cross.T  # M D^-1 B'
        return scaled @ m.T + cross @ np.linalg.solve(b._schur(), cross.T)

    def dense(self) -> np.ndarray:
        """V itself, shape ``(n_queries, n_queries)`` (for small problems and tests)."""
        return self.quadratic(np.eye(self.n_queries))


def _stage_one_blocks(w, t, unit, query, n_units, n_queries, prior, anchored) -> _Blocks:
    """The blocks of the Hessian of Stage I's penalised negative log-likelihood in (theta,
    phi, gamma) for weights ``w = p (1 - p)`` (gamma_0 left out when ``anchored``)."""
    k = 2 * n_units
    units_block = np.zeros((k, k))
    index = np.arange(n_units)
    units_block[index, index] = np.bincount(unit, w, n_units)
    units_block[index + n_units, index + n_units] = np.bincount(unit, w * t * t, n_units)
    units_block[index, index + n_units] = units_block[index + n_units, index] = \
        np.bincount(unit, w * t, n_units)
    cell = unit * n_queries + query
    cross = np.vstack([np.bincount(cell, w, n_units * n_queries).reshape(n_units, n_queries),
                       np.bincount(cell, w * t, n_units * n_queries).reshape(n_units,
                                                                            n_queries)])
    diagonal = np.bincount(query, w, n_queries) + prior
    if anchored:
        cross, diagonal = cross[:, 1:], diagonal[1:]
    return _Blocks(units_block, cross, diagonal)


def fit_query_effects(y, unit, query, tanh_delta, *, n_units: int, n_queries: int,
                      query_prior_precision: float = 0.1) -> QueryEffects:
    """Stage I: ``y ~ sigma(theta_unit + phi_unit tanh_delta + gamma_query)`` jointly over
    all units, then centred to mean zero over queries.

    With a prior the penalised likelihood is strictly convex and Newton's method (step
    halving on the objective) finds its optimum in a few steps; its inverse Hessian there
    is the covariance of the query effects (a Laplace approximation). With
    ``query_prior_precision = 0`` (the paper's Stage I, no prior) ``gamma_0 = 0`` anchors
    the level and L-BFGS fits it (a query every unit wins has no finite optimum; a
    quasi-Newton fit stops at a large effect instead).

    Parameters
    ----------
    y : array_like, shape (n,)
        Preferences in [0, 1].
    unit, query : array_like of int, shape (n,)
        Codes in ``range(n_units)`` and ``range(n_queries)``.
    tanh_delta : array_like, shape (n,)
        ``tanh`` of the (standardised) factor differential.
    query_prior_precision : float
        Precision of the N(0, 1/precision) prior on each query effect.

    Returns
    -------
    QueryEffects
        ``gamma`` of shape ``(n_queries,)``, in logits, centred to mean zero, with its
        covariance and the prior precision used.
    """
    y, t = np.asarray(y, float), np.asarray(tanh_delta, float)
    unit, query = np.asarray(unit, np.int64), np.asarray(query, np.int64)
    # Without a prior, gamma_0 = 0 anchors the level the thetas could trade with the
    # gammas (the paper's constraint); the prior fixes that level itself, and an anchor
    # would then make the fit depend on which query comes first.
    anchored = query_prior_precision == 0
    n_free = n_queries - int(anchored)
    k = 2 * n_units

    def unpack(params):
        theta, phi = params[:n_units], params[n_units:k]
        gamma = params[k:]
        return theta, phi, (np.concatenate([[0.0], gamma]) if anchored else gamma)

    def loss(params, precision):
        theta, phi, gamma = unpack(params)
        eta = theta[unit] + phi[unit] * t + gamma[query]
        # -log-likelihood of fractional responses, plus the prior on the query effects.
        value = np.sum(np.logaddexp(0.0, eta) - y * eta) + 0.5 * precision * np.sum(gamma ** 2)
        residual = special.expit(eta) - y
        grad_gamma = np.bincount(query, residual, n_queries) + precision * gamma
        grad = np.concatenate([np.bincount(unit, residual, n_units),
                               np.bincount(unit, residual * t, n_units),
                               grad_gamma[1:] if anchored else grad_gamma])
        return value, grad

    def hessian(params, precision):
        theta, phi, gamma = unpack(params)
        p = special.expit(theta[unit] + phi[unit] * t + gamma[query])
        return _stage_one_blocks(p * (1 - p), t, unit, query, n_units, n_queries,
                                 precision, anchored)

    def newton(params, precision):
        value, grad = loss(params, precision)
        for _ in range(100):
            if np.max(np.abs(grad)) < 1e-9:
                return params, True
            try:
                step = hessian(params, precision).solve(grad)
            except np.linalg.LinAlgError:
                return params, False
            size = 1.0
            while size > 1e-10:
                candidate = params - size * step
                new_value, new_grad = loss(candidate, precision)
                if new_value <= value + 1e-4 * size * (grad @ -step):
                    break
                size /= 2
            else:
                return params, np.max(np.abs(grad)) < 1e-6
            decrease = value - new_value
            params, value, grad = candidate, new_value, new_grad
            if decrease < 1e-13 * max(1.0, abs(value)) and np.max(np.abs(grad)) < 1e-6:
                return params, True
        return params, False

    params = np.zeros(k + n_free)
    if anchored:
        precision = 0.0
        result = optimize.minimize(lambda x: loss(x, 0.0), params, jac=True,
                                   method="L-BFGS-B",
                                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-14})
        params, converged = result.x, bool(result.success)
    else:
        precision = float(query_prior_precision)
        params, converged = newton(params, precision)
        if not converged:  # e.g. a unit whose differential never varies: phi unidentified
            result = optimize.minimize(lambda x: loss(x, precision), np.zeros(k + n_free),
                                       jac=True, method="L-BFGS-B",
                                       options={"maxiter": 5000, "gtol": 1e-9,
                                                "ftol": 1e-14})
            params, converged = result.x, bool(result.success)
    gamma = unpack(params)[2]
    covariance = None
    blocks = hessian(params, precision)
    # A query every unit wins has w = 0 and, without a prior, no finite variance; a unit
    # whose differential never varies leaves the Schur complement singular.
    if np.all(blocks.queries > 0):
        with np.errstate(all="ignore"):
            try:
                np.linalg.cholesky(blocks._schur())
                covariance = QueryCovariance(blocks, anchored, n_queries)
            except np.linalg.LinAlgError:
                pass
    return QueryEffects(gamma - gamma.mean(), 0 if anchored else -1, converged, covariance,
                        precision)


@dataclass(frozen=True)
class UnitFit:
    """Stage II for one unit.

    Attributes
    ----------
    coef : numpy.ndarray, shape (k,)
        ``theta, phi[, psi]`` (log-odds).
    covariance : numpy.ndarray, shape (k, k)
        Inverse observed information at the optimum, plus the Stage I term when the query
        effects' covariance is given.
    win_rate : float
        Mean preference (the raw win rate, as a share).
    win_rate_se : float
        Its standard error: sd of the preferences over sqrt(n), as AlpacaEval reports.
    controlled : float
        ``mean sigma(theta + psi gamma)``: the win rate at zero differential.
    controlled_se : float
        Delta-method standard error of ``controlled``.
    bias : float
        ``mean sigma(eta) - controlled``: what the factor adds to the fitted win rate (the
        fitted mean equals the raw win rate, since the intercept's score equation makes
        them equal).
    bias_se : float
        Its delta-method standard error.
    share, share_se : float
        ``bias`` as a share of the fitted win rate, and its delta-method standard error.
    n : int
        Preferences behind the fit.
    """

    coef: np.ndarray
    covariance: np.ndarray
    win_rate: float
    win_rate_se: float
    controlled: float
    controlled_se: float
    bias: float
    bias_se: float
    share: float
    share_se: float
    n: int


def fit_unit(y, tanh_delta, gamma=None, query=None, query_covariance=None) -> UnitFit:
    """Stage II: ``y ~ sigma(theta + phi tanh_delta [+ psi gamma])`` by maximum likelihood,
    and the raw and controlled win rates with their standard errors.

    With ``query_covariance`` the standard errors carry the Stage I uncertainty of the
    query effects too (two-step M-estimation, Murphy and Topel 1985): linearising the
    score equations s(beta, gamma) = 0 gives beta_hat - beta = I^-1 s + I^-1 D (gamma_hat -
    gamma) with D = ds/dgamma, and a rate g(beta, gamma) varies by
    g_beta I^-1 g_beta' + h V h' with h = g_beta I^-1 D + g_gamma. The two terms add
    because cross-fitted query effects come from the other units' preferences and are
    independent of this unit's score s (with the paper's Stage I, which uses this unit's
    preferences too, that is an approximation). The point estimates stay the paper's
    plug-in ones, which a noisy query effect attenuates (see the module docstring).

    Parameters
    ----------
    y : array_like, shape (n,)
        One unit's preferences in [0, 1] (fractions allowed).
    tanh_delta : array_like, shape (n,)
        ``tanh`` of the factor differential of each preference.
    gamma : array_like, shape (n,), optional
        The query effect of each preference's query (Stage I), in logits; None drops the
        term.
    query : array_like of int, shape (n,), optional
        Each preference's query, as a code into Stage I's queries (with
        ``query_covariance``).
    query_covariance : QueryCovariance, optional
        The Stage I covariance of the query effects (:attr:`QueryEffects.covariance`).
        A query no other unit judged keeps its prior variance, which widens the
        intervals.

    Returns
    -------
    UnitFit
        Coefficients ``theta, phi[, psi]`` in logits and their covariance; rates and their
        standard errors as shares (0 to 1).

    Raises
    ------
    ValueError
        If the preferences are all equal or separable by the covariates (an infinite
        estimate), or the covariates are collinear.
    """
    y, t = np.asarray(y, float), np.asarray(tanh_delta, float)
    if query_covariance is not None:
        query = _checked_queries(query, len(y), query_covariance, gamma)
    columns = [t] if gamma is None else [t, np.asarray(gamma, float)]
    X = np.column_stack(columns)
    fit = logistic_regression(X, y)
    beta, information_inverse = fit.coef, fit.covariance
    design = np.column_stack([np.ones_like(t), X])
    counterfactual = design.copy()
    counterfactual[:, 1] = 0.0  # tanh(0) = 0: no differential
    p_full, p_zero = special.expit(design @ beta), special.expit(counterfactual @ beta)
    n = len(y)
    w_full, w_zero = p_full * (1 - p_full), p_zero * (1 - p_zero)
    grad_zero = w_zero @ counterfactual / n
    grad_full = w_full @ design / n
    grad_bias = grad_full - grad_zero
    fitted, controlled = float(p_full.mean()), float(p_zero.mean())
    bias = fitted - controlled
    # share = bias / fitted: quotient rule on the gradients.
    grad_share = (grad_bias * fitted - bias * grad_full) / fitted ** 2
    covariance, spread = information_inverse, None
    psi = beta[2] if gamma is not None else 0.0
    n_queries = 0 if query_covariance is None else query_covariance.n_queries

    def per_query(rows):
        """Row-level gradients (k, n) summed per query: shape (k, n_queries)."""
        return np.array([np.bincount(query, r, n_queries) for r in np.atleast_2d(rows)])

    if query_covariance is not None:
        # D = ds/dgamma per row: -w psi x (eta moves) + (y - p) e_psi (the regressor moves).
        score_gamma = -(w_full * psi)[None, :] * design.T
        score_gamma[2] += y - p_full
        spread = information_inverse @ score_gamma  # (k, n): d beta_hat / d gamma_row
        covariance = information_inverse + query_covariance.quadratic(per_query(spread))
    # Per-row derivatives of the rates in gamma.
    gamma_zero, gamma_full = w_zero * psi / n, w_full * psi / n
    gamma_bias = gamma_full - gamma_zero
    gamma_share = (gamma_bias * fitted - bias * gamma_full) / fitted ** 2

    def se(grad, grad_gamma):
        value = grad @ information_inverse @ grad
        if query_covariance is not None:
            value += query_covariance.quadratic(per_query(grad @ spread + grad_gamma))[0, 0]
        return float(np.sqrt(max(value, 0.0)))

    return UnitFit(beta, covariance, float(y.mean()),
                   float(y.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
                   controlled, se(grad_zero, gamma_zero), bias, se(grad_bias, gamma_bias),
                   bias / fitted, se(grad_share, gamma_share), n)


def _checked_queries(query, n: int, covariance, gamma) -> np.ndarray:
    """The query codes that go with a Stage I covariance, or a clear error."""
    if not isinstance(covariance, QueryCovariance):
        raise FairjudgeInputError("`query_covariance` must be the QueryEffects.covariance of "
                                  f"Stage I; got {type(covariance).__name__}")
    if gamma is None:
        raise FairjudgeInputError("`query_covariance` needs `gamma`: the query effects it "
                                  "describes")
    if query is None:
        raise FairjudgeInputError("`query_covariance` needs `query`: each preference's query "
                                  "code")
    query = np.asarray(query)
    if query.shape != (n,) or not np.issubdtype(query.dtype, np.integer) or (
            n and (query.min() < 0 or query.max() >= covariance.n_queries)):
        raise FairjudgeInputError(f"`query` must hold {n} integer codes in "
                                  f"[0, {covariance.n_queries}); got shape {query.shape}, "
                                  f"dtype {query.dtype}")
    return query.astype(np.int64)


def check_preferences(y) -> np.ndarray:
    """Preferences as floats in [0, 1], or a clear error."""
    y = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(y)) or np.any((y < 0) | (y > 1)):
        bad = int(np.flatnonzero(~np.isfinite(y) | (y < 0) | (y > 1))[0])
        raise FairjudgeInputError(f"preference {bad}: must be in [0, 1] (1 = the candidate "
                                  f"wins, 0.5 = a tie); got {y[bad]!r}")
    return y

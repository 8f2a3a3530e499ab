"""The win-rate GLM with the query effects integrated out: one joint maximum-likelihood fit.

Model (the one of :mod:`fairjudge.winrate._glm`, with the query effect random): unit m's
preference on query x is

    y ~ Bernoulli(sigma(theta_m + phi_m * tanh(delta) + psi_m * gamma_x)),
    gamma_x ~ N(0, 1) independently over queries,

so ``psi_m`` is the standard deviation, in logits, of how much queries move unit m, and
``theta_m`` is its log-odds on a query of average difficulty (gamma = 0). The likelihood of
a query's preferences is a one-dimensional integral over ``gamma_x``, computed by
Gauss-Hermite quadrature; theta, phi and psi of every unit are fitted jointly by maximising
the sum over queries (trust-region Newton with the exact Hessian).

Why not plug in estimated query effects (the papers' two stages): with a handful of units
per query each query effect is estimated from a few binary preferences, so it is noisy no
matter how many queries there are (the query effects are incidental parameters, Neyman and
Scott 1948), and a logistic model is not collapsible over noise in a covariate: phi is
attenuated and its interval under-covers more the more queries there are. Integrating the
effects out is consistent as queries grow with the units fixed. Measured on the simulated
data of ``tests/winrate`` (4 units; phi error averaged over the units of 1,000 data sets
at 100 queries, 100 at 1,000): the plug-in phi is 0.09 logits low at 100 queries and 300
alike, and its 95% interval covers 93.5% and 91%; integrated, phi is 0.10, 0.06 and 0.03
logits high at 100, 300 and 1,000 queries (the small-sample bias of logistic maximum
likelihood, which shrinks with data; with the true query effects known it is 0.04 at 100
queries), and its interval covers 96.4%, 95.8% and 94.5%; theta's and the controlled win
rate's cover 96.3% and 95.7% at 100 queries.

Assumptions: query effects are normal and independent of the differential; a unit's
preferences are independent given the query effect. The sign of psi is not identified
(gamma and -gamma have the same law); it is chosen so that the psi sum to a positive
number. Intervals are Wald intervals from the observed information; the controlled win
rate's also carries the posterior uncertainty of the query effects it averages over (it
estimates the rate on these queries, not on a population of queries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse, special

from fairjudge.winrate._glm import UnitFit

QUADRATURE_NODES = 30
PSI_PRIOR_PRECISION = 0.1


@dataclass(frozen=True)
class MarginalFit:
    """The joint fit.

    Attributes
    ----------
    coef : numpy.ndarray, shape (n_units, 3)
        ``theta, phi, psi`` per unit, in logits.
    covariance : numpy.ndarray, shape (3 * n_units, 3 * n_units)
        Inverse observed information, parameters ordered as ``coef.T.ravel()`` (all
        thetas, then all phis, then all psis).
    converged : bool
        Whether the optimiser met its tolerance with a positive definite information.
    units : list of UnitFit
        Per unit: its coefficients and their covariance block, and the raw, controlled and
        added win rates with standard errors (shares, 0 to 1).
    gamma : numpy.ndarray, shape (n_queries,)
        Posterior mean of each query effect (logits, on the N(0, 1) scale psi multiplies).
    """

    coef: np.ndarray
    covariance: np.ndarray
    converged: bool
    units: list
    gamma: np.ndarray


class _Objective:
    """Minus the marginal log-likelihood, its gradient and Hessian, for rows ``(y, unit,
    query, t)``; parameters ``[theta (U), phi (U), psi (U)]``."""

    def __init__(self, y, unit, query, t, n_units, n_queries, n_nodes, psi_precision,
                 trials=None):
        self.psi_precision = psi_precision
        self.trials = np.ones(len(y)) if trials is None else np.asarray(trials, float)
        self.y, self.unit, self.query, self.t = y, unit, query, t
        self.n_units, self.n_queries = n_units, n_queries
        nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
        self.nodes, self.log_weights = nodes, np.log(weights / weights.sum())
        n = len(y)
        # Row -> query, and row -> (query, unit) cell, as sparse sums.
        self.by_query = sparse.csr_matrix((np.ones(n), (query, np.arange(n))),
                                          shape=(n_queries, n))
        self.by_cell = sparse.csr_matrix((np.ones(n), (query * n_units + unit, np.arange(n))),
                                         shape=(n_queries * n_units, n))
        self._cache_key, self._cache = None, None

    def split(self, params):
        u = self.n_units
        return params[:u], params[u:2 * u], params[2 * u:]

    def state(self, params):
        """Linear predictors (n, G), row log-likelihoods and the query posteriors (Q, G)
        over the nodes, and minus the marginal log-likelihood."""
        key = params.tobytes()
        if key != self._cache_key:
            theta, phi, psi = self.split(params)
            eta = (theta[self.unit] + phi[self.unit] * self.t)[:, None] \
                + psi[self.unit][:, None] * self.nodes[None, :]
            loglik = self.trials[:, None] * (self.y[:, None] * eta - np.logaddexp(0.0, eta))
            joint = np.asarray(self.by_query @ loglik) + self.log_weights
            marginal = special.logsumexp(joint, axis=1)
            posterior = np.exp(joint - marginal[:, None])
            penalty = 0.5 * self.psi_precision * float(psi @ psi)
            self._cache_key = key
            self._cache = (eta, posterior, -float(marginal.sum()) + penalty)
        return self._cache

    def value_and_gradient(self, params):
        eta, posterior, value = self.state(params)
        weighted = (self.trials * (self.y - special.expit(eta).T)).T * posterior[self.query]
        u = self.n_units
        grad = -np.concatenate([
            np.bincount(self.unit, weighted.sum(1), u),
            np.bincount(self.unit, weighted.sum(1) * self.t, u),
            np.bincount(self.unit, weighted @ self.nodes, u)])
        grad[2 * u:] += self.psi_precision * self.split(params)[2]
        return value, grad

    def centred_scores(self, params):
        """The score of each query's likelihood at each node over the parameters, less
        its posterior mean: shape ``(Q, 3U, G)``. It is also how the query posterior moves:
        ``d posterior[x, g] / d params = posterior[x, g] * centred[x, :, g]``."""
        eta, posterior, _ = self.state(params)
        u, g, z = self.n_units, len(self.nodes), self.nodes
        residual = self.trials[:, None] * (self.y[:, None] - special.expit(eta))
        first = np.asarray(self.by_cell @ residual).reshape(self.n_queries, u, g)
        second = np.asarray(self.by_cell @ (residual * self.t[:, None])).reshape(
            self.n_queries, u, g)
        score = np.concatenate([first, second, first * z], axis=1)
        return score - np.einsum("qkg,qg->qk", score, posterior)[:, :, None]

    def cell_weights(self, params):
        """``sum w``, ``sum w t`` and ``sum w t^2`` over each (query, unit) cell's rows at
        each node, with ``w = p (1 - p)``: shape ``(3, Q, U, G)``. Row blocks of the
        information at one node."""
        eta = self.state(params)[0]
        w = self.trials[:, None] * special.expit(eta) * special.expit(-eta)
        shape = (self.n_queries, self.n_units, len(self.nodes))
        return np.stack([np.asarray(self.by_cell @ (w * self.t[:, None] ** k)).reshape(shape)
                         for k in range(3)])

    def hessian(self, params):
        """E_posterior[-d2 loglik] - Cov_posterior[score], summed over queries."""
        eta, posterior, _ = self.state(params)
        u = self.n_units
        p = special.expit(eta)
        row_post = posterior[self.query]
        w = self.trials[:, None] * p * (1 - p) * row_post
        t, z = self.t, self.nodes
        # Expected information: one 3x3 block per unit (rows never mix units).
        sums = {(a, b): np.bincount(self.unit, value, u) for (a, b), value in {
            (0, 0): w.sum(1), (0, 1): w.sum(1) * t, (1, 1): w.sum(1) * t ** 2,
            (0, 2): w @ z, (1, 2): (w @ z) * t, (2, 2): w @ z ** 2}.items()}
        hess = np.zeros((3 * u, 3 * u))
        idx = np.arange(u)
        hess[2 * u + idx, 2 * u + idx] = self.psi_precision
        for (a, b), value in sums.items():
            hess[a * u + idx, b * u + idx] += value
            if a != b:
                hess[b * u + idx, a * u + idx] += value
        scaled = self.centred_scores(params) * np.sqrt(posterior)[:, None, :]
        flat = scaled.transpose(0, 2, 1).reshape(-1, 3 * u)
        return hess - flat.T @ flat


def fit_marginal(y, unit, query, tanh_delta, *, n_units: int, n_queries: int,
                 trials=None, n_nodes: int = QUADRATURE_NODES,
                 psi_prior_precision: float = PSI_PRIOR_PRECISION) -> MarginalFit:
    """Fit every unit's ``theta, phi, psi`` jointly with the query effects integrated out.

    Parameters
    ----------
    y : array_like, shape (n,)
        Preferences in [0, 1]: a share of ``trials`` binary verdicts (``y * trials``
        wins), so that the likelihood inside the query integral is binomial. A tie counts
        half a win. A fraction from continuous annotator weights has no such count and
        does not belong here (:func:`fairjudge.winrate.win_rates` then uses the two-stage
        fit): a fractional response inside the integral understates each preference's
        information and biases psi toward zero.
    unit, query : array_like of int, shape (n,)
        Codes in ``range(n_units)`` and ``range(n_queries)``.
    tanh_delta : array_like, shape (n,)
        ``tanh`` of the factor differential of each preference.
    trials : array_like, shape (n,), optional
        Binary verdicts behind each preference (default 1).
    n_nodes : int
        Gauss-Hermite nodes per query integral.
    psi_prior_precision : float
        Precision of a N(0, 1/precision) prior on each psi (default sd 3.2 logits). A unit
        whose preferences follow a few queries' effects exactly (a Heywood case of factor
        models) otherwise drives psi to infinity.

    Returns
    -------
    MarginalFit
        Coefficients in logits, their covariance, and per-unit win rates as shares.
    """
    y, t = np.asarray(y, float), np.asarray(tanh_delta, float)
    unit, query = np.asarray(unit, np.int64), np.asarray(query, np.int64)
    objective = _Objective(y, unit, query, t, n_units, n_queries, n_nodes,
                           psi_prior_precision, trials)
    start = np.concatenate([np.zeros(2 * n_units), np.ones(n_units)])
    result = optimize.minimize(objective.value_and_gradient, start, jac=True,
                               hess=objective.hessian, method="trust-exact",
                               options={"gtol": 1e-8, "maxiter": 200})
    params, converged = _newton_polish(objective, result.x.copy())
    if params[2 * n_units:].sum() < 0:  # gamma -> -gamma: the same likelihood
        params[2 * n_units:] *= -1
    information = objective.hessian(params)
    try:
        np.linalg.cholesky(information)
        covariance = np.linalg.inv(information)
    except np.linalg.LinAlgError:
        covariance = np.full_like(information, np.nan)
        converged = False
    covariance = (covariance + covariance.T) / 2
    coef = params.reshape(3, n_units).T
    centred = objective.centred_scores(params)
    weights = objective.cell_weights(params)
    units = [_unit_rates(objective, params, covariance, centred, weights, m)
             for m in range(n_units)]
    gamma = objective.state(params)[1] @ objective.nodes
    return MarginalFit(coef, covariance, converged, units, gamma)


SECOND_ORDER_UNITS = 30


def _newton_polish(objective: _Objective, params, steps: int = 20):
    """Newton steps with step halving from the trust-region optimum, until the Newton
    decrement g' H^-1 g / 2 (the objective's predicted decrease, in log-likelihood units,
    whatever the data size) is below 1e-10. Older scipy's trust-region solver can stop a
    hair short of it ("a bad approximation"). Returns (params, converged)."""
    value, grad = objective.value_and_gradient(params)
    for _ in range(steps):
        try:
            step = np.linalg.solve(objective.hessian(params), grad)
        except np.linalg.LinAlgError:
            return params, False
        decrement = float(grad @ step) / 2
        if 0 <= decrement < 1e-10:
            return params, True
        if decrement < 0:  # not a descent direction: not at a minimum
            return params, False
        size = 1.0
        while size > 1e-8:
            candidate = params - size * step
            new_value, new_grad = objective.value_and_gradient(candidate)
            if new_value <= value + 1e-12 * max(1.0, abs(value)):
                break
            size /= 2
        else:
            return params, decrement < 1e-8
        params, value, grad = candidate, new_value, new_grad
    return params, False


def _unit_rates(objective: _Objective, params, covariance, centred, weights,
                m: int) -> UnitFit:
    """Unit m's raw, controlled and added win rates with standard errors.

    A rate is a sum over the unit's rows of a function of its coefficients and of the
    row's query effect, averaged over the query posterior. Its variance has two parts:
    how the estimated coefficients move it (the delta method to second order,
    ``J S J' + tr((H S)^2) / 2`` for coefficient covariance S, gradient J and Hessian H of
    the rate, exact for a quadratic rate of normal coefficients: the first-order term
    alone under-covered, 93.8% at the 95% level with 4 units of 100 queries), and the
    posterior variance of the query effects it averages over. The posterior moves with
    every unit's coefficients: ``d posterior = posterior * centred`` (``centred`` from
    :meth:`_Objective.centred_scores`). With more than ``SECOND_ORDER_UNITS`` units both
    terms keep only the unit's own coefficients (the others move its query posteriors
    little then; measured 1-2% of the standard error). ``weights`` is
    :meth:`_Objective.cell_weights` at ``params``, computed once for every unit.
    """
    mask = objective.unit == m
    n = int(mask.sum())
    y, query, t = objective.y[mask], objective.query[mask], objective.t[mask]
    z, u = objective.nodes, objective.n_units
    theta, phi, psi = objective.split(params)
    posterior = objective.state(params)[1]
    own = np.array([m, u + m, 2 * u + m])
    index = np.arange(3 * u) if u <= SECOND_ORDER_UNITS else own
    local = np.searchsorted(index, own)
    centred = centred[:, index, :]
    sigma = covariance[np.ix_(index, index)]

    def per_query(rows):
        """Rows' node values summed per query, over n: shape (Q, G) (leading axes kept)."""
        rows = np.asarray(rows)
        out = np.zeros((objective.n_queries, *rows.shape[1:]))
        np.add.at(out, query, rows / n)
        return out

    def moments(probability, slope_t):
        """A rate sum_rows E_posterior[probability] with its gradient and Hessian over the
        parameters in ``index``; ``slope_t`` is the differential's coefficient's regressor
        (t, or 0 for the controlled rate)."""
        design = np.stack([np.ones_like(probability),
                           np.broadcast_to(slope_t[:, None], probability.shape),
                           np.broadcast_to(z[None, :], probability.shape)], axis=1)
        slope = probability * (1 - probability)
        cells = per_query(probability)
        first = per_query(slope[:, None, :] * design)  # (Q, 3, G)
        second = per_query((slope * (1 - 2 * probability))[:, None, None, :]
                           * design[:, :, None, :] * design[:, None, :, :])
        value = float(np.sum(posterior * cells))
        cross = np.einsum("qg,qig,qkg->ik", posterior, first, centred)
        gradient = np.einsum("qg,qkg->k", posterior * cells, centred)
        gradient[local] += np.einsum("qg,qig->i", posterior, first)
        spread = posterior * (cells - np.sum(posterior * cells, axis=1, keepdims=True))
        hessian = np.einsum("qg,qkg,qlg->kl", spread, centred, centred)
        hessian[np.ix_(local, local)] += np.einsum("qg,qijg->ij", posterior, second)
        hessian[local, :] += cross
        hessian[:, local] += cross.T
        # Minus the information at each node, weighted by spread, on each unit's block.
        for unit in range(u):
            rows = np.array([unit, u + unit, 2 * u + unit])
            keep = np.isin(rows, index)
            if not keep.all():
                continue
            w0, w1, w2 = (np.sum(spread * weights[k, :, unit, :], axis=0) for k in range(3))
            block = np.array([[w0.sum(), w1.sum(), w0 @ z],
                              [w1.sum(), w2.sum(), w1 @ z],
                              [w0 @ z, w1 @ z, w0 @ z ** 2]])
            at = np.searchsorted(index, rows)
            hessian[np.ix_(at, at)] -= block
        return value, gradient, hessian, cells

    zero_probability = np.broadcast_to(special.expit(theta[m] + psi[m] * z), (n, len(z)))
    full_probability = special.expit(theta[m] + phi[m] * t[:, None] + psi[m] * z[None, :])
    controlled, grad_zero, hess_zero, cells_zero = moments(zero_probability, np.zeros(n))
    fitted, grad_full, hess_full, cells_full = moments(full_probability, t)
    bias, share = fitted - controlled, (fitted - controlled) / fitted
    grad_bias, hess_bias = grad_full - grad_zero, hess_full - hess_zero
    grad_share = (grad_bias * fitted - bias * grad_full) / fitted ** 2
    outer = np.outer(grad_bias, grad_full)
    hess_share = (hess_bias / fitted - (outer + outer.T) / fitted ** 2
                  - bias * hess_full / fitted ** 2
                  + 2 * bias * np.outer(grad_full, grad_full) / fitted ** 3)
    cells_bias = cells_full - cells_zero
    figures = ((cells_zero, grad_zero, hess_zero), (cells_bias, grad_bias, hess_bias),
               ((cells_bias * fitted - bias * cells_full) / fitted ** 2, grad_share,
                hess_share))
    errors = []
    for cells, grad, hess in figures:
        mean = np.sum(cells * posterior, axis=1, keepdims=True)
        query_variance = float(np.sum(posterior * (cells - mean) ** 2))
        curvature = hess @ sigma
        coefficient_variance = float(grad @ sigma @ grad) + 0.5 * float(
            np.trace(curvature @ curvature))
        errors.append(np.sqrt(max(coefficient_variance + query_variance, 0.0)))
    return UnitFit(params[own], covariance[np.ix_(own, own)], float(y.mean()),
                   float(y.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
                   controlled, errors[0], bias, errors[1], share, errors[2], n)

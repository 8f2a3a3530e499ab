"""Bias-aware Bradley–Terry with a reliability per judge: the model that lets judges of
different fidelity share one ranking [bias-aware-active-topk §7, future work].

Model, for a verdict of judge ``j`` on ``a`` shown before ``b``::

    P(a preferred) = sigmoid(tau_j (theta_a - theta_b) + sum_m c_{j,m} (x_{a,m} - x_{b,m})
                             + kappa_j),      tau_j = exp(u_j)

``tau_j`` is the judge's reliability, a temperature on the quality difference: a cheap,
noisy judge (small ``tau_j``) decides closer to a coin flip, so one of its verdicts carries
``tau_j**2`` times the Fisher information of a verdict of a judge with ``tau = 1`` about
``theta_a - theta_b``. The bias terms are those of :func:`~fairjudge.models.bias_aware_bt`,
per judge. Priors: ``theta ~ N(0, lambda^-1 I)``, ``c, kappa ~ N(0, lambda_b^-1)`` on
standardised covariates. ``theta`` and the ``tau``s could trade a common scale: the judge
with the most verdicts is the reference, ``tau = 1``, so ``theta`` is on its logit scale
as in the bias-aware model, and every other judge's ``u_j ~ N(0, lambda_u^-1)``: its
reliability *relative to the reference*, identified by the items the judges share (and,
for a judge whose items no other judge compares, only through the shared prior scale of
the qualities). (A
sum-to-zero constraint, as in the consensus model, would make a judge with few verdicts
the mirror image of one with many; relative to a reference, a judge with few verdicts
stays near its prior instead.) The likelihood of a verdict is the same whichever judge is
the reference; the estimates are nearly so while the data outweigh the priors (the
priors on theta and u are stated on the reference's scale). With one judge ``u = 0`` and
the model is exactly the bias-aware one.

The same model on contestant-level panels, with a self-preference covariate, is
:func:`fairjudge.consensus.reliability_bt`; this one takes :class:`Comparisons` and item
covariates like every estimator in :mod:`fairjudge.models`, so the active ranker can fit
it between acquisitions.

Estimation (:func:`reliability_bt`), with several judges: the reliabilities and the
qualities' prior precision ``lambda`` by marginal likelihood, the qualities and bias terms
integrated out by the Laplace approximation (empirical Bayes); then the posterior mode of
the qualities and bias terms at those values; the posterior of every parameter is the
conditional Laplace posterior widened by the reliabilities' marginal uncertainty. The
joint posterior mode of all of them is not used: it lets the prior, not the verdicts, set
the reliabilities when items have few verdicts each (:func:`_marginal_fit`).

Above 2000 items the fit is matrix-free, as the bias-aware one (``solver="auto"``, see
:func:`reliability_bt`): the Hessian's quality block is a weighted graph Laplacian here too,
so nothing N x N is formed.

Assumptions: a judge's noise is exchangeable across pairs (a verdict is a Bernoulli draw at
its temperature; pair-specific blind spots of a temperature-0 judge are treated as noise);
its biases are linear on the logit scale; judges are linked by sharing pairs or items, so
that their reliabilities are identified relative to each other.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, sparse
from scipy.special import expit

from fairjudge._util._memory import require_dense_memory
from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.models import _bt
from fairjudge.models._bt import (
    POSITION,
    SOLVERS,
    BiasEstimate,
    BTFit,
    _check_common,
    standardise_covariates,
    standardise_verdict_covariates,
)
from fairjudge.models._engine import Derivatives, NewtonResult, aggregate_pairs, backtrack
from fairjudge.models._graph import warn_if_disconnected
from fairjudge.models._registry import ModelSpec, register_model
from fairjudge.models._sparse import LaplacianSystem, SchurNewtonStep

#: Name of the reliability entries of :attr:`BTFit.reliability` (``u_j = log tau_j``).
LOG_RELIABILITY = "log_reliability"

#: Bounds of the marginal-likelihood search: ``log lambda`` (the prior scale of theta, a
#: nuisance there) and each ``u_j``. A bound reached means the data do not pin the value.
LOG_PRIOR_BOUNDS = (np.log(1e-4), np.log(1e4))
RELIABILITY_BOUNDS = (-8.0, 8.0)


class _Objective:
    """Negative log-posterior over ``[theta (N) | bias (J q) | u_1..u_{J-1}]``."""

    def __init__(self, comparisons: Comparisons, x_std: np.ndarray, *, position: bool,
                 prior_precision: float, bias_prior_precision: np.ndarray,
                 reliability_prior_precision: float):
        v_std, self.v_names, self.v_scale = standardise_verdict_covariates(comparisons)
        pairs = aggregate_pairs(comparisons, v_std)
        self.pairs = pairs
        self.n_items, self.n_judges = pairs.n_items, pairs.n_judges
        verdict_dx = (np.zeros((pairs.n.shape[0], 0)) if pairs.covariate_diff is None
                      else pairs.covariate_diff)
        dx = np.hstack([x_std[pairs.first] - x_std[pairs.second], verdict_dx])
        self.design = np.hstack([dx, np.ones((dx.shape[0], 1))]) if position else dx
        self.q = self.design.shape[1]
        self.n_bias = self.n_judges * self.q
        # The judge with the most verdicts is the reference (tau = 1: theta is on its logit
        # scale); every other judge with verdicts gets a free u; a judge without verdicts
        # keeps tau = 1, its prior mean.
        weight = np.bincount(pairs.judge, weights=pairs.n, minlength=self.n_judges)
        self.reference = int(np.argmax(weight))
        self.seen = np.flatnonzero(weight > 0)
        free = self.seen[self.seen != self.reference]
        self.n_u = free.size
        self.n_params = self.n_items + self.n_bias + self.n_u
        self.lam = float(prior_precision)
        self.lam_b = bias_prior_precision
        self.lam_u = float(reliability_prior_precision)
        self.u_map = np.zeros((self.n_judges, self.n_u))
        self.u_map[free, np.arange(self.n_u)] = 1.0
        rows = pairs.n.shape[0]
        self._rows = np.arange(rows)
        self._bias_cols = (self.n_items + pairs.judge[:, None] * self.q
                           + np.arange(self.q)[None, :])

    def unpack(self, beta):
        n, nb = self.n_items, self.n_bias
        theta = beta[:n]
        bias = beta[n:n + nb].reshape(self.n_judges, self.q)
        u = self.u_map @ beta[n + nb:]
        return theta, bias, u

    def _eta(self, beta):
        theta, bias, u = self.unpack(beta)
        p = self.pairs
        tau = np.exp(u)[p.judge]
        diff = theta[p.first] - theta[p.second]
        eta = tau * diff + np.einsum("rq,rq->r", self.design, bias[p.judge])
        return eta, tau, diff, u

    def value(self, beta) -> float:
        eta, _, _, u = self._eta(beta)
        return self._value(beta, eta, u)

    def _value(self, beta, eta, u) -> float:
        p = self.pairs
        nll = float(p.n @ np.logaddexp(0.0, eta) - p.wins @ eta)
        theta = beta[:self.n_items]
        b = beta[self.n_items:self.n_items + self.n_bias]
        return nll + 0.5 * (self.lam * theta @ theta + self.lam_b @ (b * b)
                            + self.lam_u * u @ u)

    def derivatives(self, beta):
        """Gradient (P,), the Gauss–Newton (expected-information) Hessian and the exact
        Hessian, both (P, P) with the priors."""
        eta, tau, diff, u = self._eta(beta)
        p, n, nb = self.pairs, self.n_items, self.n_bias
        prob = expit(eta)
        resid = p.n * prob - p.wins                      # d nll / d eta
        curv = p.n * prob * (1.0 - prob)                 # d^2 nll / d eta^2
        jac = self._jacobian(tau, diff)
        grad = jac.T @ resid
        gauss_newton = (jac.T @ jac.multiply(curv[:, None])).toarray()
        prior = np.concatenate([np.full(n, self.lam), self.lam_b])
        grad[:n + nb] += prior * beta[:n + nb]
        gauss_newton[np.arange(n + nb), np.arange(n + nb)] += prior
        if self.n_u:
            grad[n + nb:] += self.lam_u * self.u_map.T @ u
            gauss_newton[n + nb:, n + nb:] += self.lam_u * self.u_map.T @ self.u_map
        exact = gauss_newton.copy()
        if self.n_u:
            # resid * d^2 eta: d eta / d theta_first = tau_j, so d^2 eta / (d theta d u_j)
            # = +-tau_j, and d^2 eta / d u_j^2 = tau_j * diff.
            per_judge = np.zeros((n, self.n_judges))
            np.add.at(per_judge, (p.first, p.judge), resid * tau)
            np.add.at(per_judge, (p.second, p.judge), -resid * tau)
            cross = per_judge @ self.u_map                # (N, J-1)
            exact[:n, n + nb:] += cross
            exact[n + nb:, :n] += cross.T
            t = np.bincount(p.judge, resid * tau * diff, self.n_judges)
            exact[n + nb:, n + nb:] += self.u_map.T @ (t[:, None] * self.u_map)
        return grad, gauss_newton, exact

    def sparse_derivatives(self, beta, *, exact: bool) -> Derivatives:
        """The exact (or, ``exact=False``, the Gauss–Newton) Hessian in the blocks of the
        sparse solver (:mod:`fairjudge.models._sparse`), with the gradient and the value.

        Both Hessians share the quality block: the graph Laplacian whose edge weights are
        ``sum tau_j^2 n p (1 - p)`` over the edge's verdicts (``d eta / d theta = +-tau_j``
        and the second derivatives of ``eta`` in ``theta`` vanish), plus the prior. They
        differ in ``cross`` (B, N) and ``block`` (B, B) over the bias and reliability
        parameters (B of them), where the exact one adds the residual times
        ``d^2 eta / (d theta d u_j) = +-tau_j`` and ``d^2 eta / d u_j^2 = tau_j diff``.
        """
        eta, tau, diff, u = self._eta(beta)
        p, n, nb = self.pairs, self.n_items, self.n_bias
        prob = expit(eta)
        resid = p.n * prob - p.wins                      # d nll / d eta
        curv = p.n * prob * (1.0 - prob)                 # d^2 nll / d eta^2
        incidence, _ = p.signed_incidence()              # (N, R): +1 first, -1 second
        other = self._jacobian(tau, diff, items=False)   # (R, B)
        grad = np.empty(self.n_params)
        grad[:n] = incidence @ (resid * tau) + self.lam * beta[:n]
        grad[n:] = other.T @ resid
        grad[n:n + nb] += self.lam_b * beta[n:n + nb]
        lo, hi, edge = p.unordered_pairs()
        link = np.bincount(edge, weights=curv * tau * tau, minlength=lo.size)
        degree = (np.bincount(lo, weights=link, minlength=n)
                  + np.bincount(hi, weights=link, minlength=n) + self.lam)
        cross = np.asarray((incidence @ other.multiply((curv * tau)[:, None]).tocsc())
                           .todense()).T                 # (B, N)
        block = (other.T @ other.multiply(curv[:, None])).toarray()
        block[np.arange(nb), np.arange(nb)] += self.lam_b
        if self.n_u:
            grad[n + nb:] += self.lam_u * self.u_map.T @ u
            block[nb:, nb:] += self.lam_u * self.u_map.T @ self.u_map
            if exact:
                # resid tau at (first, judge), minus at (second, judge): (N, J).
                size, rt = n * self.n_judges, resid * tau
                per_judge = (np.bincount(p.first * self.n_judges + p.judge, rt, size)
                             - np.bincount(p.second * self.n_judges + p.judge, rt, size)
                             ).reshape(n, self.n_judges)
                cross[nb:] += (per_judge @ self.u_map).T
                t = np.bincount(p.judge, resid * tau * diff, self.n_judges)
                block[nb:, nb:] += self.u_map.T @ (t[:, None] * self.u_map)
        return Derivatives(value=self._value(beta, eta, u), grad=grad, link=link,
                           cross=cross, block=block, lo=lo, hi=hi, degree=degree)

    def _jacobian(self, tau, diff, *, items: bool = True):
        """``d eta / d params``, sparse (R, P); with ``items=False`` only the columns of the
        bias and reliability parameters, (R, P - N)."""
        p, r = self.pairs, self._rows
        n_rows = r.size
        offset = 0 if items else self.n_items
        rows = [np.repeat(r, self.q)]
        cols = [self._bias_cols.ravel() - offset]
        vals = [self.design.ravel()]
        if items:
            rows += [r, r]
            cols += [p.first, p.second]
            vals += [tau, -tau]
        if self.n_u:
            d_eta_du = self.u_map[p.judge] * (tau * diff)[:, None]   # (R, J-1)
            rows.append(np.repeat(r, self.n_u))
            cols.append(np.tile(self.n_items + self.n_bias - offset + np.arange(self.n_u),
                                n_rows))
            vals.append(d_eta_du.ravel())
        return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                         np.concatenate(cols))),
                                 shape=(n_rows, self.n_params - offset))


def reliability_bt(comparisons: Comparisons, covariates=None, *, covariate_names=None,
                   position: bool = True, prior_precision: float = 1.0,
                   bias_prior_precision=0.1, reliability_prior_precision: float = 1.0,
                   init=None, tol: float = 1e-8, max_iter: int = 200,
                   check_graph: bool = True, solver: str = "auto") -> BTFit:
    """Bias-aware Bradley–Terry with a reliability ``tau_j`` per judge (module docstring).

    With several judges the reliabilities ``u`` and the qualities' prior precision
    ``lambda`` maximise the Laplace approximation of the marginal likelihood (the qualities
    and bias terms integrated out; see :func:`_marginal_fit` for why not the joint mode,
    which inflates the reliabilities several-fold when items have few verdicts each). The
    qualities and bias terms are then their posterior mode at ``(u_hat, lambda_hat)``, by
    damped Newton steps. Their posterior is the conditional Laplace one plus the spread of
    their mode over ``u``'s marginal posterior, whose covariance is the inverse curvature
    of the marginal likelihood (the uncertainty of ``lambda`` included): the intervals of
    ``theta`` carry the reliabilities' uncertainty (with the sparse solver the covariance
    is not formed: marginal variances are estimated, and ``covariance`` is None). With one
    judge the model is the bias-aware one, fitted directly at ``prior_precision``.

    With few verdicts per item the estimate leans towards ``u = 0`` and its intervals are
    too narrow (a Laplace approximation of binary data): see :func:`_marginal_fit` for the
    measured bias and coverage. The search costs 30-60 conditional fits, with
    two judges: 0.2 s at 200 items, 7 s at 1500 with 10 verdicts per item (dense), 12 s
    at 3000 and 104 s at 20,000 with 20 per item (sparse, most of it in the log
    determinants). With one judge the model is the bias-aware one, fitted directly.

    Parameters
    ----------
    comparisons : Comparisons
        Verdicts of one or more judges.
    covariates : array_like, shape (N, d), optional
        Raw item covariates; standardised inside the model.
    covariate_names : sequence of str, optional
    position : bool
        Model a per-judge position term ``kappa_j``.
    prior_precision, bias_prior_precision : float
        ``lambda`` and ``lambda_b`` as in :func:`~fairjudge.models.bias_aware_bt`. With
        several judges ``lambda`` is estimated, starting from ``prior_precision``; the fit's
        ``prior_precision`` is the estimate.
    reliability_prior_precision : float
        ``lambda_u``: prior precision of each ``log tau_j`` (1: a judge's reliability is a
        priori within a factor e**2 of 1, 95%).
    init : ndarray, optional
        Warm start (a previous reliability fit's ``params``).
    solver : {"auto", "dense", "sparse"}
        Dense Cholesky algebra, exact; or the matrix-free solver of
        :func:`~fairjudge.models.bias_aware_bt` (:mod:`fairjudge.models._sparse`): Newton
        steps by conjugate gradients with the bias and reliability parameters eliminated by
        their Schur complement, and a posterior whose marginal variances are estimated by
        probing, with a stated error. Above 2000 items the marginal likelihood's
        ``log det`` of the quality block is estimated by stochastic Lanczos quadrature
        (:meth:`~fairjudge.models._sparse.LaplacianSystem.log_determinant`; its changes,
        which place the reliabilities, within about 0.1%). ``"auto"``: sparse above 2000
        items, where the dense algebra's (N + B)^2 matrices grow past a few hundred MB.

    Returns
    -------
    BTFit
        ``model == "reliability"``; ``reliability`` holds ``log tau_j`` per judge with
        verdicts (the reference's is 0 with standard error 0), with its standard error
        (:meth:`BTFit.judge_reliability` gives ``tau_j``; a judge without verdicts has
        ``tau = 1``); ``prior_precision`` is the ``lambda`` the fit used (estimated with
        several judges).

    Examples
    --------
    >>> from fairjudge.data import Comparisons
    >>> c = Comparisons.from_outcomes([0, 1, 2, 0, 1], [1, 2, 0, 2, 0], list("aaaab"),
    ...                               judge=[0, 0, 0, 1, 1], judges=["cheap", "strong"])
    >>> fit = reliability_bt(c)
    >>> sorted(fit.judge_reliability())
    ['cheap', 'strong']
    """
    _check_common(comparisons, prior_precision)
    if solver not in SOLVERS:
        raise FairjudgeInputError(f"`solver` must be one of {', '.join(SOLVERS)}; got {solver!r}")
    if solver == "auto":
        solver = "sparse" if comparisons.n_items > _bt.SPARSE_MIN_ITEMS else "dense"
    if not (np.isfinite(reliability_prior_precision) and reliability_prior_precision > 0):
        raise FairjudgeInputError("`reliability_prior_precision` must be positive; got "
                                  f"{reliability_prior_precision!r}")
    if check_graph:
        warn_if_disconnected(comparisons)
    x, names, scale = standardise_covariates(covariates, covariate_names, comparisons.n_items)
    q = x.shape[1] + len(comparisons.covariate_names) + int(position)
    lam_b = np.broadcast_to(np.asarray(bias_prior_precision, dtype=float),
                            (comparisons.n_judges * q,)).copy()
    if lam_b.size and not np.all(np.isfinite(lam_b) & (lam_b > 0)):
        raise FairjudgeInputError("`bias_prior_precision` must be positive; got "
                                  f"{bias_prior_precision}")
    objective = _Objective(comparisons, x, position=position, prior_precision=prior_precision,
                           bias_prior_precision=lam_b,
                           reliability_prior_precision=reliability_prior_precision)
    if solver == "dense":
        # Gradient-side Hessians (exact, Gauss-Newton), a factor, the identity, the inverse
        # and its symmetrised copy.
        require_dense_memory(objective.n_params, 6,
                             what="the reliability model with the dense solver",
                             instead=_bt.USE_SPARSE)
    beta = _start(objective, comparisons, x, names, position, prior_precision, lam_b, init,
                  solver)
    posterior = covariance = None
    if objective.n_u:
        # Several judges: the reliabilities by marginal likelihood (see _marginal_fit).
        mode_at = (_SparseMode if solver == "sparse" else _DenseMode)(objective, tol, max_iter)
        beta, search, converged, notes = _marginal_fit(objective, beta, mode_at, max_iter)
        u_precision = _marginal_u_precision(search.hessian)
        if solver == "sparse":
            posterior, grad = _sparse_posterior(objective, beta, u_precision)
            notes = (f"sparse solver: {mode_at.stepper.cg_iterations} conjugate-gradient "
                     "iterations",) + notes
        else:
            covariance, grad = _marginal_covariance(objective, beta, u_precision)
        prior_precision = objective.lam  # estimated (see _marginal_fit)
        # The gradient in (theta, bias) is zero at the conditional mode; in u it is not (u
        # is the marginal's mode, not the joint one).
        n_iter, largest = search.n_iter, float(np.max(np.abs(grad[:objective.n_items
                                                               + objective.n_bias])))
    elif solver == "sparse":
        result = _sparse_newton(objective, beta, tol, max_iter)
        beta, posterior, n_iter, converged = (result.beta, result.posterior, result.n_iter,
                                              result.converged)
        largest, notes = result.max_abs_gradient, (result.sparse_note,)
    else:
        beta, covariance, n_iter, converged, largest = _newton(objective, beta, tol, max_iter)
        notes = ()
    if not converged:
        warnings.warn(f"the reliability model did not converge in {max_iter} Newton steps "
                      f"(largest gradient {largest:.2e})", ConvergenceWarning, stacklevel=2)
    names = tuple(names) + objective.v_names
    scale = np.concatenate([scale, objective.v_scale])
    return _as_fit(objective, comparisons, beta, covariance, names, scale, position,
                   prior_precision, lam_b, n_iter, converged, posterior, notes)


def _start(objective, comparisons, x, names, position, prior_precision, lam_b, init,
           solver):
    if init is not None and np.shape(init) == (objective.n_params,):
        # The reliabilities start where ``init`` left them, a start only: if the reference
        # (the judge with the most verdicts) has changed since, the damped search of
        # _marginal_fit gets there from a worse start. (A refit of the active ranker, with
        # a few more verdicts, then needs a step or two for them.)
        return np.array(init, dtype=float)
    # The bias-aware mode is the reliability model's mode at u = 0: a close start.
    start = _bt.fit_penalised_bt(comparisons, x, names, np.ones(x.shape[1]), model="bias-aware",
                             position=position, prior_precision=prior_precision,
                             bias_prior_precision=lam_b, check_graph=False,
                             solver=solver).params
    return np.concatenate([start, np.zeros(objective.n_u)])


def _newton(objective, beta, tol, max_iter):
    value = objective.value(beta)
    grad, gauss_newton, exact = objective.derivatives(beta)
    converged, n_iter = False, 0
    for n_iter in range(1, max_iter + 1):
        try:
            factor = linalg.cho_factor(exact, lower=True, check_finite=False)
        except linalg.LinAlgError:
            factor = linalg.cho_factor(gauss_newton, lower=True, check_finite=False)
        step = linalg.cho_solve(factor, grad, check_finite=False)
        decrement = float(grad @ step)
        # Converged: a step below `tol`, or a Newton decrement at rounding level (a flat
        # direction of the bilinear likelihood can keep steps above `tol` that change
        # nothing).
        if np.max(np.abs(step)) < tol or abs(decrement) < 1e-14 * max(1.0, abs(value)):
            beta = beta - step
            converged = True
            break
        if decrement <= 0:  # not a descent direction: fall back to Gauss–Newton
            step = linalg.cho_solve(linalg.cho_factor(gauss_newton, lower=True), grad)
            decrement = float(grad @ step)
        t, candidate = backtrack(objective.value, beta, step, value, decrement)
        beta, value = beta - t * step, candidate
        grad, gauss_newton, exact = objective.derivatives(beta)
    covariance, grad = _laplace_covariance(objective, beta)
    return beta, covariance, n_iter, converged, float(np.max(np.abs(grad)))


def _laplace_covariance(objective, beta):
    """The inverse exact Hessian at ``beta`` (the Gauss–Newton one where the exact one is
    not positive definite), (P, P), and the gradient there."""
    grad, gauss_newton, exact = objective.derivatives(beta)
    try:
        covariance = linalg.cho_solve(linalg.cho_factor(exact, lower=True),
                                      np.eye(objective.n_params))
    except linalg.LinAlgError:
        covariance = linalg.cho_solve(linalg.cho_factor(gauss_newton, lower=True),
                                      np.eye(objective.n_params))
    return (covariance + covariance.T) / 2, grad


class _DenseMode:
    """The mode of the qualities and bias terms with the reliabilities held at a start's,
    by damped Newton steps on dense algebra, and ``log det`` of the Hessian there.

    With ``u`` fixed, ``eta`` is linear in ``(theta, bias)``, so the Hessian in them is the
    Gauss–Newton one: positive definite (the priors) and exact.
    """

    def __init__(self, objective, tol, max_iter):
        self.objective, self.tol, self.max_iter = objective, tol, max_iter
        self.size = objective.n_items + objective.n_bias

    def _factor(self, beta):
        grad, gauss_newton, _ = self.objective.derivatives(beta)
        m = self.size
        return grad[:m], linalg.cho_factor(gauss_newton[:m, :m], lower=True,
                                           check_finite=False)

    def __call__(self, start, *, log_det=True):
        """``(mode, log det H there or None, converged)`` from ``start`` (P,)."""
        beta, m = start.copy(), self.size
        value = self.objective.value(beta)
        converged = False
        for _ in range(self.max_iter):
            grad, factor = self._factor(beta)
            step = np.zeros_like(beta)
            step[:m] = linalg.cho_solve(factor, grad, check_finite=False)
            decrement = float(grad @ step[:m])
            if np.max(np.abs(step)) < self.tol or decrement < 1e-14 * max(1.0, abs(value)):
                beta -= step
                converged = True
                break
            t, value = backtrack(self.objective.value, beta, step, value, decrement)
            beta -= t * step
        if not log_det:
            return beta, None, converged
        factor = self._factor(beta)[1][0]
        return beta, 2.0 * float(np.sum(np.log(np.diag(factor)))), converged


class _SparseMode:
    """:class:`_DenseMode` with matrix-free Newton steps (:class:`SchurNewtonStep` over the
    bias terms) and ``log det H = log det A + log det S`` (the quality block, exact up to
    2000 items and by stochastic Lanczos quadrature above, see
    :meth:`LaplacianSystem.log_determinant`; ``S`` the bias terms' Schur complement)."""

    def __init__(self, objective, tol, max_iter):
        self.objective, self.tol, self.max_iter = objective, tol, max_iter
        lo, hi, _ = objective.pairs.unordered_pairs()
        self.system = LaplacianSystem(objective.n_items, lo, hi, objective.lam)
        self.stepper = SchurNewtonStep(self.system)
        self.size = objective.n_items + objective.n_bias

    def _derivatives(self, beta):
        """The derivatives in ``(theta, bias)`` only (the reliabilities are held)."""
        d, nb = self.objective.sparse_derivatives(beta, exact=False), self.objective.n_bias
        return replace(d, grad=d.grad[:self.size], cross=d.cross[:nb], block=d.block[:nb, :nb])

    def __call__(self, start, *, log_det=True):
        beta, m = start.copy(), self.size
        # A^{-1} 1_C = 1_C / lambda: the system's level follows the lambda being tried.
        self.system.prior_precision = self.objective.lam
        d = self._derivatives(beta)
        converged = False
        for _ in range(self.max_iter):
            if np.max(np.abs(d.grad)) <= 1e-13 * max(1.0, abs(d.value)):
                converged = True  # at rounding level: no CG solve can improve it
                break
            step = np.zeros_like(beta)
            step[:m] = self.stepper(d, gradient_rtol=1e-8)
            decrement = float(d.grad @ step[:m])
            if np.max(np.abs(step)) < self.tol or decrement < 1e-14 * max(1.0, abs(d.value)):
                beta -= step
                converged = True
                d = None  # no longer at beta
                break
            t = backtrack(self.objective.value, beta, step, d.value, decrement)[0]
            beta -= t * step
            d = self._derivatives(beta)
        if not log_det:
            return beta, None, converged
        if d is None:
            d = self._derivatives(beta)
        self.system.set_weights(d.link, d.degree)
        log_det = self.system.log_determinant()
        if d.cross.size:
            # S = D - C A^{-1} C^T, solved tighter than a Newton step needs: the search
            # differentiates log det S numerically. (Where CG cannot get there, the
            # solution it reached is the best at hand; the step's solve has warned.)
            solution, _ = self.system.solve(d.cross.T, rtol=1e-12,
                                            x0=self.stepper.cross_solution)
            schur = d.block - d.cross @ solution
            log_det += float(np.linalg.slogdet(0.5 * (schur + schur.T))[1])
        return beta, log_det, converged


@dataclass(frozen=True)
class _Search:
    """Where :func:`_newton_on_differences` stopped: the point, ``f`` there, the
    finite-difference Hessian of its last step (d, d), the steps and whether it converged."""

    x: np.ndarray
    value: float
    hessian: np.ndarray
    n_iter: int
    converged: bool


def _newton_on_differences(f, x, lo, hi, *, max_iter=100, h=1e-4, tol=1e-7,
                           max_step=2.0) -> _Search:
    """Minimise a smooth ``f`` of a few arguments within the box ``[lo, hi]`` by Newton
    steps on its finite-difference gradient and Hessian.

    Each step costs ``1 + 2d + d(d-1)/2`` values of ``f`` (central differences for the
    gradient and the Hessian's diagonal, one more value per off-diagonal pair), and Newton
    converges quadratically, so few steps are needed. ``h`` trades the differences'
    truncation error (``h^2`` times the third derivative) against the rounding in ``f``
    divided by ``h`` (``h^2`` for the Hessian); with ``f`` exact to 1e-10, both stay below
    1e-6 of the reliability model's curvature. Where the Hessian of the free arguments is
    not positive definite (far from the minimum) the step is damped (Levenberg); no
    argument moves by more than ``max_step`` at once (a trust region: the model's far
    corners are costly to evaluate and never the answer); a step that does not lower ``f``
    is halved. An argument at a bound whose gradient points out of the box is held there.
    Converged when the Newton step moves no argument by ``tol`` or more (or, at ``f``'s
    rounding level, by ``100 tol``, and no shorter step lowers ``f``); not converged when a
    longer step cannot lower ``f``, when ``f`` is not finite around the point, or after
    ``max_iter`` steps.
    """
    d = x.size
    x = np.array(x, dtype=float)
    value = f(x)
    hessian = np.full((d, d), np.nan)
    for n_iter in range(1, max_iter + 1):
        plus, minus = np.empty(d), np.empty(d)
        for k in range(d):
            e = np.zeros(d)
            e[k] = h
            plus[k], minus[k] = f(x + e), f(x - e)
        hessian = np.diag((plus - 2 * value + minus) / h ** 2)
        for i in range(d):
            for j in range(i + 1, d):
                e = np.zeros(d)
                e[[i, j]] = h
                hessian[i, j] = hessian[j, i] = (f(x + e) - plus[i] - plus[j] + value) / h ** 2
        grad = (plus - minus) / (2 * h)
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hessian))):
            return _Search(x, value, hessian, n_iter, False)
        free = ~(((x <= lo) & (grad > 0)) | ((x >= hi) & (grad < 0)))
        step = np.zeros(d)
        if free.any():
            block = hessian[np.ix_(free, free)]
            damping = 0.0
            scale = max(float(np.max(np.abs(np.diag(block)))), 1e-8)
            while True:
                try:
                    factor = linalg.cho_factor(block + damping * np.eye(block.shape[0]))
                    break
                except linalg.LinAlgError:
                    damping = max(2 * damping, 1e-3 * scale)
            step[free] = -linalg.cho_solve(factor, grad[free])
        step *= min(1.0, max_step / max(float(np.max(np.abs(step))), 1e-300))
        full = float(np.max(np.abs(np.clip(x + step, lo, hi) - x)))
        t = 1.0
        while True:
            candidate = np.clip(x + t * step, lo, hi)
            moved = float(np.max(np.abs(candidate - x)))
            if moved < tol:
                # A Newton step below tol: converged. One that cannot lower f is converged
                # only if it was short anyway (f's rounding, at the minimum).
                return _Search(candidate if t == 1.0 else x, value, hessian, n_iter,
                               t == 1.0 or full < 100 * tol)
            candidate_value = f(candidate)
            if np.isfinite(candidate_value) and candidate_value < value:
                x, value = candidate, candidate_value
                break
            t *= 0.5
    return _Search(x, value, hessian, max_iter, False)


def _marginal_fit(objective, beta, mode_at, max_iter):
    """The reliabilities ``u`` by marginal likelihood, then the qualities' and bias terms'
    mode at them [bias-aware-active-topk §7, future work]: ``(beta, the search's
    :class:`_Search`, converged, notes)``.

    Why not the joint mode: ``tau_j theta`` leaves the scale of ``theta`` to its prior,
    and every item's prior term shrinks as ``theta`` shrinks while only one ``u_j`` pays for
    the growing ``tau_j``. With few verdicts per item the joint mode therefore trades the
    N quality terms against the one reliability term, not against the data: on 200 items
    with 20 verdicts each of a ``tau = 0.4`` judge and 5 of a ``tau = 1.5`` one, the joint
    mode put ``log tau`` at 4.3 +- 0.5 against a true 1.32 (``benchmarks/bench_reliability.py``).
    This is the incidental-parameter problem of a variance or scale estimated jointly with
    the effects it scales.

    Instead ``(u, log lambda)`` maximise the Laplace approximation of the marginal
    likelihood, the qualities and bias terms integrated out (empirical Bayes, type-II
    maximum likelihood)::

        -log p(y | u, lambda) ~ Phi(beta_hat) + 1/2 log det H(beta_hat) - N/2 log lambda

    with ``Phi`` the negative log-posterior (its ``u`` prior included, so ``u`` is a
    posterior mode of the marginal), ``beta_hat`` its conditional mode at ``(u, lambda)``
    and ``H`` its Hessian in ``(theta, bias)``. The quality prior's precision ``lambda`` is
    estimated with them as a nuisance: held at its set value, the prior scale of ``theta``
    would stand in for the reference judge's scale and pull ``u`` towards it (to 0.1-1.0
    against 1.32 in the same trials). The fit returned is the conditional mode at
    ``(u_hat, lambda_hat)`` (under the set ``lambda`` the reliabilities would not fit the
    scores: a separable reference judge drives ``lambda_hat`` small). Its covariance is the
    conditional one plus the spread of the mode over ``u``'s marginal posterior, whose
    covariance is the inverse finite-difference Hessian of the function above, ``lambda``
    integrated (:func:`_with_marginal_u`).

    Assumptions: ``theta`` a priori exchangeable normal; the Laplace approximation of the
    integral. With few binary verdicts per item it leans ``u`` towards 0 and its intervals
    are too narrow (``python benchmarks/bench_reliability.py --seeds 20``, true 1.32, 20
    pools per row): 1.29 +- 0.12 with standard error 0.10 and 80% coverage of the 95%
    interval at 40 + 10 verdicts per item (cheap + strong) on 200 items; 1.28 +- 0.18 (se
    0.16, 95%) at 20 + 5; on 1000 items 1.17 +- 0.07 (se 0.10, 80%) at 10 + 4, 0.99 +- 0.13
    (se 0.17, 50%) at 5 + 2 and 0.86 +- 0.20 (se 0.24, 45%) at 5 + 1. The joint mode gave
    1.83, 4.33, 6.16, 5.55 and 4.79 there, with 0-10% coverage.

    The search is Newton's method on finite differences of that function over its
    ``1 + (J - 1)`` arguments (:func:`_newton_on_differences`), each value a warm-started
    conditional fit by ``mode_at`` (:class:`_DenseMode` or :class:`_SparseMode`, which also
    gives ``log det H``).
    """
    n_u, m = objective.n_u, objective.n_items + objective.n_bias
    set_lam, half_items = objective.lam, 0.5 * objective.n_items
    state = {"beta": beta.copy()}

    def negative_log_marginal(z):
        objective.lam = float(np.exp(z[0]))
        start = state["beta"].copy()
        start[m:] = z[1:]
        mode, log_det, _ = mode_at(start)
        state["beta"] = mode
        return objective.value(mode) + 0.5 * log_det - half_items * z[0]

    z0 = np.concatenate([[np.log(set_lam)], beta[m:]])
    # (The set lambda stays inside the bounds, whatever it is.)
    lo = np.array([min(LOG_PRIOR_BOUNDS[0], z0[0]), *[RELIABILITY_BOUNDS[0]] * n_u])
    hi = np.array([max(LOG_PRIOR_BOUNDS[1], z0[0]), *[RELIABILITY_BOUNDS[1]] * n_u])
    try:
        with warnings.catch_warnings():
            # Trial points far out can stall conjugate gradients; the fit at the point
            # found says so if it does there.
            warnings.simplefilter("ignore", ConvergenceWarning)
            search = _newton_on_differences(negative_log_marginal, np.clip(z0, lo, hi), lo, hi,
                                            max_iter=max_iter)
    except BaseException:
        objective.lam = set_lam
        raise
    # The fit is the conditional mode at (u_hat, lambda_hat): the reliabilities were
    # estimated on that prior scale, and under another one they would not fit the scores.
    objective.lam = float(np.exp(search.x[0]))
    start = state["beta"].copy()
    start[m:] = search.x[1:]
    beta, _, inner_converged = mode_at(start, log_det=False)
    notes = [f"reliabilities by marginal likelihood (Laplace; {search.n_iter} Newton steps); "
             f"quality prior estimated with them: precision {objective.lam:.3g}, sd "
             f"{objective.lam ** -0.5:.3g} on the reference judge's logit scale"]
    u_hat = search.x[1:]
    pinned = np.isclose(u_hat, RELIABILITY_BOUNDS[0]) | np.isclose(u_hat, RELIABILITY_BOUNDS[1])
    if pinned.any():
        notes.append(f"{int(pinned.sum())} reliabilities reached a bound of the search, "
                     f"tau = exp(+-{RELIABILITY_BOUNDS[1]:g}): the verdicts do not pin them")
    if np.isclose(search.x[0], lo[0]) or np.isclose(search.x[0], hi[0]):
        notes.append("the quality prior's precision reached a bound of the search "
                     f"({np.exp(lo[0]):g} to {np.exp(hi[0]):g}): the verdicts do not pin "
                     "the scale of the qualities")
    return beta, search, search.converged and inner_converged, tuple(notes)


def _marginal_u_precision(hessian: np.ndarray) -> np.ndarray:
    """The precision of ``u`` (J-1, J-1) from the Hessian of the negative log marginal
    likelihood over ``(log lambda, u)``: the inverse of the ``u`` block of its inverse, so
    that the uncertainty of the prior scale counts. Eigenvalues are floored (a flat
    direction, as at a bound of the search, gives a wide but finite variance)."""
    values, vectors = np.linalg.eigh(0.5 * (hessian + hessian.T))
    floor = 1e-8 * max(float(np.max(np.abs(values))), 1.0)
    covariance = (vectors / np.maximum(values, floor)) @ vectors.T
    return np.linalg.inv(covariance[1:, 1:])


def _with_marginal_u(matrix: np.ndarray, n_u: int, precision: np.ndarray) -> np.ndarray:
    """``matrix`` (a Hessian or a Schur complement whose last ``n_u`` rows and columns are
    the reliabilities) with its ``u-u`` block changed so that the ``u`` block of its
    inverse is ``precision^-1``.

    The rest of the inverse then follows: ``cov(beta) = H_bb^-1 + J Sigma_u J^T`` and
    ``cov(beta, u) = J Sigma_u`` with ``J = -H_bb^-1 H_bu = d beta_hat / d u``, the
    conditional posterior plus the spread of its mode over ``u``'s marginal posterior (Kass
    & Steffey 1989). At ``u_hat`` the joint Hessian's own ``u`` block belongs to no mode
    (``u_hat`` maximises the marginal, not the joint density) and can even be indefinite.
    """
    rest, cross = matrix[:-n_u, :-n_u], matrix[:-n_u, -n_u:]
    own = matrix[-n_u:, -n_u:] - cross.T @ linalg.solve(rest, cross, assume_a="pos")
    out = matrix.copy()
    out[-n_u:, -n_u:] += precision - 0.5 * (own + own.T)
    return out


def _marginal_covariance(objective, beta, u_precision):
    """The dense posterior covariance (P, P) at ``beta`` with ``u``'s from the marginal
    likelihood (:func:`_with_marginal_u`), and the gradient there."""
    grad, _, exact = objective.derivatives(beta)
    hessian = _with_marginal_u(exact, objective.n_u, u_precision)
    covariance = linalg.cho_solve(linalg.cho_factor(hessian, lower=True),
                                  np.eye(objective.n_params))
    return (covariance + covariance.T) / 2, grad


def _sparse_posterior(objective, beta, u_precision):
    """:func:`_marginal_covariance` by the sparse solver: the Laplace posterior at ``beta``
    (every parameter), its Schur complement's ``u`` block from the marginal likelihood; and
    the gradient there."""
    lo, hi, _ = objective.pairs.unordered_pairs()
    stepper = SchurNewtonStep(LaplacianSystem(objective.n_items, lo, hi, objective.lam))
    d = objective.sparse_derivatives(beta, exact=True)
    try:
        stepper(d, gradient_rtol=1e-2)
    except linalg.LinAlgError:
        pass  # the Schur complement is kept before its (unneeded) step is solved
    stepper.schur = _with_marginal_u(stepper.schur, objective.n_u, u_precision)
    return stepper.posterior(), d.grad


def _sparse_newton(objective, beta, tol, max_iter) -> NewtonResult:
    """:func:`_newton` with matrix-free steps (:class:`SchurNewtonStep`), as the bias-aware
    sparse fit (:meth:`PenalisedBT.newton`): the exact Hessian where its Schur complement
    over the bias and reliability parameters is positive definite and its step descends,
    the Gauss–Newton one elsewhere (far from the mode). The posterior is the stepper's at
    the mode: the exact Hessian's unless the last step needed the Gauss–Newton one."""
    lo, hi, _ = objective.pairs.unordered_pairs()
    stepper = SchurNewtonStep(LaplacianSystem(objective.n_items, lo, hi, objective.lam))

    def step_at(beta, d, rtol):
        """The step from ``d`` (exact derivatives at ``beta``), or from the Gauss–Newton
        ones where the exact Schur complement fails or the step would not descend."""
        try:
            step = stepper(d, gradient_rtol=rtol)
            if float(d.grad @ step) > 0:
                return d, step
        except linalg.LinAlgError:
            pass
        d = objective.sparse_derivatives(beta, exact=False)
        return d, stepper(d, gradient_rtol=rtol)

    d = objective.sparse_derivatives(beta, exact=True)
    first_gradient = max(float(np.max(np.abs(d.grad))), 1e-300)
    converged, n_iter = False, 0
    for n_iter in range(1, max_iter + 1):
        # Inexact Newton (Eisenstat–Walker): solve loosely while far from the mode.
        forcing = min(1e-2, float(np.max(np.abs(d.grad))) / first_gradient)
        d, step = step_at(beta, d, max(forcing, 1e-12))
        decrement = float(d.grad @ step)
        if np.max(np.abs(step)) < tol or abs(decrement) < 1e-14 * max(1.0, abs(d.value)):
            beta = beta - step
            converged = True
            break
        t = backtrack(objective.value, beta, step, d.value, decrement)[0]
        beta = beta - t * step
        d = objective.sparse_derivatives(beta, exact=True)
    if not converged:
        d = step_at(beta, d, 1e-2)[0]  # the posterior at `beta`, whose `d` is at hand
    # On convergence the stepper's last system belongs to a point less than `tol` away.
    return NewtonResult(beta, None, d.value, n_iter, converged, float(np.max(np.abs(d.grad))),
                        posterior=stepper.posterior(), cg_iterations=stepper.cg_iterations)


def _as_fit(objective, comparisons, beta, covariance, names, scale, position,
            prior_precision, lam_b, n_iter, converged, posterior=None,
            notes=()) -> BTFit:
    n, q, nb = objective.n_items, objective.q, objective.n_bias
    # The bias and reliability parameters' covariance, (B, B).
    other = posterior.bias_covariance() if posterior is not None else covariance[n:, n:]
    se = np.sqrt(np.clip(np.diag(other), 0.0, None))
    per_judge = np.bincount(comparisons.judge, minlength=comparisons.n_judges)
    bias = []
    for j, judge in enumerate(comparisons.judges):
        base = j * q
        for m, name in enumerate(names):
            bias.append(BiasEstimate(name, judge, float(beta[n + base + m] / scale[m]),
                                     float(se[base + m] / scale[m]), int(per_judge[j])))
        if position:
            bias.append(BiasEstimate(POSITION, judge, float(beta[n + base + q - 1]),
                                     float(se[base + q - 1]), int(per_judge[j])))
    u = objective.u_map @ beta[n + nb:]
    u_cov = objective.u_map @ other[nb:, nb:] @ objective.u_map.T
    u_se = np.sqrt(np.clip(np.diag(u_cov), 0.0, None))
    reliability = tuple(BiasEstimate(LOG_RELIABILITY, comparisons.judges[j], float(u[j]),
                                     float(u_se[j]), int(per_judge[j]))
                        for j in objective.seen)
    return BTFit(
        model="reliability", item_ids=comparisons.item_ids, scores=beta[:n].copy(),
        covariance=None if covariance is None else covariance[:n, :n].copy(),
        bias=tuple(bias), judges=comparisons.judges,
        covariate_names=names, params=beta, param_covariance=covariance,
        covariate_scale=scale, prior_precision=float(prior_precision),
        bias_prior_precision=lam_b, n_comparisons=float(comparisons.weight.sum()),
        n_iter=n_iter, converged=converged, notes=notes, reliability=reliability,
        posterior=posterior)


register_model(ModelSpec(
    "reliability", "bias-aware Bradley–Terry with a reliability (temperature) per judge",
    reliability_bt, covariates="optional", position=True, bias_prior=True, warm_start=True,
    solver=True))
